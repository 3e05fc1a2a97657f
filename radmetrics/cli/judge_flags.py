"""The judge flags every judge-calling command shares, declared once: `@judge_flags()` adds them and hands the
command one `JudgeFlags` (backend, model, typed backend options, generation settings, cache, system options).

--backend, --judge, --replay (implies the replay backend), --revision, --base-url, --judge-option KEY=VALUE,
--max-new-tokens, --cache / --no-cache, and --system-option KEY=VALUE (scoring-system options such as VERT's
shots_path and k, FineRadScore's report_score). Values of KEY=VALUE are read as JSON when they parse
(3, true, "x", {"a": 1}), else kept as text.
"""
from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from radmetrics.cli.input_paths import INPUT_FILE
from radmetrics.errors import InputError


def parse_key_values(pairs: tuple[str, ...], flag: str) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError(f"{flag} takes KEY=VALUE, got {pair!r}")
        try:
            options[key] = json.loads(value)
        except ValueError:
            options[key] = value
    return options


@dataclass
class JudgeFlags:
    backend: str = "transformers"
    model: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    max_new_tokens: int = 1024
    #: a path, None for the default cache, False for none
    cache: Any = None
    system_options: dict[str, Any] = field(default_factory=dict)
    #: every --judge given, for commands that grade several judges in one run (judge_flags(several_judges=True))
    judges: tuple[str, ...] = ()

    @classmethod
    def from_values(cls, backend: str = "transformers", judge: str | None = None, replay: str | None = None,
                    revision: str | None = None, base_url: str | None = None, judge_option: tuple[str, ...] = (),
                    max_new_tokens: int = 1024, cache_path: str | None = None, no_cache: bool = False,
                    system_option: tuple[str, ...] = ()) -> JudgeFlags:
        judges: tuple[str, ...] = ()
        if isinstance(judge, (tuple, list)):  # --judge given several times
            judges = tuple(judge)
            judge = judges[0] if judges else None
        options = parse_key_values(judge_option, "--judge-option")
        if replay:
            backend, options["path"] = "replay", replay
        if revision:
            options["revision"] = revision
        if base_url:
            options["base_url"] = base_url
        return cls(backend, judge, options, max_new_tokens, False if no_cache else cache_path,
                   parse_key_values(system_option, "--system-option"), judges)

    def cache_files(self) -> tuple[Path, ...]:
        """The response cache's files this run may open (the database and SQLite's files beside it): an output
        must never be one of them."""
        from radmetrics.judge.cache import default_cache_path

        path = None if self.cache is False else default_cache_path() if self.cache is None else Path(self.cache)
        if path is None:
            return ()
        path = path.expanduser()
        return (path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal")))

    def config(self):
        from radmetrics.types import GenerationConfig

        return GenerationConfig(max_new_tokens=self.max_new_tokens)

    def score_kwargs(self) -> dict[str, Any]:
        """The judge arguments of radmetrics.score (and of the commands built on it)."""
        return {"backend": self.backend, "judge": self.model, "judge_options": dict(self.options),
                "cache": self.cache, "config": self.config()}

    def build_judge(self, system=None):
        """The shared judge these flags name (the system's default judge when no --judge is given)."""
        from radmetrics.runner import build_judge

        return build_judge(self.backend, self.model, self.options, self.cache, system=system)


def judge_flags(cache: bool = True, system_options: bool = True, backend_default: str = "transformers",
                several_judges: bool = False, shared_answers: bool = False,
                judge_default: str = "default: the metric's published judge",
                system_option_help: str = ("Scoring-system option, repeatable (e.g. k=5 shots_path=shots.jsonl for "
                                           "VERT, report_score=max for FineRadScore).")
                ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Adds the judge flags to a click command; the command receives `judge_flags: JudgeFlags`.
    several_judges: --judge is repeatable (JudgeFlags.judges lists them; .model is the first).
    shared_answers: the command runs several metrics over the same pairs; with --no-cache a prompt is still asked
    once in the run (`radmetrics.judge.answers_shared_in_run`), so GREEN's variants read one analysis.
    judge_default: what --help says runs without --judge (a command with no metric has no published judge);
    system_option_help: --system-option's help (a command with no scoring system has options of its own)."""
    names = ["backend", "judge", "replay", "revision", "base_url", "judge_option", "max_new_tokens"]
    options = [
        click.option("--backend", "-b", default=backend_default, show_default=True,
                     help="Judge backend: transformers, openai, vllm, replay, or a plugin's (`radmetrics list`)."),
        click.option("--judge", "-j", default=None, multiple=several_judges,
                     help=f"Judge model id or path ({judge_default})"
                          + ("; repeat to grade several judges in one run." if several_judges else ".")),
        click.option("--replay", type=INPUT_FILE, default=None,
                     help="Recorded {prompt, response} JSONL; implies --backend replay."),
        click.option("--revision", default=None, help="Model revision (commit, tag or branch) of the judge."),
        click.option("--base-url", default=None, help="OpenAI-compatible server URL (backend openai)."),
        click.option("--judge-option", "judge_option", multiple=True, metavar="KEY=VALUE",
                     help="Backend option, repeatable (e.g. max_batch_size=16); unknown ones are an error."),
        click.option("--max-new-tokens", default=1024, show_default=True, type=click.IntRange(min=1),
                     help="Generation limit per judge answer."),
    ]
    if cache:
        names += ["cache_path", "no_cache"]
        options += [click.option("--cache", "cache_path", default=None,
                                 help="Response cache file (default $RADMETRICS_CACHE, else "
                                      "~/.cache/radmetrics/judgments.sqlite)."),
                    click.option("--no-cache", is_flag=True, help="Do not read or write the response cache.")]
    if system_options:
        names.append("system_option")
        options.append(click.option("--system-option", "system_option", multiple=True, metavar="KEY=VALUE",
                                    help=system_option_help))

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> Any:
            values = {name: kwargs.pop(name) for name in names}
            if not shared_answers:
                return command(judge_flags=JudgeFlags.from_values(**values), **kwargs)
            from radmetrics.judge import answers_shared_in_run

            with answers_shared_in_run():
                return command(judge_flags=JudgeFlags.from_values(**values), **kwargs)

        for option in reversed(options):
            wrapper = option(wrapper)
        return wrapper

    return decorate
