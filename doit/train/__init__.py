"""Training utilities for doit: chat templates (`chat`), optimiser parameter groups (`optim`)."""
