"""The shared judge backend: the only package in radmetrics that talks to a model.

`get_judge(backend, model=..., **options)` returns one shared instance per (backend, model, options)
in a process, wrapped with the persistent response cache, so every metric and evaluate module that asks
for the same judge reuses the loaded weights and each other's answers.
"""
from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from radmetrics.errors import JudgeError, UnknownNameError
from radmetrics.judge.base import BackendOptions, Judge, JudgeBackend, JudgeOptionError, OnResult
from radmetrics.judge.cache import ResponseCache, cache_key, default_cache_path
from radmetrics.types import GenerationConfig, GenerationFailure

__all__ = ["BackendOptions", "CachedJudge", "Judge", "JudgeBackend", "JudgeOptionError", "ResponseCache", "get_judge",
           "clear_judges"]

_USE_DEFAULT = object()
_instances: dict[str, Any] = {}
_lock = threading.RLock()


class CachedJudge:
    """A `Judge`: a backend behind the response cache. Answers already in the cache are not asked again; each new
    answer is written as soon as the backend hands it over, so an interrupted run keeps them all."""

    def __init__(self, backend: JudgeBackend, cache: ResponseCache | None):
        self.backend = backend
        self.cache = cache
        self.calls = 0  # prompts actually sent to the backend (tests and benchmarks read it)

    @property
    def model(self) -> str | None:
        return self.backend.model

    def identity(self) -> dict[str, Any]:
        return self.backend.identity()

    def generate(
        self,
        prompts: Sequence[str],
        config: GenerationConfig | None = None,
        on_result: OnResult | None = None,
        progress: bool = True,
    ) -> list[str]:
        config = config or GenerationConfig()
        prompts = list(prompts)
        identity, config_dict = self.backend.identity(), config.to_dict()
        keys = [cache_key(identity, p, config_dict) for p in prompts]
        hits = self.cache.get_many(keys) if self.cache is not None else {}
        answers: list[str | None] = [hits.get(k) for k in keys]
        for i, answer in enumerate(answers):
            if answer is not None and on_result:
                on_result(i, answer)
        # Identical prompts in one run are asked once.
        todo: dict[str, list[int]] = {}
        for i, answer in enumerate(answers):
            if answer is None:
                todo.setdefault(keys[i], []).append(i)
        if todo:
            first = [idxs[0] for idxs in todo.values()]
            self.calls += len(first)

            def store(j: int, text: str) -> None:
                idxs = todo[keys[first[j]]]
                if self.cache is not None and not isinstance(text, GenerationFailure):  # failures: retried next run
                    self.cache.put_many([(keys[idxs[0]], identity["backend"], identity.get("model"), text)])
                for i in idxs:
                    answers[i] = text
                    if on_result:
                        on_result(i, text)

            try:
                fresh = self.backend.generate([prompts[i] for i in first], config, on_result=store,
                                              progress=progress)
            except JudgeError as e:
                if e.prompt_index is not None:  # name the position in our caller's list
                    e.prompt_index = first[e.prompt_index]
                raise
            for j, text in enumerate(fresh):  # backends that do not stream results
                if answers[first[j]] is None:
                    store(j, text)
        return [a if a is not None else GenerationFailure("no answer") for a in answers]

    def __repr__(self) -> str:
        return f"<CachedJudge {self.backend!r} cache={self.cache.path if self.cache else None}>"


def _cache_for(cache: Any, backend: JudgeBackend) -> ResponseCache | None:
    if cache is _USE_DEFAULT:
        if not backend.cache_by_default:
            return None
        path = default_cache_path()
    elif cache in (None, False):
        return None
    elif isinstance(cache, ResponseCache):
        return cache
    else:
        path = Path(os.fspath(cache)).expanduser()
    if path is None:
        return None
    key = f"cache:{path.resolve()}"
    with _lock:
        if key not in _instances:
            _instances[key] = ResponseCache(path)
        return _instances[key]


#: name -> backend factory, installed by radmetrics.plugins (the registry sits above this package, which
#: therefore never imports it: built-in and plugin backends alike come from there)
backend_factories: Callable[[], dict[str, Callable[..., Any]]] = dict


def get_judge(backend: str = "transformers", model: str | None = None, cache: Any = _USE_DEFAULT,
              **options: Any) -> CachedJudge:
    """The shared judge for (backend, model, options).

    cache: default ($RADMETRICS_CACHE or ~/.cache/radmetrics/judgments.sqlite), a path, or None/False to
    turn it off. Options go to the backend (e.g. revision, batch size, base_url, replay path) and are checked
    against its options dataclass: an unknown or mistyped one is a JudgeOptionError naming the valid ones.
    """
    factories = backend_factories()
    if backend not in factories:
        raise UnknownNameError("judge backend", backend, factories)
    # API keys are not part of the identity of a shared instance's name (nor printed anywhere).
    options_key = json.dumps({k: v for k, v in options.items() if k != "api_key"}, sort_keys=True,
                             default=str)
    backend_key = f"backend:{backend}:{model}:{options_key}"
    with _lock:
        if backend_key not in _instances:
            _instances[backend_key] = factories[backend](model=model, **options)
        instance = _instances[backend_key]
        response_cache = _cache_for(cache, instance)
        judge_key = f"judge:{backend_key}:{response_cache.path if response_cache else None}"
        if judge_key not in _instances:
            _instances[judge_key] = CachedJudge(instance, response_cache)
        return _instances[judge_key]


def clear_judges() -> None:
    """Forget every shared judge and cache handle (frees model memory; tests use it)."""
    with _lock:
        _instances.clear()
