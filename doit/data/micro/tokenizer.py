"""Train the micro corpus tokenizer: byte-level BPE with one token per Chinese character.

The pre-tokenizer isolates every CJK character, full-width punctuation mark and
digit before the GPT-2 style byte-level split, so BPE merges only rebuild whole
characters and ASCII words (``def``, ``return``). Entity names therefore tokenise
the same way in the pretraining prose and in the questions, and numbers are read
digit by digit (what a tiny model needs for arithmetic). ``vocab_size`` is an upper
bound: on the micro corpus the merges run out well below it.

Special tokens, in id order: ``<pad>`` (pad), ``</s>`` (eos; the pretraining packer
appends it to every document), then the speaker tokens ``<user>``, ``<assistant>``,
``<eot>``. There is no BOS and no post-processor: encoding adds nothing.

Training is deterministic whatever the thread count (checked with
RAYON_NUM_THREADS=1 and 2): the initial alphabet's ids are fixed and the BPE
trainer breaks count ties by pair, so the same text gives byte-identical files
(``tests/data/micro/test_build.py`` checks it).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from doit.io import atomic_write_text

PAD_TOKEN = "<pad>"
EOS_TOKEN = "</s>"
SPEAKER_TOKENS = ("<user>", "<assistant>", "<eot>")
SPECIAL_TOKENS = (PAD_TOKEN, EOS_TOKEN, *SPEAKER_TOKENS)
MODEL_MAX_LENGTH = 512

# One pre-token per CJK ideograph, CJK/full-width punctuation, or digit.
_ISOLATED = r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef\u201c\u201d]|\p{N}"


def _pre_tokenizer() -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_ISOLATED), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )


def _train_bpe(text_files: list[Path], vocab_size: int) -> Tokenizer:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = _pre_tokenizer()
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train([str(p) for p in sorted(text_files)], trainer)
    return tokenizer


def wrap(tokenizer: Tokenizer) -> PreTrainedTokenizerFast:
    """The trained ``tokenizers`` object as a transformers tokenizer with doit's specials."""
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token=PAD_TOKEN,
        eos_token=EOS_TOKEN,
        additional_special_tokens=list(SPEAKER_TOKENS),
        model_max_length=MODEL_MAX_LENGTH,
        padding_side="right",
        clean_up_tokenization_spaces=False,
    )


def _save(tokenizer: PreTrainedTokenizerFast, out_dir: Path) -> None:
    """save_pretrained into a scratch dir, then copy each file in atomically."""
    with tempfile.TemporaryDirectory() as scratch:
        tokenizer.save_pretrained(scratch)
        for path in sorted(Path(scratch).iterdir()):
            atomic_write_text(out_dir / path.name, path.read_text(encoding="utf-8"))


def train_tokenizer(
    text_files: list[Path], out_dir: Path, vocab_size: int = 4096
) -> PreTrainedTokenizerFast:
    """Train on ``text_files``, save to ``out_dir`` (loadable by ``AutoTokenizer``), return it."""
    if vocab_size <= len(SPECIAL_TOKENS) + 256:
        raise ValueError(
            f"vocab_size {vocab_size} leaves no room beyond the 256 bytes and specials"
        )
    missing = [str(p) for p in text_files if not Path(p).is_file()]
    if missing:
        raise FileNotFoundError(f"tokenizer training text not found: {', '.join(missing)}")
    tokenizer = wrap(_train_bpe([Path(p) for p in text_files], vocab_size))
    _save(tokenizer, Path(out_dir))
    return tokenizer
