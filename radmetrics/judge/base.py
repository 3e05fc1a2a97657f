"""What every judge is: the `Judge` protocol, the `JudgeBackend` base class, and typed backend options.

A judge has a model identity (part of every cache key and fingerprint) and
`generate(prompts, config, on_result, progress) -> list[str]`. Backends (transformers, openai, vllm, replay,
plugins), the response-cache wrapper (`CachedJudge`) and the Ray wrapper (`RayShardedJudge`) all implement it,
so the runner and the data steps take any of them.

A backend's options are a dataclass (`BackendOptions` subclass, `options_class`): typed fields with defaults,
validated when the backend is built, so that a misspelt or mistyped option is a one-line error naming the
valid ones rather than an option silently ignored.
"""
from __future__ import annotations

import dataclasses
import difflib
import math
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from radmetrics.errors import RadmetricsError
from radmetrics.types import GenerationConfig

#: called as each prompt's answer is ready, so the cache keeps it even if the run dies later
OnResult = Callable[[int, str], None]


@runtime_checkable
class Judge(Protocol):
    """Anything that answers prompts: a backend, the cache wrapper, the Ray wrapper."""

    model: str | None

    def identity(self) -> dict[str, Any]:
        """Everything besides prompt and generation settings that changes the answer (backend, model,
        revision, chat template...): part of cache keys and result fingerprints."""

    def generate(self, prompts: Sequence[str], config: GenerationConfig | None = None,
                 on_result: OnResult | None = None, progress: bool = True) -> list[str]:
        """One answer per prompt, in order; a prompt that failed for good answers a GenerationFailure.
        `on_result(i, text)` is called as each answer is ready. A prompt may be a conversation
        (`radmetrics.conversation`): send `as_messages(prompt)` to a chat API, or `flatten(prompt)` as text."""


def local_weights_identity(model: str | None) -> dict[str, Any]:
    """For a judge loaded from a local folder: the folder's absolute path and a fingerprint of its files (names,
    sizes, modification times), part of cache keys. Without it the key was the path as typed, so a judge retrained
    into the same folder, or another folder of the same relative name, was served the old judge's cached answers.
    A stat per file, no reading: cheap at every call. {} for a Hub id (its ``revision`` is in the identity)."""
    import hashlib
    import os

    if not model or not os.path.isdir(model):
        return {}
    folder = os.path.realpath(model)
    stamp = hashlib.sha256()
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.is_file() and not entry.name.startswith("."):
            st = entry.stat()
            stamp.update(f"{entry.name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return {"model_path": folder, "model_files": stamp.hexdigest()[:16]}


def context_failure(prompt_tokens: int, context: int, limit_name: str):
    """The failure a prompt gets that leaves no position of the judge's context to an answer (an in-process
    backend does not send it: the model would read it past the positions it was trained on; a server refuses it)."""
    from radmetrics.types import GenerationFailure

    size = "more than" if prompt_tokens > context else "all of"
    return GenerationFailure(
        f"the prompt is {prompt_tokens:,} tokens, {size} the judge's context of {context:,} (its {limit_name}): not "
        "sent to the model, which would read it past the positions it was trained on; shorten the reports, or use a "
        "judge with a longer context")


class JudgeOptionError(RadmetricsError, TypeError):
    """A backend option that does not exist or has the wrong type."""


_Options = TypeVar("_Options", bound="BackendOptions")


@dataclass(frozen=True)
class BackendOptions:
    """Base of every backend's options. `revision` is common to all: the model revision to load."""

    revision: str | None = None

    @classmethod
    def from_dict(cls: type[_Options], options: dict[str, Any], backend: str) -> _Options:
        """Validated options; unknown names and wrong types are a JudgeOptionError naming the valid ones."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        hints = typing.get_type_hints(cls)
        for name, value in options.items():
            if name not in fields:
                close = difflib.get_close_matches(name, list(fields), n=1)
                hint = f" Did you mean '{close[0]}'?" if close else ""
                raise JudgeOptionError(f"Unknown option '{name}' for the {backend} backend.{hint} "
                                       f"Valid options: {', '.join(sorted(fields))}")
            if not _fits(value, hints[name]):
                # never echo what may be a secret (an api_key of the wrong type is still a key)
                shown = "a value of that type" if _secret_name(name) else repr(value)
                raise JudgeOptionError(f"Option '{name}' of the {backend} backend must be "
                                       f"{_type_name(hints[name])}, not {shown}")
            if isinstance(value, float) and not math.isfinite(value):
                # JSON's NaN / Infinity in --judge-option: timeout=NaN failed every row ("Invalid value NaN"),
                # timeout=Infinity too ("timestamp out of range"), backoff=NaN slept on and on; no bound refuses nan
                raise JudgeOptionError(f"Option '{name}' of the {backend} backend must be a finite number, "
                                       f"not {value!r}")
            least, open_below = cls._LEAST.get(name, (None, False))
            if least is not None and isinstance(value, (int, float)) and (
                    value < least or (open_below and value == least)):
                # "concurrency=0" ran one at a time, "timeout=-1" failed every row, "max_retries=-1" made no call
                bound = f"above {least}" if open_below else f"at least {least}"
                raise JudgeOptionError(f"Option '{name}' of the {backend} backend must be {bound}, not {value!r}")
            most = cls._MOST.get(name)
            if most is not None and isinstance(value, (int, float)) and value > most:
                raise JudgeOptionError(f"Option '{name}' of the {backend} backend must be at most {most}, not {value!r}")
            choices = cls._CHOICES.get(name)
            if choices is not None and value not in choices:
                # here, not as a KeyError where it is used (once the weights load; on a cluster in every Ray actor)
                raise JudgeOptionError(f"Option '{name}' of the {backend} backend must be one of "
                                       f"{', '.join(choices)}, not {value!r}.")
        return cls(**options)

    #: numeric options' lower bounds: name -> (bound, whether the bound itself is refused)
    _LEAST: typing.ClassVar[dict[str, tuple[float, bool]]] = {}
    #: numeric options' upper bounds (the bound itself allowed): name -> bound
    _MOST: typing.ClassVar[dict[str, float]] = {}
    #: options that name one of a few choices: name -> the choices
    _CHOICES: typing.ClassVar[dict[str, tuple[str, ...]]] = {}

    @classmethod
    def names(cls) -> list[str]:
        return sorted(f.name for f in dataclasses.fields(cls))


def _secret_name(name: str) -> bool:
    return any(word in name.lower() for word in ("key", "token", "secret", "password"))


def _fits(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is Any:
        return True
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, origin or hint)


def _type_name(hint: Any) -> str:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(hint))
    return "None" if hint is type(None) else getattr(typing.get_origin(hint) or hint, "__name__", str(hint))


class JudgeBackend:
    """Base for backends. Subclasses set `backend_name` and `options_class` and implement `_generate`."""

    backend_name: str = ""
    #: the backend's typed options (subclass BackendOptions); validated in __init__
    options_class: type[BackendOptions] = BackendOptions
    #: answers cost nothing to recompute (replay): the cache is skipped by default
    cache_by_default: bool = True

    def __init__(self, model: str | None = None, **options: Any):
        self.settings = self.options_class.from_dict(options, self.backend_name or type(self).__name__)
        self.model = model
        self.revision = self.settings.revision

    def identity(self) -> dict[str, Any]:
        """Everything besides prompt and generation settings that changes the answer: part of cache keys."""
        return {"backend": self.backend_name, "model": self.model, "revision": self.revision}

    def generate(
        self,
        prompts: Sequence[str],
        config: GenerationConfig | None = None,
        on_result: OnResult | None = None,
        progress: bool = True,
    ) -> list[str]:
        config = config or GenerationConfig()
        if not prompts:
            return []
        return self._generate(list(prompts), config, on_result, progress)

    def _generate(
        self, prompts: list[str], config: GenerationConfig, on_result: OnResult | None, progress: bool
    ) -> list[str]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} model={self.model!r}>"
