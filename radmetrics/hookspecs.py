"""Hook specifications only (the llm convention). Implementations live in plugins."""
from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("radmetrics")
hookimpl = pluggy.HookimplMarker("radmetrics")


@hookspec
def register_scoring_systems(register):
    """Call ``register(system)`` for each scoring system: an instance of a
    ``radmetrics.scoring.ScoringSystem`` subclass (``name``, ``build_prompt``, ``parse``, ``sample_answer``;
    the optional parts have defaults there)."""


@hookspec
def register_judge_backends(register):
    """Call ``register(name, factory)`` for each judge backend; ``factory(model=..., **options)`` returns a
    ``radmetrics.judge.base.Judge`` (usually a ``JudgeBackend`` subclass with a ``BackendOptions`` dataclass,
    which validates the options). Its ``generate`` receives prompt strings, some of them conversations
    (``radmetrics.conversation``): send ``as_messages(prompt)`` to a chat API, ``flatten(prompt)`` as text."""
