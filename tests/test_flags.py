"""One flag style for every command: dashes documented, underscores accepted too."""

from __future__ import annotations

import pytest

from doit.flags import ArgumentParser, spellings


def test_spellings():
    assert spellings("--per-ability") == ["--per-ability", "--per_ability"]
    assert spellings("--max_new_tokens") == ["--max-new-tokens", "--max_new_tokens"]
    assert spellings("--out") == ["--out"] and spellings("-h") == ["-h"]


def test_both_spellings_set_one_value_and_help_shows_dashes():
    p = ArgumentParser(prog="x")
    p.add_argument("--per-ability", type=int)
    assert p.parse_args(["--per_ability", "3"]).per_ability == 3
    assert p.parse_args(["--per-ability", "4"]).per_ability == 4
    assert "--per-ability" in p.format_help() and "--per_ability" not in p.format_help()


@pytest.mark.parametrize(
    "module", ["doit.data.cli", "doit.grid.cli", "doit.eval.cli", "doit.analysis.cli"]
)
def test_every_argparse_command_uses_the_one_style(module):
    import importlib

    parser = importlib.import_module(module).build_parser()
    assert isinstance(parser, ArgumentParser)
