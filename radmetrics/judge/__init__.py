"""The shared judge backend: the only package in radmetrics that talks to a model.

`get_judge(backend, model=..., **options)` returns one shared instance per (backend, model, options)
in a process, wrapped with the persistent response cache, so every metric and evaluate module that asks
for the same judge reuses the loaded weights and each other's answers.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from radmetrics.errors import JudgeError, UnknownNameError
from radmetrics.judge.base import BackendOptions, Judge, JudgeBackend, JudgeOptionError, OnResult
from radmetrics.judge.cache import ResponseCache, cache_key, default_cache_path, usable_answer
from radmetrics.types import GenerationConfig, GenerationFailure

log = logging.getLogger(__name__)

__all__ = ["BackendOptions", "CachedJudge", "Judge", "JudgeBackend", "JudgeOptionError", "ResponseCache", "get_judge",
           "clear_judges"]

_USE_DEFAULT = object()
_instances: dict[str, Any] = {}
_lock = threading.RLock()


#: answers received from backends and answers written to the cache in this process (the CLI's interrupt line)
run_tally = {"answered": 0, "cached": 0}
#: held while an answer is counted and cached: an interrupted run reads the tally only between two answers,
#: so "N answered, N cached" is never read half-way through storing one (worker threads store answers)
tally_lock = threading.RLock()


#: answers kept in memory for one command run when no response cache is in use; None: none kept (the default)
_run_answers: dict[str, str] | None = None


@contextlib.contextmanager
def answers_shared_in_run():
    """Inside the block, a judge with no response cache (--no-cache, RADMETRICS_CACHE=off) still asks each prompt
    once: compare, meta-eval, preference-eval and rexamine run several metrics over the same pairs, and GREEN's
    variants (green, green_ec, green_f1, ...) read one analysis. Without this each variant asked the judge again
    (3x the calls for three of them) and, from a sampling judge, read a different answer. The answers are dropped
    when the block ends: a long run outside it (an RL reward, a streamed `score`) keeps nothing in memory."""
    global _run_answers
    previous = _run_answers
    _run_answers = {} if previous is None else previous
    try:
        yield
    finally:
        _run_answers = previous


@contextlib.contextmanager
def interrupts_deferred():
    """Ctrl-C / SIGTERM that arrive inside the block take effect when it ends. Python raises KeyboardInterrupt
    in the main thread at any bytecode, so without this an interrupt between the cache's commit and the tally's
    update left an answer cached but not counted ("31 answered, 31 cached" over a cache of 32, seen under load).
    Main thread only (elsewhere signal handlers cannot be set, and are not run)."""
    import signal

    signals = (signal.SIGINT, signal.SIGTERM)
    # a handler set outside Python (getsignal gives None) could not be put back: leave those alone
    if threading.current_thread() is not threading.main_thread() or None in map(signal.getsignal, signals):
        yield
        return
    caught: list[int] = []
    previous = {}
    try:
        for signum in signals:
            previous[signum] = signal.signal(signum, lambda n, frame: caught.append(n))
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in caught[:1]:  # delivered again, now to the handler that was there (raises, usually)
            signal.raise_signal(signum)


class CachedJudge:
    """A `Judge`: a backend behind the response cache. Answers already in the cache are not asked again; each new
    answer is written as soon as the backend hands it over, so an interrupted run keeps them all. With a cache,
    prompts are claimed before they are asked (in windows for backends with a `concurrency`), so concurrent
    runs on one cache file wait for each other's answers instead of asking twice."""

    #: how long to sleep between looks for another process's answers
    poll_seconds = 0.2

    def __init__(self, backend: JudgeBackend, cache: ResponseCache | None):
        self.backend = backend
        self.cache = cache
        self.calls = 0  # prompts actually sent to the backend (tests and benchmarks read it)
        # keys the next generate asks again instead of reading the cache (`ask_anew`), each with when the answer to ask
        # again was written (None: none was), to tell it from one another run writes meanwhile
        self._anew: dict[str, float | None] = {}

    @property
    def model(self) -> str | None:
        return self.backend.model

    def identity(self) -> dict[str, Any]:
        return self.backend.identity()

    def keys(self, prompts: Sequence[str], config: GenerationConfig | None = None) -> list[str]:
        config = config or GenerationConfig()
        identity, config_dict = self.backend.identity(), config.to_dict()
        return [cache_key(identity, p, config_dict) for p in prompts]

    def forget(self, prompts: Sequence[str], config: GenerationConfig | None = None) -> None:
        """Drop these prompts' cached answers so the next generate asks again (`--retry-unscored`)."""
        if self.cache is not None and prompts:
            self.cache.delete(self.keys(prompts, config))
        if _run_answers is not None:
            for key in self.keys(prompts, config):
                _run_answers.pop(key, None)

    def ask_anew(self, prompts: Sequence[str], config: GenerationConfig | None = None,
                 batch: str | None = None) -> None:
        """The next generate asks these prompts again instead of reading their cached answers, which stay cached until
        the new answers replace them (`--retry-unscored`). A run killed before its new answers came keeps the old
        ones: the rerun reads them and asks each prompt again once. Deleting them first (`forget`) made it ask each
        twice, first as uncached, then as unreadable (review 40a). ``batch``: a name for this work, given again when it
        is done again whole (a Ray actor restarted): the answers to ask again are then those the first try found
        (`ResponseCache.written`), so what it had asked anew is read, not asked a third time."""
        if self.cache is None:
            self.forget(prompts, config)  # answers kept for this run only: nothing a kill could lose
        else:
            keys = self.keys(prompts, config)
            written = self.cache.written(keys, batch)
            self._anew.update((key, written.get(key)) for key in keys)

    def answered_anew(self, prompts: Sequence[str], config: GenerationConfig | None, batch: str) -> list[bool]:
        """Whether each prompt was answered again since `ask_anew` named it under ``batch``: its cached answer is the
        new one (an earlier try of the work, killed after it asked again: `score --retry-unscored` continued)."""
        keys = self.keys(prompts, config)
        again = self.cache.rewritten(keys, batch) if self.cache is not None else set()
        return [key in again for key in keys]

    def batch_done(self, batch: str) -> None:
        """The work named ``batch`` is done and kept: what `ask_anew` recorded under its name goes."""
        if self.cache is not None:
            self.cache.batch_done(batch)

    def generate(
        self,
        prompts: Sequence[str],
        config: GenerationConfig | None = None,
        on_result: OnResult | None = None,
        progress: bool = True,
    ) -> list[str]:
        config = config or GenerationConfig()
        prompts = list(prompts)
        identity = self.backend.identity()
        keys = self.keys(prompts, config)
        memo = _run_answers if self.cache is None else None  # with a cache, the cache shares them
        prompt_of = dict(zip(keys, prompts)).__getitem__  # one key, one prompt

        def read_cache(wanted: Sequence[str]) -> dict[str, str]:
            return self._read_cached(wanted, prompt_of, config)

        anew = {key: self._anew.pop(key) for key in dict.fromkeys(keys) if key in self._anew}
        hits = read_cache([k for k in keys if k not in anew]) if self.cache is not None else \
            {k: memo[k] for k in keys if k in memo} if memo is not None else {}
        answers: list[str | None] = [hits.get(k) for k in keys]
        for i, answer in enumerate(answers):
            if answer is not None and on_result:
                on_result(i, answer)
        # Identical prompts in one run are asked once.
        todo: dict[str, list[int]] = {}
        for i, answer in enumerate(answers):
            if answer is None:
                todo.setdefault(keys[i], []).append(i)

        def settle(key: str, text: str) -> None:
            for i in todo[key]:
                answers[i] = text
                if on_result:
                    on_result(i, text)

        def ask(batch: list[str], lease=None, show: bool = progress) -> None:
            self.calls += len(batch)

            def store(j: int, text: str) -> None:
                key = batch[j]
                if answers[todo[key][0]] is not None:
                    return
                if not isinstance(text, GenerationFailure):
                    with interrupts_deferred(), tally_lock:
                        cached = self.cache is not None and usable_answer(text)  # failures, junk: asked again
                        if cached:
                            self.cache.put_many([(key, identity["backend"], identity.get("model"), text)],
                                                context=self._answer_context())
                        # counted right after the write, with interrupts held back until both are done: the
                        # main thread (which may be the one storing) is never interrupted between the two
                        run_tally.update(answered=run_tally["answered"] + 1, cached=run_tally["cached"] + cached)
                    if memo is not None and usable_answer(text):
                        memo[key] = text
                if key in anew and self.cache is not None and (isinstance(text, GenerationFailure)
                                                               or not usable_answer(text)):
                    self.cache.delete([key])  # asked again, no usable answer: the old one goes, as `forget` dropped it
                if lease is not None and not (self.cache is not None and usable_answer(text)):
                    lease.release([key])  # let another run try it
                settle(key, text)

            try:
                fresh = self.backend.generate([prompts[todo[k][0]] for k in batch], config, on_result=store,
                                              progress=show)
            except JudgeError as e:
                if e.prompt_index is not None:  # name the position in our caller's list
                    e.prompt_index = todo[batch[e.prompt_index]][0]
                if getattr(e, "server_down", False):  # what a new run will find depends on the cache: said here
                    e.message += ("; the answers received are in the response cache. Start it again and run again: "
                                  "cached answers are not asked again" if self.cache is not None else
                                  "; no response cache is in use (--no-cache), so only rows already written are "
                                  "kept. Start it again and run again")
                    e.args = (e.message,)
                raise
            if not isinstance(fresh, (list, tuple)):
                raise JudgeError(f"The {identity['backend']} backend's generate returned {type(fresh).__name__}, "
                                 "not a list of answers (one per prompt, in order)")
            for j, text in enumerate(fresh):  # backends that do not stream results
                store(j, text)

        if todo and self.cache is None:
            ask(list(todo))
        elif todo:
            self._ask_claimed(list(todo), ask, settle, progress, read_cache, anew)
        return [a if a is not None else GenerationFailure("no answer") for a in answers]

    def _answer_context(self) -> int | None:
        """The context, in tokens, the backend stops each row at (an in-process judge's), None where it has none or
        it is not known: kept with each answer cached (`ResponseCache.put_many`)."""
        context_tokens = getattr(self.backend, "context_tokens", None)
        return context_tokens() if context_tokens is not None else None

    def _read_cached(self, keys: Sequence[str], prompt_of: Callable[[str], str],
                     config: GenerationConfig) -> dict[str, str]:
        """The cached answers of these keys, less those the backend says may run past the judge's context
        (`cached_answers_past_context`), which are dropped from the cache and asked again. Only answers that may have
        been written without stopping there are checked (`ResponseCache.get_many_marked`): unmarked ones (an older
        radmetrics wrote them, before rows stopped at the context), and marked ones written under a longer context
        than the judge's now (how it is read changed). An answer written under this context is within its prompt's
        room (one cut there is never cached); re-encoding it, with the check's slack, would ask again, on every run,
        an answer that ended within a few tokens of the context's end."""
        rows = self.cache.get_many_marked(keys)
        found = {key: answer for key, (answer, _, _) in rows.items()}
        check = getattr(self.backend, "cached_answers_past_context", None)
        if check is None or not rows:
            return found
        now = self._answer_context()
        doubtful = [key for key, (_, marked, context) in rows.items()
                    if not marked or context is None or (now is not None and context > now)]
        if not doubtful:
            return found
        past = [key for key, bad in zip(doubtful, check([prompt_of(k) for k in doubtful],
                                                         [found[k] for k in doubtful], config)) if bad]
        if past:
            log.info("%d cached answers may run past the judge's context: asked again", len(past))
            self.cache.delete(past)
            for key in past:
                del found[key]
        return found

    def _ask_claimed(self, keys: list[str], ask, settle, progress: bool,
                     read_cache: Callable[[Sequence[str]], dict[str, str]],
                     anew: Mapping[str, float | None] = MappingProxyType({})) -> None:
        """Claim, ask, and wait for other processes' answers until every key is settled. Their answers are read as
        this run's own cached ones are (``read_cache``: one an older radmetrics wrote may be dropped and asked here)."""
        from tqdm.auto import tqdm

        concurrency = getattr(self.backend, "concurrency", None)
        window = max(16, 4 * int(concurrency)) if concurrency else None  # None: the whole list at once
        with self.cache.lease() as lease, tqdm(total=len(keys), desc=f"judge {self.model}", unit="report",
                                               disable=not progress or window is None) as bar:
            pending = dict.fromkeys(keys)  # ordered; settled keys are removed, so a window reads a prefix
            while pending:
                mine, others = lease.claim(pending.keys(), limit=window, anew=anew)  # anew: asked though answered
                if mine:
                    ask(mine, lease, show=progress and window is None)
                    bar.update(len(mine))
                found = read_cache(self._not_to_ask_again(others, anew)) if others else {}
                for key, text in found.items():
                    settle(key, text)
                bar.update(len(found))
                for key in [*mine, *found]:
                    pending.pop(key, None)
                if not mine and not found:
                    time.sleep(self.poll_seconds)  # every remaining prompt is being asked by another run

    def _not_to_ask_again(self, keys: list[str], anew: Mapping[str, float | None]) -> list[str]:
        """``keys`` (answered, or held by another run), less those this call asks again whose answer is still the one
        to ask again: another run holds them, asking them again too (`--retry-unscored` of a metric sharing the
        prompts, e.g. green and green_f1); its answer is waited for, the old one not read (review 41a: it was, and
        the row marked as asked again)."""
        again = [key for key in keys if key in anew]
        if not again:
            return keys
        written = self.cache.written(again)
        old = {key for key in again if key in written and written[key] == anew[key]}
        return [key for key in keys if key not in old]

    def __repr__(self) -> str:
        return f"<CachedJudge {self.backend!r} cache={self.cache.path if self.cache else None}>"


def _cache_for(cache: Any, backend: JudgeBackend) -> ResponseCache | None:
    if cache is _USE_DEFAULT:
        if not getattr(backend, "cache_by_default", True):  # a plugin's judge need not be a JudgeBackend
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


def check_response_cache(cache: Any) -> None:
    """Open the response cache file a run was given (``--cache PATH``; None, the default cache, and False, none,
    are left to the run: whether a backend uses the default cache is known once it is built), so that an unusable
    file (not SQLite, truncated, a folder) is said in one line before any work, as `score` says it, not as every
    row's reason after the other metrics ran (review 33)."""
    if cache is not None and cache is not False:
        _cache_for(cache, None)  # type: ignore[arg-type]  # a path: the backend is not consulted


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
    # a local folder by its real path: "judge" typed in two directories is two judges
    where = os.path.realpath(model) if isinstance(model, str) and os.path.isdir(model) else model
    backend_key = f"backend:{backend}:{where}:{options_key}"
    with _lock:
        if backend_key not in _instances:
            _instances[backend_key] = _checked_judge(backend, factories[backend](model=model, **options))
        instance = _instances[backend_key]
        response_cache = _cache_for(cache, instance)
        judge_key = f"judge:{backend_key}:{response_cache.path if response_cache else None}"
        if judge_key not in _instances:
            _instances[judge_key] = CachedJudge(instance, response_cache)
        return _instances[judge_key]


def _checked_judge(backend: str, instance: Any) -> Any:
    """What a backend's factory built, held to the Judge protocol before any work (review 41b: a plugin's judge
    without `identity`, or one not built on JudgeBackend, stopped the run with an AttributeError)."""
    missing = [name for name in ("identity", "generate") if not callable(getattr(instance, name, None))]
    if missing:
        raise JudgeError(f"Judge backend '{backend}' built {type(instance).__name__}, which has no "
                         f"{' and no '.join(name + '()' for name in missing)}: a judge needs identity() (what changes "
                         "its answers, a dict with 'backend': part of every cache key) and generate(prompts, config, "
                         "on_result, progress); subclass radmetrics.judge.base.JudgeBackend")
    identity = instance.identity()
    if not isinstance(identity, dict) or not identity.get("backend"):
        raise JudgeError(f"Judge backend '{backend}': identity() of {type(instance).__name__} returned {identity!r}, "
                         "not a dict with 'backend' (what changes its answers: part of every cache key)")
    if not hasattr(instance, "model"):
        raise JudgeError(f"Judge backend '{backend}' built {type(instance).__name__}, which has no `model` attribute "
                         "(the model it asks; None when it has none)")
    return instance


def clear_judges() -> None:
    """Forget every shared judge and cache handle (frees model memory; tests use it)."""
    with _lock:
        _instances.clear()
