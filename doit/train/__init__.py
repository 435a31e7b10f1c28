"""Training for doit: two packages of one shape, fine-tuning (`sft`) and pretraining
(`pretrain`), each ``run(parse_args(argv)) -> RunResult`` with its `args`, `model` and `trainer`
modules, over what they share: the launchers (`launch`), the run directory (`rundir`),
optimiser groups (`optim`) and the one error type (`errors.ConfigError`).
``recipes/sft.py``, ``recipes/pretrain.py`` and ``doit sft|pretrain`` are the commands."""

import logging

# bitsandbytes (imported for QLoRA, and by some peft and transformers versions with the Trainer
# whenever it is installed) logs "Failed to load CPU gemm_4bit_forward from kernels-community" at
# import on CPUs with AVX512-BF16 when the hub's kernel cannot be loaded (the `kernels` package
# absent, or offline). It then uses its own CPU kernel, and doit never downloads kernels, so that
# line would only be noise on a start: drop that one record.
logging.getLogger("bitsandbytes.backends.cpu.ops").addFilter(
    lambda record: "gemm_4bit_forward from kernels-community" not in record.getMessage()
)
