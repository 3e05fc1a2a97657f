"""Any registered scoring system (GREEN, VERT, FineRadScore, RadCliQ, plugins) as a TRL reward function.

Each call judges the whole batch of completions in one batched judge call through the shared judge and its
response cache (`radmetrics.runner.judge_pairs`, the path `radmetrics.score` takes), so the rewards equal
`radmetrics.score(metric, references, completions, ...)` on the same completions and settings.
"""
from __future__ import annotations

from typing import Any

from radmetrics.rewards.base import RadmetricsReward
from radmetrics.types import GenerationConfig


class JudgeReward(RadmetricsReward):
    """A scoring system's score as a reward; see `reward_function` for the arguments."""

    _transient = ("_judge",)

    def __init__(self, metric: str, *, reference_column: str = "reference", backend: str = "transformers",
                 judge: Any = None, judge_options: dict[str, Any] | None = None,
                 system_options: dict[str, Any] | None = None, on_unscored: Any = "none", scale: Any = None,
                 cache: Any = None, config: GenerationConfig | None = None, judge_memory_gib: float | None = None,
                 name: str | None = None):
        from radmetrics.plugins import get_scoring_system

        self.metric = metric
        self.system = get_scoring_system(metric, **(system_options or {}))  # unknown names fail here, early
        self.higher_is_better = bool(getattr(self.system, "higher_is_better", True))
        super().__init__(name or metric, reference_column, on_unscored, scale)
        self.backend = backend
        self.judge_model = judge if isinstance(judge, str) or judge is None else None
        self.judge_options = dict(judge_options or {})
        if judge_memory_gib is not None:
            from radmetrics.rewards.layouts import memory_capped_options

            model = self.judge_model or getattr(self.system, "default_judge", None)
            self.judge_options = {**memory_capped_options(backend, model, judge_memory_gib, self.judge_options),
                                  **self.judge_options}
        self.cache = cache
        self.config = config or GenerationConfig()
        self._judge = None if self.judge_model is not None or judge is None else judge  # a ready judge object
        #: given a ready judge object (not a model id, not the system's default judge, loaded on first use)
        self._ready_judge = self._judge is not None

    @property
    def judge(self):
        """The shared judge (loaded on first use; the same instance `radmetrics.score` would use)."""
        if self._judge is None:
            from radmetrics.judge import _USE_DEFAULT, get_judge

            model = self.judge_model or getattr(self.system, "default_judge", None)
            self._judge = get_judge(self.backend, model=model,
                                    cache=_USE_DEFAULT if self.cache is None else self.cache, **self.judge_options)
        return self._judge

    def _score(self, references: list[Any], candidates: list[Any]) -> tuple[list[float | None], list[str | None]]:
        from radmetrics.runner import judge_pairs

        judgments = judge_pairs(self.system, self.judge, references, candidates, self.config, progress=False,
                                generated=True)
        self.last_judgments = judgments
        return [j.score for j in judgments], [j.reason for j in judgments]

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.pop("last_judgments", None)
        if self._ready_judge:  # the default judge, loaded on first use, is loaded again after unpickling
            raise TypeError("a reward over a ready judge object cannot be pickled; pass judge=<model id> instead")
        return state


def reward_function(metric: str, *, reference_column: str = "reference", backend: str = "transformers",
                    judge: Any = None, judge_options: dict[str, Any] | None = None,
                    system_options: dict[str, Any] | None = None, on_unscored: Any = "none", scale: Any = None,
                    cache: Any = None, config: GenerationConfig | None = None,
                    judge_memory_gib: float | None = None, name: str | None = None):
    """A TRL reward function (e.g. for `trl.GRPOTrainer(reward_funcs=...)`) scoring completions with `metric`.

    The callable takes TRL's arguments — `prompts`, `completions` (plain strings or conversational message
    lists; the assistant text is the report) and the dataset's columns as keyword arguments — and returns one
    reward per completion. The reference report comes from the dataset column `reference_column`.

    metric: any registered scoring system (`radmetrics list`: green, green_f1, vert, finerad_score, radcliq,
        plugins such as mrscore), or "er2score" (then `judge` is the trained ER²Score folder or Hub id; see
        `radmetrics.rewards.er2score_reward`).
    backend, judge, judge_options, cache, config: the judge, exactly as for `radmetrics.score` (`judge` is a
        model id, or a ready judge object such as `radmetrics.get_judge(...)`); one batched judge call per
        reward call, answers kept in the shared response cache.
    judge_memory_gib: cap on the judge's GPU memory when it shares the GPU with the policy (transformers:
        weights + KV budget sets max_batch_tokens; vllm: gpu_memory_utilization).
    system_options: options of the scoring system (e.g. {"report_score": "max"} for FineRadScore).

    Orientation: higher reward is always better. Lower-is-better metrics (FineRadScore's severity sum,
    RadCliQ's error count, GREEN-EC; the system's `higher_is_better` is False) are negated: a FineRadScore of 3
    gives the reward -3.0. `scale`: a positive factor applied after that, or a (low, high) range in the metric's
    units mapped onto [0, 1] with 1 at the best end, clipped (FineRadScore with (0, 20): 0 errors -> 1.0).

    on_unscored: "none" (default) returns None for a completion the judge's answer gave no score for (an unreadable
    judge output, a failed request, an empty reference; an empty completion is judged as written): TRL (>= 1.6)
    leaves it out of the group baseline and gives it no advantage when it is the only reward function (several:
    `combined_reward`). A number returns that reward instead. Either way the reasons are logged once per call with
    their counts (logger "radmetrics.rewards"), and `<name>/unscored_frac` goes to TRL's metrics — never a
    silent 0.

    The callable's `__name__` (default: the metric name) is the name TRL logs it under (`rewards/green/mean`).
    """
    from radmetrics.plugins import scoring_systems

    if metric == "er2score" and metric not in scoring_systems():
        from radmetrics.errors import RadmetricsError
        from radmetrics.rewards.er2score_reward import MODEL_OPTIONS, ER2ScoreReward

        if not judge:
            raise RadmetricsError("reward_function('er2score') needs judge=<trained ER2Score folder or Hub id> "
                                  "(--judge in reward-check)")
        # a reward model read in this process: judge settings it has no use for are refused in one line, not
        # passed on to fail as a TypeError (or ignored, for the backend)
        if backend != "transformers":
            raise RadmetricsError(f"ER²Score is a reward model run in this process, with no judge backend: "
                                  f"backend={backend!r} does not apply (leave out --backend, --base-url, --replay)")
        if judge_memory_gib is not None:
            raise RadmetricsError("judge_memory_gib sizes a generating judge; ER²Score runs one forward pass per "
                                  "batch (batch_size= in judge_options sets its size)")
        unknown = sorted(set(judge_options or {}) - set(MODEL_OPTIONS))
        if unknown:
            raise RadmetricsError(f"ER²Score takes no option {unknown[0]!r} (judge_options=, --judge-option): it "
                                  f"takes {', '.join(MODEL_OPTIONS)}")
        return ER2ScoreReward(judge, reference_column=reference_column, on_unscored=on_unscored, scale=scale,
                              name=name, **(judge_options or {}))
    from radmetrics.plugins import DEPRECATED_NAMES

    if metric not in scoring_systems() and metric not in DEPRECATED_NAMES:  # the names a reward takes, er2score too
        from radmetrics.errors import UnknownNameError
        from radmetrics.plugins import plugin_install_hint

        raise UnknownNameError("reward metric", metric, [*scoring_systems(), "er2score"], plugin_install_hint(metric))
    return JudgeReward(metric, reference_column=reference_column, backend=backend, judge=judge,
                       judge_options=judge_options, system_options=system_options, on_unscored=on_unscored,
                       scale=scale, cache=cache, config=config, judge_memory_gib=judge_memory_gib, name=name)
