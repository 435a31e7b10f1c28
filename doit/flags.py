"""Command-line flags in one style for every doit command.

Every flag is documented with dashes (``--per-ability``, ``--max-parallel``) and also accepted
with underscores (``--per_ability``), as the recipe commands (TRL's parser) accept both; the
help lists the dashed spelling only. Every argparse command of doit builds its parser from
`ArgumentParser` (its subcommands inherit it).
"""

from __future__ import annotations

import argparse


def spellings(name: str) -> list[str]:
    """``--a-b`` -> [``--a-b``, ``--a_b``] (and the other way round); short flags unchanged."""
    if not name.startswith("--"):
        return [name]
    body = name[2:]
    dashed, underscored = "--" + body.replace("_", "-"), "--" + body.replace("-", "_")
    return [dashed] if dashed == underscored else [dashed, underscored]


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Shows each flag's dashed spelling only (descriptions as written)."""

    def _format_action_invocation(self, action):
        shown = [s for s in action.option_strings if "_" not in s] or action.option_strings
        return super()._format_action_invocation(_Shown(action, shown))


class _Shown:
    def __init__(self, action, option_strings):
        self._action, self.option_strings = action, option_strings

    def __getattr__(self, name):
        return getattr(self._action, name)


class ArgumentParser(argparse.ArgumentParser):
    """argparse with both spellings of every long flag (`spellings`)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def add_argument(self, *names, **kwargs):
        every = [s for n in names for s in spellings(n)]
        if any(n.startswith("--") for n in names) and "dest" not in kwargs and names:
            long = next(n for n in names if n.startswith("--"))
            kwargs["dest"] = long[2:].replace("-", "_")
        return super().add_argument(*dict.fromkeys(every), **kwargs)


def at_least(low: float, kind: type = int):
    """An argparse ``type`` for a number (``kind``) of at least ``low``: ``--valid -1`` is
    refused by the parser (exit 2, the flag named) rather than meaning something else.
    NaN is refused too (it compares false with every bound)."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {kind.__name__}, got {text!r}") from None
        if not value >= low:
            raise argparse.ArgumentTypeError(f"expected a number >= {low}, got {text!r}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse
