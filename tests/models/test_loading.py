"""doit's one model loader (`doit.models.load`), shared by fine-tuning and evaluation."""

import pytest

from doit.models import check_local, load
from doit.models.chat import SPEAKER_TOKENS


@pytest.fixture(scope="module")
def base(tiny_base):
    return tiny_base


def test_a_missing_or_non_model_directory_says_doit_never_downloads(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist.*never downloads"):
        check_local(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="no config.json"):
        load(tmp_path)


def test_an_untuned_base_needs_a_chat_format(base):
    with pytest.raises(ValueError, match="no chat_template.*chat format"):
        load(base)


def test_a_chat_format_adds_the_speaker_rows_seeded(base):
    model, tok = load(base, chat_format="doit", seed=0)
    again, _ = load(base, chat_format="doit", seed=0)
    other, _ = load(base, chat_format="doit", seed=1)
    ids = tok.convert_tokens_to_ids(list(SPEAKER_TOKENS))
    assert model.get_input_embeddings().num_embeddings == len(tok)
    rows = model.get_input_embeddings().weight[ids]
    assert (rows == again.get_input_embeddings().weight[ids]).all()
    assert not (rows == other.get_input_embeddings().weight[ids]).all()
