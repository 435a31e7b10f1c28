"""Optimiser parameter groups with an explicit no-decay set.

Weight decay applies to matrices (linear weights, the LM head and, by default, embeddings).
No decay for:
- biases;
- normalisation weights (any module whose class name ends in ``Norm``, e.g. ``LlamaRMSNorm``,
  or ``nn.LayerNorm``);
- value-residual mixing scalars (``value_lambda1`` / ``value_lambda2`` of ResFormer);
- embeddings, when ``decay_embeddings=False`` (a tied LM head follows its embedding);
- as a safety net, any other parameter with fewer than 2 dimensions, counted on its full shape:
  under ZeRO-3 (a model built in `deepspeed.zero.Init`, as `from_pretrained` does for a stage-3
  run) every parameter is an empty 1-D tensor and its shape is kept in ``ds_shape``.

Use it directly::

    torch.optim.AdamW(param_groups(model, weight_decay=0.1), lr=6e-4, betas=(0.9, 0.95))

or in a transformers `Trainer`, either ``class MyTrainer(DoitOptimizerMixin, Trainer)`` (keeps
everything `Trainer.create_optimizer` does: optimiser choice from `TrainingArguments.optim`,
`args.weight_decay`) or ``Trainer(..., optimizer_cls_and_kwargs=(torch.optim.AdamW,
{"params": param_groups(model, 0.1), "lr": 6e-4}))``. Under DeepSpeed, a config with an
``optimizer`` block makes transformers hand DeepSpeed one flat parameter list, so doit's DeepSpeed
configs never carry one: `Trainer.create_optimizer` (and with it these groups) is then used.
"""

from __future__ import annotations

from torch import nn

MIXING_SCALAR_NAMES = ("value_lambda1", "value_lambda2")


def _is_norm(module: nn.Module) -> bool:
    return isinstance(module, nn.LayerNorm) or type(module).__name__.endswith("Norm")


def _full_ndim(param: nn.Parameter) -> int:
    """Dimensions of the whole parameter, also when ZeRO-3 holds only an empty partition."""
    return len(getattr(param, "ds_shape", param.shape))


def no_decay_parameter_names(model: nn.Module, decay_embeddings: bool = True) -> set[str]:
    """Names (as in `model.named_parameters()`) of the parameters that get no weight decay."""
    no_decay_ids = set()
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if (
                name == "bias"
                or name in MIXING_SCALAR_NAMES
                or _is_norm(module)
                or (isinstance(module, nn.Embedding) and not decay_embeddings)
                or _full_ndim(param) < 2
            ):
                no_decay_ids.add(id(param))
    return {name for name, param in model.named_parameters() if id(param) in no_decay_ids}


def param_groups(
    model: nn.Module, weight_decay: float, decay_embeddings: bool = True
) -> list[dict]:
    """Two optimiser groups, ``[decayed, not decayed]``, of the trainable parameters."""
    no_decay = no_decay_parameter_names(model, decay_embeddings)
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    return [
        {"params": [p for n, p in trainable if n not in no_decay], "weight_decay": weight_decay},
        {"params": [p for n, p in trainable if n in no_decay], "weight_decay": 0.0},
    ]


class DoitOptimizerMixin:
    """Mix into a `transformers.Trainer` subclass (before `Trainer`) to use doit's no-decay set.

    `Trainer.create_optimizer` builds its two groups from `get_decay_parameter_names`; this
    overrides only that, so the rest of the optimiser setup stays transformers'.
    """

    decay_embeddings: bool = True
    optimizer_groups: list[dict] | None = None  # per group: weight_decay and parameter names

    def create_optimizer(self, model=None):
        """transformers' optimiser; records its groups before DeepSpeed wraps it."""
        optimizer = super().create_optimizer(model)
        names = {id(p): n for n, p in (model or self.model).named_parameters()}
        self.optimizer_groups = [
            {
                "weight_decay": g["weight_decay"],
                "params": [names.get(id(p), "?") for p in g["params"]],
            }
            for g in optimizer.param_groups
        ]
        return optimizer

    def get_decay_parameter_names(self, model: nn.Module) -> list[str]:
        no_decay = no_decay_parameter_names(model, self.decay_embeddings)
        return [name for name, _ in model.named_parameters() if name not in no_decay]


__all__ = ["DoitOptimizerMixin", "no_decay_parameter_names", "param_groups"]
