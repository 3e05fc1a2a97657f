"""One error base so callers (and the CLI) can catch everything radmetrics raises on purpose."""
from __future__ import annotations

import difflib
from collections.abc import Iterable


class RadmetricsError(Exception):
    """Base of every error radmetrics raises deliberately; the CLI prints it as one line."""


class UnknownNameError(RadmetricsError, KeyError):
    """A scoring system, backend or metric name that is not registered."""

    def __init__(self, kind: str, name: str, available: Iterable[str]):
        available = sorted(available)
        close = difflib.get_close_matches(name, available, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        self.message = f"Unknown {kind} '{name}'.{hint} Available: {', '.join(available) or '(none)'}"
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return self.message


class InputError(RadmetricsError, ValueError):
    """Bad user input (a missing column, mismatched lengths); the message names the row and column."""


class JudgeError(RadmetricsError):
    """The judge backend could not be built or could not answer (after retries).

    `prompt_index` (when set) is the position of the prompt that failed in the list the backend got;
    the layers above translate it, so the final message names the input row.
    """

    def __init__(self, message: str, prompt_index: int | None = None):
        super().__init__(message)
        self.message = message
        self.prompt_index = prompt_index

    def __str__(self) -> str:
        return self.message


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """Replace every secret (API keys) in text; used on every message that may reach a log or a file."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text
