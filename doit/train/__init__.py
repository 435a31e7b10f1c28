"""Training utilities for doit: chat templates (`chat`), optimiser parameter groups (`optim`),
and the SFT recipe's library (`args`, `launch`, `data`, `model`, `trainer`, `callbacks`, `run`;
``recipes/sft.py`` is its command)."""
