"""What every radmetrics reward shares: TRL's call signature, orientation and scaling of scores, unscored
completions as None (or an explicit fallback) with their reasons logged once per call, and running counts.

A subclass implements `_score(references, candidates) -> (scores, reasons)` for one batch: a score per
completion in the metric's own units, or None with the reason.
"""
from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from radmetrics.errors import RadmetricsError
from radmetrics.rewards.completions import completion_text, reference_values, training_step
from radmetrics.types import answer_reached_context, answer_was_cut, is_finite_number

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
    if not is_finite_number(on_unscored):
        raise RadmetricsError(f"on_unscored must be 'none' or a finite number, not {on_unscored!r}")
    return float(on_unscored)


#: the first TRL whose GRPOTrainer leaves a completion out of its group when its reward is None (TRL PR #5902);
#: before it, a None was summed as 0 and entered the group's mean and std
TRL_LEAVES_OUT_NONE = "1.6.0"


def check_trainer_leaves_out_none() -> None:
    """on_unscored='none' with an installed TRL that would read None as reward 0: refused, with what to do (at a
    reward function's first call as a trainer makes it; `score_batch`, e.g. `reward-check`, feeds no trainer)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("trl")
    except PackageNotFoundError:  # no TRL here: the caller's own trainer decides what None means
        return
    from packaging.version import Version

    if Version(installed) < Version(TRL_LEAVES_OUT_NONE):
        raise RadmetricsError(
            f"on_unscored='none' needs trl>={TRL_LEAVES_OUT_NONE}: trl {installed} adds a reward function's None into "
            "the completion's reward as 0, so a completion the judge could not score would get reward 0 (for a "
            "negated lower-is-better metric, the best reward). Install 'trl>=1.6', or pass on_unscored=<number>.")


def check_scale(scale: Any) -> float | tuple[float, float] | None:
    if scale is None:
        return None
    if is_finite_number(scale) and scale > 0:
        return float(scale)
    # finite ends: (0, inf) mapped every score to NaN, which the clipping to [0, 1] made a silent reward 0
    if isinstance(scale, list | tuple) and len(scale) == 2 \
            and all(is_finite_number(v) for v in scale) \
            and scale[1] > scale[0]:
        return float(scale[0]), float(scale[1])
    raise RadmetricsError(f"scale must be a positive number (a factor) or a (low, high) range in the metric's "
                          f"units with finite low < high, not {scale!r}")


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
    # + 0.0: a negated 0 errors is -0.0, which TRL's logs and completions table print as "-0.0"
    return (value * scale if scale is not None else value) + 0.0


def finite_scores(scores: Sequence[float | None], reasons: Sequence[str | None]
                  ) -> tuple[list[float | None], list[str | None]]:
    """A NaN or infinite score (a reward model overflowing in fp16, a plugin's 0/0) is unscored with the reason:
    passed on, it was counted as scored, and scale=(low, high) clipped NaN to 0, a silent worst reward."""
    scores, reasons = list(scores), list(reasons)
    for i, score in enumerate(scores):
        if score is not None and not math.isfinite(score):
            scores[i], reasons[i] = None, f"row {i}: score is not a finite number ({score})"
    return scores, reasons


def summarize_reasons(reasons: Sequence[str | None]) -> Counter:
    """Reasons with their counts, row numbers and per-row details dropped so that equal reasons group
    (`scoring.grouped_reason`)."""
    from radmetrics.scoring import grouped_reason

    return Counter(grouped_reason(r, "unknown reason") for r in reasons)


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
        if self.fallback is None and not self.calls:  # a trainer's call (score_batch is the direct way in)
            check_trainer_leaves_out_none()
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
        scores, reasons = finite_scores(scores, reasons)
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
            # the reason names the CLI's and evaluate's knobs; not for an answer at the end of the judge's context,
            # which a higher limit does not help (its reason says what does)
            if any(answer_was_cut(reason) and not answer_reached_context(reason) for reason in reasons):
                listed += ("; for a reward's judge the limit is reward_function(..., config=GenerationConfig("
                           "max_new_tokens=N))")
            # TRL leaves a completion out only when every reward function returns None for it (combined_reward)
            returned = ("None (left out by TRL when it is the only reward function; next to others TRL counts it "
                        "as 0: see radmetrics.rewards.combined_reward)" if self.fallback is None
                        else f"the fallback {self.fallback}")
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


class CombinedReward:
    """Several reward functions as one: their weighted sum, or None when any of them left the completion unscored.

    TRL's GRPOTrainer (>= 1.6) leaves a completion out of its group only when *every* reward function returns None
    for it; next to other reward functions a None is summed as 0 ("not applicable"). So with
    ``reward_funcs=[green, er2]`` a completion GREEN could not score gets GREEN 0, the worst GREEN (for a negated
    lower-is-better metric, the best). ``reward_funcs=[combined_reward(green, er2)]`` leaves it out instead. Each
    part still logs its own unscored counts and TRL metrics."""

    def __init__(self, functions: Sequence[Any], weights: Sequence[float] | None = None, name: str | None = None):
        if len(functions) < 2 or not all(callable(f) for f in functions):
            raise RadmetricsError("combined_reward takes two or more reward functions")
        weights = [1.0] * len(functions) if weights is None else list(weights)
        if len(weights) != len(functions) or not all(is_finite_number(w) for w in weights):
            raise RadmetricsError(f"combined_reward needs one finite weight per function ({len(functions)}), "
                                  f"not {weights!r}")
        if not any(weights):  # every completion would get 0: a reward that teaches nothing, with no word
            raise RadmetricsError(f"combined_reward's weights are all 0 ({weights!r}): at least one must not be")
        self.functions, self.weights = list(functions), [float(w) for w in weights]
        self.__name__ = name or "+".join(getattr(f, "__name__", "reward") for f in functions)

    def __call__(self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] | None = None,
                 **columns: Any) -> list[float | None]:
        parts = [list(f(prompts=prompts, completions=completions, **columns)) for f in self.functions]
        rewards = [None if any(part[i] is None or math.isnan(part[i]) for part in parts)
                   else sum(w * part[i] for w, part in zip(self.weights, parts))
                   for i in range(len(completions or []))]
        # weights near the float limit (1e308) can overflow the sum to +-inf (or inf - inf = nan): no reward a
        # trainer can use, so the completion is left out as unscored, with a word
        overflowed = [i for i, r in enumerate(rewards) if r is not None and not math.isfinite(r)]
        if overflowed:
            log.warning("%s: the weighted sum overflowed for %d completion(s) (weights %s); left out as unscored",
                        self.__name__, len(overflowed), self.weights)
            for i in overflowed:
                rewards[i] = None
        return rewards


def combined_reward(*functions: Any, weights: Sequence[float] | None = None, name: str | None = None) -> CombinedReward:
    """One TRL reward function from several (see `CombinedReward`): ``reward_funcs=[combined_reward(green, er2)]``."""
    return CombinedReward(functions, weights, name)
