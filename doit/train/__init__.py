"""Training utilities for doit: chat templates (`chat`), optimiser parameter groups (`optim`),
and the SFT recipe's library (`args`, `launch`, `data`, `model`, `trainer`, `callbacks`, `run`;
``recipes/sft.py`` is its command)."""

import logging

# bitsandbytes, which peft and transformers' Trainer import when it is installed, logs "Failed to
# load CPU gemm_4bit_forward from kernels-community" at import on CPUs with AVX512-BF16 when the
# optional `kernels` hub package is absent. It then uses its own CPU kernel, and doit never
# downloads kernels, so that line would only be noise on every start: drop that one record.
logging.getLogger("bitsandbytes.backends.cpu.ops").addFilter(
    lambda record: "gemm_4bit_forward from kernels-community" not in record.getMessage()
)
