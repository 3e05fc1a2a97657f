"""Plain data that flows between scoring systems, the judge and the outputs."""
from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass, field
from typing import Any

from radmetrics.taxonomy import ErrorCounts

#: precision names a judge's or reward model's dtype option takes ("auto" besides) -> the torch dtype's name
TORCH_DTYPE_NAMES = {"bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16",
                     "fp32": "float32", "float32": "float32"}
#: what a judge's or reward model's dtype option takes ("auto": fp32 on CPU; on a GPU the checkpoint's precision for a
#: judge, bf16 for ER²Score)
DTYPE_CHOICES = ("auto", *TORCH_DTYPE_NAMES)


def is_whole_number(value: Any) -> bool:
    """An int that is not a bool (True is 1 to Python, not a count): what a count or size setting must be."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_finite_number(value: Any) -> bool:
    """An int or float, not a bool, neither nan nor infinite (every comparison with nan is false, so a bound alone
    lets it through): what a rate, weight or share setting must be."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass
class Judgment:
    """What a scoring system read from one judge output.

    `score is None` means unscored; `reason` then says why. `raw` always keeps the judge's text.
    `error_counts`: the errors per category (radmetrics.taxonomy) the judge counted; None for systems that
    count none (or an answer that has no counts).
    """

    score: float | None
    parsed: bool
    reason: str | None = None
    raw: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    error_counts: ErrorCounts | None = None

    @classmethod
    def unscored(cls, reason: str, raw: str = "", **details: Any) -> Judgment:
        return cls(score=None, parsed=False, reason=reason, raw=raw, details=dict(details))

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-ready data: new dicts and lists all the way down (safe to change), built without
        `dataclasses.asdict`'s deep copy of every leaf (a quarter of a cached GREEN run under cProfile)."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def significant_errors(self) -> list[int] | None:
        """Clinically significant errors per category (a)-(f) of a read answer; None when the answer was not
        read or its system counts no errors. What meta-eval and lm-eval compare with expert counts."""
        if not self.parsed or self.error_counts is None:
            return None
        return self.error_counts.significant_list()


_LEAVES = (str, int, float, bool, type(None))


def _plain(value: Any) -> Any:
    if type(value) in _LEAVES:  # most values: returned before any other check
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value) if type(value) in (list, tuple) else [_plain(v) for v in value]
    return value


@dataclass
class GreenJudgment(Judgment):
    """Judgment of a GREEN-format analysis: counts per error category (a)-(f)."""

    significant: dict[str, int] = field(default_factory=dict)
    insignificant: dict[str, int] = field(default_factory=dict)
    matched_findings: int | None = None
    explanation: str | None = None


@dataclass(frozen=True)
class GenerationConfig:
    """Generation settings; part of every cache key and every result fingerprint.

    Greedy by default (temperature 0), as GREEN's official inference (`do_sample=False`).
    """

    max_new_tokens: int = 1024
    #: force at least this many new tokens (EOS suppressed until then); benchmarks use it for equal loads
    min_new_tokens: int = 0
    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int | None = None

    def __post_init__(self) -> None:
        # checked here, where every entry point (radmetrics.score, evaluate.load, rewards, a plugin) builds one:
        # max_new_tokens=0 or -1 went to the server as max_tokens=0/-1, temperature=nan failed every row "judge call
        # failed: Out of range float values", and stop="\n\n" was read as the stops "\n" and "\n" (a str is a
        # tuple of characters)
        from radmetrics.errors import InputError

        def whole(name: str, least: int) -> int:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
                raise InputError(f"GenerationConfig {name} must be a whole number of at least {least}, not {value!r}")
            return value

        def finite(name: str, low: float, high: float, low_open: bool) -> None:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or not (
                    (low < value if low_open else low <= value) and value <= high):
                where = f"{'above' if low_open else 'at least'} {low:g}" + (
                    f" and at most {high:g}" if math.isfinite(high) else "")
                raise InputError(f"GenerationConfig {name} must be a number {where}, not {value!r}")

        whole("max_new_tokens", 1)
        if whole("min_new_tokens", 0) > self.max_new_tokens:
            # every answer would run to max_new_tokens with its end held back: all cut, all unscored
            raise InputError(f"GenerationConfig min_new_tokens ({self.min_new_tokens}) is above max_new_tokens "
                             f"({self.max_new_tokens})")
        finite("temperature", 0, math.inf, False)
        finite("top_p", 0, 1, True)
        if self.seed is not None:
            whole("seed", 0)
        stop = (self.stop,) if isinstance(self.stop, str) else self.stop  # one stop text, as the OpenAI API takes
        if not isinstance(stop, (tuple, list)) or not all(isinstance(s, str) and s for s in stop):
            raise InputError(f"GenerationConfig stop must be texts (a tuple of non-empty strings), not {self.stop!r}")
        object.__setattr__(self, "stop", tuple(stop))

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["stop"] = list(self.stop)
        return d


class CutAnswer(str):
    """A judge answer that ran into the token limit (``max_new_tokens``) instead of ending by itself: the text as
    far as it got. What it says last may be cut mid-list or mid-number (a GREEN matched-findings list cut after 3
    of 5 items reads as 3), so the runner leaves its row unscored with `reason` (the text kept to read) and the
    response cache does not keep it. Backends return it where they know why generation stopped: the OpenAI
    backend from ``finish_reason == "length"``, vLLM likewise, the transformers backend when a row reached
    ``max_new_tokens`` without its end token, or the end of the model's context (``context``: its positions; the
    prompt left ``limit`` of them to the answer)."""

    limit: int | None
    context: int | None

    def __new__(cls, text: str, limit: int | None = None, context: int | None = None) -> CutAnswer:
        obj = super().__new__(cls, text)
        obj.limit = limit
        obj.context = context
        return obj

    def __reduce__(self):  # pickle, copy (a plugin backend's answers may cross processes)
        return (CutAnswer, (str(self), self.limit, self.context))

    @property
    def reason(self) -> str:
        if self.context:
            return (f"{CONTEXT_CUT_REASON} ({self.context:,} tokens; the prompt left {self.limit:,} to "
                    "the answer) before it ended: what it says last may be cut (a list, a number); shorten the "
                    "reports, or use a judge with a longer context")
        at = f" (max_new_tokens={self.limit})" if self.limit else ""
        return (f"{CUT_REASON}{at} before it ended: what it says last may be cut (a list, a number); raise "
                "--max-new-tokens (max_new_tokens= in evaluate.load)")


#: how the reason of a row whose answer ran into the token limit starts (`CutAnswer.reason`)
CUT_REASON = "the judge's answer reached the token limit"
#: ... and of a row whose answer reached the end of the judge's context (a higher max_new_tokens does not help)
CONTEXT_CUT_REASON = CUT_REASON + " of the judge's context"
#: how the reason of a row whose judge call failed (no answer: a server down, a timeout) starts
JUDGE_CALL_FAILED = "judge call failed: "


def answer_was_cut(reason: object) -> bool:
    """Whether an unscored row's reason says its answer ran into the token limit (a written row read back)."""
    return isinstance(reason, str) and reason.startswith(CUT_REASON)


def answer_reached_context(reason: object) -> bool:
    """Whether a cut answer (`answer_was_cut`) stopped at the end of the judge's context, not at max_new_tokens."""
    return isinstance(reason, str) and reason.startswith(CONTEXT_CUT_REASON)


def judge_call_failed(reason: object) -> bool:
    """Whether an unscored row's reason says its judge call failed (no answer), not that the answer was unreadable."""
    return isinstance(reason, str) and reason.startswith(JUDGE_CALL_FAILED)


def prompt_filled_context(reason: object) -> bool:
    """Whether a failed judge call (`judge_call_failed`) is a prompt that leaves its answer no position of the
    judge's context (`judge.base.context_failure`): not sent, and asked again it fails the same."""
    return (judge_call_failed(reason) and reason[len(JUDGE_CALL_FAILED):].startswith("the prompt is ")
            and " the judge's context of " in reason)


def call_failed_for_now(reason: object) -> bool:
    """A failed judge call a rerun may answer: not a prompt the judge's context cannot hold (`prompt_filled_context`)."""
    return judge_call_failed(reason) and not prompt_filled_context(reason)


def cut_at_max_new_tokens(reason: object) -> bool:
    """An answer cut at max_new_tokens (a higher limit helps), not at the end of the judge's context."""
    return answer_was_cut(reason) and not answer_reached_context(reason)


def context_too_short(reason: object) -> bool:
    """A row the judge's context was too short for: a prompt it cannot hold (not sent), or an answer that reached
    its end. Neither a rerun nor a higher max_new_tokens helps; shorter reports or a longer-context judge do."""
    return prompt_filled_context(reason) or answer_reached_context(reason)


def cut_at_limit(text: str, limit: int | None, cut: bool) -> str:
    """``text`` as a `CutAnswer` when ``cut`` (generation stopped at the limit, not by itself), else as is."""
    return CutAnswer(text, limit) if cut else text


class GenerationFailure(str):
    """A judge answer that failed for good (after retries): behaves as an empty string, carries why.

    Backends return it in place of a response so that one failed row never stops the run; the
    runner turns it into an unscored row and never caches it.
    """

    reason: str

    def __new__(cls, reason: str) -> GenerationFailure:
        obj = super().__new__(cls, "")
        obj.reason = reason
        return obj


def answer_problem(answer: str) -> str | None:
    """Why a judge answer cannot be used as written: no answer (`GenerationFailure`), or one cut at the token limit
    (`CutAnswer`: a rewritten report cut mid-sentence is not a report); None when it can."""
    if isinstance(answer, GenerationFailure):
        return f"{JUDGE_CALL_FAILED}{answer.reason}"
    if isinstance(answer, CutAnswer):
        return answer.reason
    return None
