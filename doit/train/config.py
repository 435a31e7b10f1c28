"""A recipe's arguments from ``--config FILE.yaml`` and ``--key value`` flags, typed one way.

TRL's parser sets a YAML file's values as argparse defaults, and argparse converts only string
defaults: a YAML ``learning_rate: true`` would train at lr 1.0 and ``learning_rate: fast`` would
end the process from inside argparse. `RecipeParser` instead turns every YAML value into the
flag that says the same (``--learning_rate true``: refused as not a float), placed before the
command line's own flags (which override it), so a key is type-checked the same way from YAML
and from the command line; a YAML ``null`` keeps its meaning (the value None). Every parse error
is a `ConfigError` naming the key, never a ``SystemExit``; a key no dataclass has is one too,
naming the key and the closest known ones.
"""

from __future__ import annotations

import difflib
import json
import os
import re

from trl import TrlParser

from doit.io import YamlError, read_yaml
from doit.train.errors import ConfigError


def yaml_flags(path: str) -> tuple[list[str], dict]:
    """(flags, defaults) saying what the YAML config ``path`` says: a flag per value, and the
    keys whose value no flag can say (null, an empty list) as defaults. Its ``env`` mapping is
    set in the environment, as TRL does."""
    try:
        config = read_yaml(path)
    except OSError as e:
        raise ConfigError("config", f"{path}: {e}") from None
    except YamlError as e:
        raise ConfigError("config", str(e)) from None
    if not isinstance(config, dict):
        raise ConfigError("config", f"{path}: expected a YAML mapping of keys to values")
    for key, value in (config.pop("env", None) or {}).items():
        os.environ[str(key)] = str(value)
    flags, defaults = [], {}
    for key, value in config.items():
        if value is None or value == []:
            defaults[key] = value
        elif isinstance(value, list):
            flags += [f"--{key}", *(_text(v) for v in value)]
        else:
            flags += [f"--{key}", _text(value)]
    return flags, defaults


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


class RecipeParser(TrlParser):
    """TRL's parser with YAML values typed as flags (`yaml_flags`) and errors as ConfigError."""

    def error(self, message: str):
        key = re.search(r"argument --([\w.-]+)", message)
        raise ConfigError(key.group(1) if key else "config", message)

    def _check_lists(self, flags: list[str]) -> None:
        """A YAML list given to a key that takes one value (argparse would split it)."""
        keys = [i for i, f in enumerate(flags) if f.startswith("--")] + [len(flags)]
        for at, end in zip(keys, keys[1:]):
            action = self._option_string_actions.get(flags[at])
            if action is not None and action.nargs in (None, "?") and end - at > 2:
                raise ConfigError(flags[at][2:], f"expected one value, got {flags[at + 1 : end]}")

    def _check_known(self, flags: list[str], defaults: dict) -> None:
        """A key that no dataclass of this parser has (a typo would otherwise be reported as
        a list of unused arguments, or a null one dropped silently)."""
        given = [f[2:].split("=", 1)[0] for f in flags if f.startswith("--")]
        keys = {a.dest for a in self._actions}
        flags = {s[2:] for a in self._actions for s in a.option_strings if s.startswith("--")}
        for key in [*given, *defaults]:
            if key not in keys | flags:
                near = difflib.get_close_matches(key, keys, n=3)
                hint = f"; did you mean {' or '.join(near)}?" if near else ""
                raise ConfigError(key, f"not a recipe key{hint}")

    def parse_args_and_config(self, args=None, return_remaining_strings=False, **kwargs):
        args = list(args or [])
        defaults = {}
        if "--config" in args:
            at = args.index("--config")
            if at + 1 >= len(args):
                raise ConfigError("config", "--config needs a YAML file")
            flags, defaults = yaml_flags(args[at + 1])
            self._check_lists(flags)
            args = flags + args[:at] + args[at + 2 :]
            self.set_defaults_with_config(**defaults)
        if not return_remaining_strings:  # a parser of every dataclass: every key is known
            self._check_known(args, defaults)
        try:
            return super().parse_args_and_config(args, return_remaining_strings, **kwargs)
        except ValueError as e:
            if isinstance(e, ConfigError):
                raise
            raise ConfigError("config", str(e)) from None
