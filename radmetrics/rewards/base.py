"""What every radmetrics reward shares: TRL's call signature, orientation and scaling of scores, unscored
completions as None (or an explicit fallback) with their reasons logged once per call, and running counts.

A subclass implements `_score(references, candidates) -> (scores, reasons)` for one batch: a score per
completion in the metric's own units, or None with the reason.
"""
from __future__ import annotations

import logging
import math
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from radmetrics.errors import RadmetricsError
from radmetrics.rewards.completions import completion_text, reference_values, training_step

log = logging.getLogger("radmetrics.rewards")


@dataclass
class RewardBatch:
    """One reward call: what TRL got back, the metric's own scores, and why rows went unscored."""

    rewards: list[float | None]
    scores: list[float | None]
    reasons: list[str | None]
    seconds: float
    step: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def unscored(self) -> int:
        return sum(s is None for s in self.scores)


def check_on_unscored(on_unscored: Any) -> float | None:
    """"none"/None -> None (TRL ignores the row); a number -> that reward, used as given."""
    if on_unscored is None or (isinstance(on_unscored, str) and on_unscored.lower() == "none"):
        return None
    if isinstance(on_unscored, bool) or not isinstance(on_unscored, int | float) or not math.isfinite(on_unscored):
        raise RadmetricsError(f"on_unscored must be 'none' or a finite number, not {on_unscored!r}")
    return float(on_unscored)


def check_scale(scale: Any) -> float | tuple[float, float] | None:
    if scale is None:
        return None
    if isinstance(scale, int | float) and not isinstance(scale, bool) and math.isfinite(scale) and scale > 0:
        return float(scale)
    if isinstance(scale, list | tuple) and len(scale) == 2 and all(isinstance(v, int | float) for v in scale) \
            and scale[1] > scale[0]:
        return float(scale[0]), float(scale[1])
    raise RadmetricsError(f"scale must be a positive number (a factor) or a (low, high) range in the metric's "
                          f"units with low < high, not {scale!r}")


def orient(score: float, higher_is_better: bool, scale: float | tuple[float, float] | None) -> float:
    """The reward for a score: higher is always better.

    scale None: the score itself, negated when the metric is lower-is-better (FineRadScore 3 -> -3).
    scale k: that, times k. scale (low, high): the score mapped linearly onto [0, 1] with 1 the best end
    (low for lower-is-better metrics), clipped; e.g. FineRadScore with (0, 20): 0 errors -> 1, >= 20 -> 0.
    """
    if isinstance(scale, tuple):
        low, high = scale
        value = (score - low) / (high - low) if higher_is_better else (high - score) / (high - low)
        return min(1.0, max(0.0, value))
    value = score if higher_is_better else -score
    return value * scale if scale is not None else value


def summarize_reasons(reasons: Sequence[str | None]) -> Counter:
    """Reasons with their counts, row numbers dropped so that equal reasons group."""
    return Counter(re.sub(r"^row \d+: ", "", r or "unknown reason") for r in reasons)


class RadmetricsReward:
    """Base of the reward callables (see module docstring). `__name__` is what TRL logs the reward under."""

    higher_is_better: bool = True
    #: False when the last batch's answers came from another reward function's computation (shared forward pass)
    _computed: bool = True

    def __init__(self, name: str, reference_column: str = "reference", on_unscored: Any = "none",
                 scale: Any = None):
        self.__name__ = name
        self.reference_column = reference_column
        self.fallback = check_on_unscored(on_unscored)
        self.scale = check_scale(scale)
        self.calls = 0
        self.completions = 0
        self.unscored = 0
        self.seconds = 0.0
        self.last: RewardBatch | None = None

    # -- TRL's reward-function signature -------------------------------------------------------------------
    def __call__(self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] | None = None,
                 **columns: Any) -> list[float | None]:
        completions = list(completions or [])
        references = reference_values(self.reference_column, completions, columns)
        candidates = [completion_text(c) for c in completions]
        step = training_step(columns, self.calls)
        batch = self.score_batch(references, candidates, step=step)
        self._report(batch, columns.get("log_metric"), columns.get("log_extra"))
        return batch.rewards

    def score_batch(self, references: Sequence[Any], candidates: Sequence[Any], step: int | None = None
                    ) -> RewardBatch:
        """Score one batch of report pairs and turn the scores into rewards (also outside a trainer)."""
        start = time.perf_counter()
        scores, reasons = self._score(list(references), list(candidates))
        seconds = time.perf_counter() - start
        rewards = [self.fallback if s is None else orient(s, self.higher_is_better, self.scale) for s in scores]
        batch = RewardBatch(rewards=rewards, scores=scores, reasons=reasons, seconds=seconds,
                            step=self.calls if step is None else step, extra={"computed": self._computed})
        self.calls += 1
        self.completions += len(scores)
        self.unscored += batch.unscored
        self.seconds += seconds
        self.last = batch
        return batch

    def _score(self, references: list[Any], candidates: list[Any]) -> tuple[list[float | None], list[str | None]]:
        raise NotImplementedError

    def _report(self, batch: RewardBatch, log_metric: Any = None, log_extra: Any = None) -> None:
        """One log line per call when rows went unscored (with counts per reason), and TRL metrics."""
        n, k = len(batch.scores), batch.unscored
        if k:
            reasons = summarize_reasons([r for s, r in zip(batch.scores, batch.reasons) if s is None])
            listed = "; ".join(f"{reason} (x{count})" for reason, count in reasons.most_common())
            returned = "None (ignored by the trainer)" if self.fallback is None else f"the fallback {self.fallback}"
            log.warning("reward %s, step %d: %d of %d completions unscored, returned %s: %s",
                        self.__name__, batch.step, k, n, returned, listed)
        if callable(log_metric) and n:
            log_metric(f"{self.__name__}/unscored_frac", k / n)
            if batch.extra.get("computed", True):  # not for answers another reward function already computed
                log_metric(f"{self.__name__}/samples_per_s", n / batch.seconds if batch.seconds > 0 else 0.0)
        if callable(log_extra):  # every call, so that the completions table's column stays aligned
            log_extra(f"{self.__name__}_unscored_reason", [r if s is None else None
                                                         for s, r in zip(batch.scores, batch.reasons)])

    # -- pickling (TRL's picklable reward forms): heavy handles are rebuilt on first use -------------------
    _transient: tuple[str, ...] = ()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for key in self._transient:
            state[key] = None
        state["last"] = None
        return state

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.__name__}>"
