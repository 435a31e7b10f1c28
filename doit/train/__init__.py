"""Training for doit: fine-tuning as a library call (`sft.run`, over `args`, `launch`, `data`,
`model`, `trainer`, `callbacks`), pretraining (`pretrain.run`), the micro ladder (`ladder`), the
run directory they share (`rundir`), chat templates (`chat`) and optimiser groups (`optim`).
``recipes/sft.py``, ``recipes/pretrain.py`` and ``doit sft|pretrain|ladder`` are the commands."""

import logging

# bitsandbytes, which peft and transformers' Trainer import when it is installed, logs "Failed to
# load CPU gemm_4bit_forward from kernels-community" at import on CPUs with AVX512-BF16 when the
# optional `kernels` hub package is absent. It then uses its own CPU kernel, and doit never
# downloads kernels, so that line would only be noise on every start: drop that one record.
logging.getLogger("bitsandbytes.backends.cpu.ops").addFilter(
    lambda record: "gemm_4bit_forward from kernels-community" not in record.getMessage()
)
