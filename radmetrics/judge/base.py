"""What every judge backend is: `generate(prompts, config) -> list[str]` plus an identity for caching."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from radmetrics.types import GenerationConfig

#: called as each prompt's answer is ready, so the cache keeps it even if the run dies later
OnResult = Callable[[int, str], None]


class JudgeBackend:
    """Base for backends. Subclasses set `backend_name` and implement `_generate`."""

    backend_name: str = ""
    #: answers cost nothing to recompute (replay): the cache is skipped by default
    cache_by_default: bool = True

    def __init__(self, model: str | None = None, revision: str | None = None, **options: Any):
        self.model = model
        self.revision = revision
        self.options = options

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
