"""Model architectures for doit: ResFormer / SVFormer (value residual learning).

Importing this package registers `model_type="resformer"` with `AutoConfig`, `AutoModel` and
`AutoModelForCausalLM`, so checkpoints saved by `ResFormerForCausalLM.save_pretrained` load
through the Auto classes. Without this import, transformers refuses them as an unknown model type
(it never falls back to a vanilla Llama).
"""

from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

from .cache import SharedValueLayer, SVFormerCache, cache_nbytes
from .configuration_resformer import VALUE_MODES, ResFormerConfig
from .loading import check_local, load, load_for_inference, load_model, load_tokenizer
from .memory import saved_activation_bytes
from .modeling_resformer import (
    ResFormerForCausalLM,
    ResFormerModel,
    ResFormerPreTrainedModel,
    from_llama,
)

AutoConfig.register(ResFormerConfig.model_type, ResFormerConfig, exist_ok=True)
AutoModel.register(ResFormerConfig, ResFormerModel, exist_ok=True)
AutoModelForCausalLM.register(ResFormerConfig, ResFormerForCausalLM, exist_ok=True)

__all__ = [
    "VALUE_MODES",
    "ResFormerConfig",
    "ResFormerForCausalLM",
    "ResFormerModel",
    "ResFormerPreTrainedModel",
    "SVFormerCache",
    "SharedValueLayer",
    "cache_nbytes",
    "check_local",
    "from_llama",
    "load",
    "load_for_inference",
    "load_model",
    "load_tokenizer",
    "saved_activation_bytes",
]
