"""The micro corpus tokenizer: one token per Chinese character and digit, doit's specials."""

from __future__ import annotations

from transformers import AutoTokenizer

from doit.data.micro.tokenizer import SPEAKER_TOKENS, train_tokenizer
from doit.models.chat import SPEAKER_TOKENS as CHAT_SPEAKER_TOKENS


def test_tokenizer_trains_loads_and_isolates_characters(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("斑啾生活在高山。\n函数def f(x): return x*3+1。\n" * 50, encoding="utf-8")
    train_tokenizer([text], tmp_path / "tok", vocab_size=600)
    tok = AutoTokenizer.from_pretrained(tmp_path / "tok")
    assert tok.pad_token == "<pad>" and tok.eos_token == "</s>" and tok.bos_token is None
    assert len(tok("斑啾生活", add_special_tokens=False)["input_ids"]) == 4
    assert len(tok("123", add_special_tokens=False)["input_ids"]) == 3
    for token in SPEAKER_TOKENS:
        assert len(tok(token, add_special_tokens=False)["input_ids"]) == 1


def test_speaker_tokens_are_the_chat_renderers():
    """The tokenizer bakes in the tokens doit.models.chat renders turns with."""
    assert SPEAKER_TOKENS == CHAT_SPEAKER_TOKENS
