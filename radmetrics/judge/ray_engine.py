"""Scale-out: shard a run across Ray Data actors, one judge per actor (per GPU when there are GPUs).

Every actor opens the same response cache file (SQLite in WAL mode is safe across processes), so answers
already judged are never asked again and an interrupted sharded run resumes like a single one. Results
come back in input order. `radmetrics score --engine ray --actors N`.
"""
from __future__ import annotations

from typing import Any

from radmetrics.types import GenerationConfig, GenerationFailure


class _JudgeActor:
    """Ray Data callable class: builds its judge once, then answers batches of prompts."""

    def __init__(self, backend: str, model: str | None, options: dict[str, Any], cache: Any, config: dict[str, Any]):
        from radmetrics.judge import get_judge

        self.judge = get_judge(backend, model=model, cache=cache, **options)
        config = dict(config)
        config["stop"] = tuple(config.get("stop") or ())
        self.config = GenerationConfig(**config)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        texts = self.judge.generate(list(batch["prompt"]), self.config, progress=False)
        return {"index": batch["index"], "text": [str(t) for t in texts],
                "failure": [t.reason if isinstance(t, GenerationFailure) else "" for t in texts]}


class RayShardedJudge:
    """A `Judge` (radmetrics.judge.base) whose work runs on `actors` Ray actors."""

    def __init__(self, backend: str, model: str | None = None, cache: Any = None, actors: int = 2,
                 batch_size: int = 16, gpus_per_actor: float | None = None, **options: Any):
        from radmetrics.judge import get_judge

        self.backend_name, self.model, self.cache, self.options = backend, model, cache, options
        self.actors, self.batch_size, self.gpus_per_actor = actors, batch_size, gpus_per_actor
        # Built here (weights load lazily, in the actors): a bad option fails now, not in every actor.
        self._identity = get_judge(backend, model=model, cache=None, **options).identity()

    def identity(self) -> dict[str, Any]:
        return {**self._identity, "engine": "ray", "actors": self.actors}

    def generate(self, prompts, config: GenerationConfig | None = None, on_result=None, progress: bool = True):
        import ray

        config = config or GenerationConfig()
        if not ray.is_initialized():
            ray.init(include_dashboard=False, log_to_driver=False)
        gpus = self.gpus_per_actor
        if gpus is None:
            gpus = 1 if ray.cluster_resources().get("GPU", 0) >= self.actors else 0
        dataset = ray.data.from_items([{"index": i, "prompt": p} for i, p in enumerate(prompts)])
        answered = dataset.map_batches(
            _JudgeActor, batch_size=self.batch_size, concurrency=self.actors, num_gpus=gpus,
            num_cpus=0 if gpus else 1, fn_constructor_kwargs={
                "backend": self.backend_name, "model": self.model, "options": self.options,
                "cache": str(self.cache) if self.cache else False, "config": config.to_dict()})
        rows = sorted(answered.take_all(), key=lambda r: r["index"])
        texts = [GenerationFailure(r["failure"]) if r["failure"] else r["text"] for r in rows]
        if on_result:
            for i, text in enumerate(texts):
                on_result(i, text)
        return texts
