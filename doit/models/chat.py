"""The one conversation renderer: the study's speaker format as a chat template.

Every stage renders conversations only through ``tokenizer.apply_chat_template``;
``prepare_tokenizer`` is where the template and the speaker tokens are put on a
tokenizer (and the model's embeddings resized when tokens were added).
"""

from __future__ import annotations

from importlib import resources

from doit.data.chat_formats import CHAT_FORMATS

USER, ASSISTANT, EOT = "<user>", "<assistant>", "<eot>"
SPEAKER_TOKENS = (USER, ASSISTANT, EOT)
TEMPLATE_NAME = "doit_speakers.jinja"


def speaker_template() -> str:
    return (
        resources.files("doit.models")
        .joinpath("templates", TEMPLATE_NAME)
        .read_text(encoding="utf-8")
    )


def prepare_tokenizer(tokenizer, model=None, chat_format: str = "doit") -> int:
    """Give ``tokenizer`` the renderer for ``chat_format``; returns how many tokens were added.

    ``doit``: add the speaker tokens if missing, set the speaker template, make ``<eot>``
    the end-of-turn (eos) token, and resize ``model``'s embeddings when tokens were added.
    ``native``: keep the base's own chat template (it must have one).
    """
    if chat_format not in CHAT_FORMATS:
        raise ValueError(f"chat_format: expected one of {CHAT_FORMATS}, got {chat_format!r}")
    if chat_format == "native":
        if not tokenizer.chat_template:
            raise ValueError("chat_format: 'native' but the base tokenizer has no chat_template")
        return 0
    vocab = tokenizer.get_vocab()
    missing = [t for t in SPEAKER_TOKENS if t not in vocab]
    added = tokenizer.add_special_tokens({"additional_special_tokens": missing}) if missing else 0
    tokenizer.chat_template = speaker_template()
    tokenizer.eos_token = EOT
    if tokenizer.pad_token is None:
        tokenizer.pad_token = EOT
    if model is not None and len(tokenizer) > model.get_input_embeddings().weight.shape[0]:
        model.resize_token_embeddings(len(tokenizer))
    if model is not None:
        model.config.eos_token_id = tokenizer.convert_tokens_to_ids(EOT)
        if model.generation_config is not None:
            model.generation_config.eos_token_id = model.config.eos_token_id
    return added
