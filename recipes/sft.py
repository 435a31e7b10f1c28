"""Supervised fine-tuning of a base model on DoIT data (the study's recipe), over TRL's SFTTrainer.

# The study's 7B cell: 64 items per ability, full fine-tuning, ZeRO-2, 8 GPUs
```bash
deepspeed --num_gpus 8 recipes/sft.py \
    --config recipes/configs/sft/chinese-llama-plus-7b/full.yaml \
    --model_name_or_path /models/chinese-llama-plus-7b \
    --doit_dir /data/doit --per_ability 64 \
    --output_dir runs/sft/7b-full/n0064
```

# A mix, or an existing subset/mix cell
```bash
deepspeed --num_gpus 8 recipes/sft.py --config recipes/configs/sft/chinese-llama-plus-7b/full.yaml \
    --model_name_or_path /models/chinese-llama-plus-7b \
    --doit_dir /data/doit --mix recipes/mixes/reconstruct.yaml \
    --output_dir runs/sft/7b-full/reconstruct
deepspeed --num_gpus 8 recipes/sft.py --config recipes/configs/sft/chinese-llama-plus-7b/full.yaml \
    --model_name_or_path /models/chinese-llama-plus-7b \
    --subset_dir data/subsets/n0256 --output_dir runs/sft/7b-full/n0256
```

# LoRA on one GPU, or a micro base on CPU (two ranks, or one process); `make ladder` pretrains
# the micro bases into runs/ladder/<arch>_<size>/seed<k>/ (model and tokenizer)
```bash
python recipes/sft.py --config recipes/configs/sft/chinese-llama-plus-7b/lora.yaml \
    --model_name_or_path /models/chinese-llama-plus-7b --doit_dir /data/doit --per_ability 64 \
    --output_dir runs/sft/7b-lora/n0064
torchrun --nproc_per_node 2 recipes/sft.py --config recipes/configs/sft/micro/full.yaml \
    --model_name_or_path runs/ladder/vanilla_l/seed0 --doit_dir data/generated/micro \
    --per_ability 16 --output_dir runs/sft/micro/n0016
python recipes/sft.py --config recipes/configs/sft/micro/full.yaml \
    --model_name_or_path runs/ladder/vanilla_l/seed0 --doit_dir data/generated/micro \
    --per_ability 16 --output_dir runs/sft/micro/n0016
```

Any key of the YAML can be overridden with ``--key value``. Rerunning a command resumes from
its last checkpoint; a finished run (``DONE`` in output_dir) is not redone. Multi-node Slurm
launches: recipes/README.md. The library call behind it is `doit.train.sft.run`.
"""

from doit.train.launch import exit_process
from doit.train.sft import main

if __name__ == "__main__":
    exit_process(main())
