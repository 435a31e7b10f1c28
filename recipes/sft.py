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

# LoRA on one GPU, or a micro base on CPU (two ranks, or one process)
```bash
python recipes/sft.py --config recipes/configs/sft/chinese-llama-plus-7b/lora.yaml \
    --model_name_or_path /models/chinese-llama-plus-7b --doit_dir /data/doit --per_ability 64 \
    --output_dir runs/sft/7b-lora/n0064
torchrun --nproc_per_node 2 recipes/sft.py --config recipes/configs/sft/micro/full.yaml \
    --model_name_or_path data/generated/micro/base --doit_dir data/generated/micro \
    --per_ability 16 --output_dir runs/sft/micro/n0016
python recipes/sft.py --config recipes/configs/sft/micro/full.yaml \
    --model_name_or_path data/generated/micro/base --doit_dir data/generated/micro \
    --per_ability 16 --output_dir runs/sft/micro/n0016
```

Any key of the YAML can be overridden with ``--key value``. Rerunning a command resumes from
its last checkpoint; a finished run (``DONE`` in output_dir) is not redone. Multi-node Slurm
launches: recipes/README.md.
"""

import logging
import sys


def main(argv=None) -> int:
    from doit.train import launch
    from doit.train.args import ConfigError, parse_args

    launch.exit_on_sigterm()  # so that `finally` below runs when a launcher stops this rank
    try:
        return train(parse_args(argv))
    except (ConfigError, launch.LaunchError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        launch.cleanup_shm()


def train(args) -> int:
    from doit.train import callbacks, data, model, run
    from doit.train.args import resolve_schedule
    from doit.train.trainer import DoitSFTTrainer

    t = args.training
    setup_logging(t.process_index == 0)
    log = logging.getLogger("doit.train")
    if run.is_done(t.output_dir):
        log.info("%s is finished (DONE); delete DONE to train again", t.output_dir)
        if t.process_index == 0:
            run.strip_all(t.output_dir)  # in case the finished run was killed before it could
        return 0
    tokenizer = model.load_tokenizer(args)
    train_data = data.build(args, tokenizer)
    schedule = resolve_schedule(args, len(train_data.train))
    log.info("schedule: %s", schedule)
    if t.process_index == 0:
        run.write_run_info(args, schedule, train_data.info)
    base = model.load_model(args, tokenizer)
    # The labels already carry the assistant mask (doit.train.data); TRL checks it on raw text only.
    t.assistant_only_loss = False
    trainer = DoitSFTTrainer(
        model=base,
        args=t,
        train_dataset=train_data.train,
        eval_dataset=train_data.valid if t.eval_strategy.value != "no" else None,
        processing_class=tokenizer,
        peft_config=model.peft_config(args, tokenizer, base),
    )
    callbacks.install(trainer, schedule["steps_per_epoch"])
    if t.process_index == 0:
        run.update_run_info(t.output_dir, model=model.describe(trainer.model, args))
    resume = run.resume_checkpoint(t.output_dir, is_main=t.process_index == 0)
    if resume:
        log.info("resuming from %s", resume)
    trainer.train(resume_from_checkpoint=resume)
    run.finish(trainer, args, tokenizer)
    trainer.end()
    return 0


def setup_logging(is_main: bool) -> None:
    import transformers

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("doit: %(message)s"))
    log = logging.getLogger("doit")
    log.addHandler(handler)
    log.setLevel(logging.INFO if is_main else logging.WARNING)
    log.propagate = False
    transformers.logging.set_verbosity_warning()


if __name__ == "__main__":
    from doit.train.launch import exit_process

    exit_process(main())
