"""The one error type of training: a bad recipe config or launch, raised before any data is
read or any model is loaded, by fine-tuning and pretraining alike (their commands exit 2)."""

from __future__ import annotations


class ConfigError(ValueError):
    """A bad recipe config: ``key`` is the offending key, the message says what it allows."""

    def __init__(self, key: str, message: str):
        super().__init__(f"{key}: {message}")
        self.key = key
