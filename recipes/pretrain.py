"""Pretrain a Llama / ResFormer / SVFormer base from scratch (the value-residual micro ladder).

# One base of the micro ladder on CPU (build the corpus first): a size's config, the
# architecture as an override
```bash
python -m doit.data micro --out data/generated/micro
python recipes/pretrain.py --config recipes/configs/pretrain/xs.yaml --value_mode resformer \
    --output_dir runs/pretrain/resformer_xs/seed0 --seed 0
```

# The whole ladder (recipes/grids/ladder.yaml through doit.grid: every arch, size and seed,
# finished bases skipped), then its analysis
```bash
make ladder SEEDS="0 1 2"
python -m doit.analysis ladder runs/ladder --out runs/ladder/analysis
```

# Another corpus (text: a document a line; JSONL: a "text" field) and tokenizer, two CPU ranks
```bash
deepspeed --num_gpus 2 recipes/pretrain.py --config recipes/configs/pretrain/m.yaml \
    --train_file corpus/train.jsonl --valid_file corpus/valid.jsonl \
    --tokenizer_path corpus/tokenizer --deepspeed recipes/deepspeed/zero3.json \
    --output_dir runs/pretrain/custom
```

Any key of the YAML can be overridden with ``--key value``. A finished run (``DONE`` in
output_dir) is not redone; an unfinished one starts again from scratch. The library call behind it
is `doit.train.pretrain.run`.
"""

from doit.train.launch import exit_process
from doit.train.pretrain import main

if __name__ == "__main__":
    exit_process(main())
