"""The scoring contract: every part a scoring system may provide, with its default. Nothing here calls a model.

A scoring system turns a (reference, candidate) pair into a judge prompt and the judge's text into a
Judgment, and the Judgments into a corpus summary. Subclasses must implement `build_prompt` and `parse`
(pure functions of strings) and `sample_answer`; everything else has a default the runner relies on:

    build_prompt(reference, candidate) -> str          required
    parse(text) -> Judgment                            required; never raises for bad text (unscored + reason)
    sample_answer(reference, candidate) -> str         a realistic answer in this system's format
    input_warnings(reference, candidate) -> list[str]  default: none
    max_retries / retry_prompt(prompt, judgment, n)    default: no re-asks; re-asks go to rows whose
                                                       judgment has details["retryable"] = True
    finalize(judgment, reference, candidate)           default: the judgment as parsed
    aggregate(judgments, **options) -> dict            default: mean, std, unscored counts;
                                                       options it takes are listed in `aggregate_options`
    row_mean_names / row_means(judgment) -> dict       default: none; per-row values whose mean over scored
                                                       rows `aggregate` reports (streaming keeps sums of them)
    pair_in_prompt(prompt) -> (reference, candidate)   which pair a prompt of this system is about
    configure(**options) -> copy                       system options (`--system-option KEY=VALUE`), checked
                                                       against their defaults' kinds and `option_choices`
"""
from __future__ import annotations

import copy
import functools
import math
import re
from collections.abc import Sequence
from typing import Any

from radmetrics.errors import RadmetricsError
from radmetrics.types import Judgment


_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}
#: the least value of counting options wherever a system has them (re-asks, few-shot examples, words kept)
_LEAST = {"max_retries": 0, "k": 0, "max_words": 1}
#: and the most: each re-ask is a conversation holding every earlier answer of the row, so a few dozen outgrow any
#: judge's context; `max_retries=1e30` asked until the judge failed (review 32)
_MOST = {"max_retries": 20}


def option_value(system: str, key: str, value: Any, default: Any) -> Any:
    """A system option's value, of the kind of its default: a switch takes a bool or true/false/yes/no/on/off/1/0
    in any case (the string "False" was taken as a true value), a count a whole number, a number a finite one, a
    text a string; an option whose default is None takes anything. Anything else is a one-line error."""
    def refuse(kind: str) -> RadmetricsError:
        return RadmetricsError(f"Scoring system '{system}': option {key} takes {kind}, not {value!r}")

    if default is None or isinstance(default, (dict, list, tuple)):
        return value
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower() if isinstance(value, (str, int)) else None
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
        raise refuse("true or false")
    if isinstance(default, int):
        try:
            number = float(value) if isinstance(value, str) else value
        except ValueError:
            raise refuse("a whole number") from None
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not float(number).is_integer():
            raise refuse("a whole number")
        return int(number)
    if isinstance(default, float):
        try:
            number = float(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else value
        except ValueError:
            raise refuse("a number") from None
        if not isinstance(number, float) or not math.isfinite(number):
            raise refuse("a finite number")
        return number
    if isinstance(default, str) and not isinstance(value, str):
        raise refuse("text")
    return value


class ScoringSystem:
    name: str = ""
    #: bumped whenever the prompt text changes; travels in every result fingerprint
    prompt_version: str = "1"
    #: bumped whenever parsing changes what a given text scores
    parser_version: str = "1"
    #: the key under which `compute()` / the CLI report the corpus score
    score_key: str = "score"
    #: path of the room's evaluate module file (e.g. radmetrics/green/green.py), if it has one
    evaluate_module: str | None = None
    #: the judge model used when the user names none
    default_judge: str | None = None
    #: direction of `score`: meta-evaluation orients correlations so that positive means agreement
    higher_is_better: bool = True
    #: re-asks for an answer that could not be read and whose judgment says `retryable` (see retry_prompt)
    max_retries: int = 0
    #: the keyword options `aggregate` understands (e.g. GREEN's "summary"); others are reported and dropped
    aggregate_options: tuple[str, ...] = ()
    #: per-row values whose mean over the scored rows `aggregate` reports besides the score (see `row_means`):
    #: name -> None (one number) or the keys of a dict of numbers. Declared so that a streaming run
    #: (radmetrics.streaming) keeps running sums of them instead of every judgment.
    row_mean_names: dict[str, tuple[str, ...] | None] = {}
    #: the values a text option may take (e.g. FineRadScore's report_score); `configure` refuses any other
    option_choices: dict[str, tuple[str, ...]] = {}

    def build_prompt(self, reference: str, candidate: str) -> str:
        raise NotImplementedError

    def parse(self, text: str) -> Judgment:
        raise NotImplementedError

    def sample_answer(self, reference: str, candidate: str) -> str:
        """A realistic judge answer for this pair in this system's format, read as a real one by `parse`
        (documentation, and the fake judge of the tests)."""
        raise NotImplementedError(f"scoring system '{self.name}' ships no sample answer")

    def input_warnings(self, reference: str, candidate: str) -> list[str]:
        """What the prompt changes about the reports (e.g. cut to a length limit); kept in the row's details."""
        return []

    def retry_prompt(self, prompt: str, judgment: Judgment, attempt: int) -> str:
        """The prompt of re-ask number `attempt` after `judgment` could not be read (used when max_retries > 0)."""
        return prompt

    def finalize(self, judgment: Judgment, reference: str, candidate: str) -> Judgment:
        """A parsed judgment completed with what depends on the reports as well as the judge's text."""
        return judgment

    def pair_in_prompt(self, prompt: str) -> tuple[str, str] | None:
        """The (reference, candidate) that `build_prompt` (or a re-ask built on it) turned into `prompt`;
        None when `prompt` is not one of this system's. Checked by rebuilding the prompt, so a match is exact.
        Works for prompts laid out as text + reference + text + candidate + text (either order); systems
        that rewrite the reports more deeply override it."""
        return _pair_by_template(self, prompt)

    def configure(self, **options: Any) -> ScoringSystem:
        """A copy with options set as attributes (`system_options=`, `--system-option`); an unknown option, or
        a value of another kind than the option's default (`option_value`), is an error naming the valid ones."""
        clone = copy.copy(self)
        valid = self.option_names()
        for key, value in options.items():
            if key not in valid:
                raise RadmetricsError(f"Scoring system '{self.name}' has no option '{key}'. "
                                      f"Its options: {', '.join(valid) or 'none'}")
            value = option_value(self.name, key, value, getattr(type(self), key, None))
            least, most, choices = _LEAST.get(key), _MOST.get(key), self.option_choices.get(key)
            if isinstance(value, (int, float)):
                bound = (f"at least {least}" if least is not None and value < least
                         else f"at most {most}" if most is not None and value > most else None)
                if bound:
                    raise RadmetricsError(f"Scoring system '{self.name}': option {key} must be {bound}, "
                                          f"not {value!r}")
            if choices is not None and value not in choices:
                raise RadmetricsError(f"Scoring system '{self.name}': {key} {value!r} is not one of "
                                      f"{', '.join(choices)}")
            setattr(clone, key, value)
        return clone

    #: class attributes that describe the system rather than configure it
    _DESCRIPTIVE = frozenset({"name", "score_key", "prompt_version", "parser_version", "evaluate_module",
                              "higher_is_better", "aggregate_options", "row_mean_names", "option_choices"})

    def option_names(self) -> list[str]:
        """The settings `configure` accepts: public data attributes (e.g. VERT's k, shots_path, seed)."""
        names = set()
        for klass in type(self).__mro__:
            for key, value in vars(klass).items():
                if not key.startswith("_") and key not in self._DESCRIPTIVE and not callable(value) \
                        and not isinstance(value, (property, classmethod, staticmethod, functools.cached_property)):
                    names.add(key)
        return sorted(names)

    def fingerprint(self) -> dict[str, Any]:
        """What names this system's scoring: its name, prompt and parser versions, and the options set away from
        their defaults (`configure`: FineRadScore's report_score, VERT's variant and k...). Results say which
        options made them, and a run continued with other options starts over (review 18: the rows of two
        settings were mixed in one file)."""
        found = {"scoring_system": self.name, "prompt_version": self.prompt_version,
                 "parser_version": self.parser_version}
        options = {key: _plain(getattr(self, key)) for key in self.option_names()
                   if getattr(self, key) != getattr(type(self), key, None)}
        if options:  # unconfigured systems keep the fingerprint they always had
            found["options"] = options
        return found

    def row_means(self, judgment: Judgment) -> dict[str, Any] | None:
        """This row's values for `row_mean_names` (each a number, or a dict of numbers by key); None when the
        row adds none (e.g. unscored). Default: no such values."""
        return None

    def aggregate(self, judgments: Sequence[Judgment], **options: Any) -> dict[str, Any]:
        """Corpus summary: mean and population std (ddof=0, as GREEN's np.std) over scored rows, and the means
        the system declares in `row_mean_names`."""
        return {**mean_std_summary(self.score_key, judgments), **row_means_summary(self, judgments)}


_REF_MARK, _CAND_MARK = "\x00reference\x00", "\x00candidate\x00"


def _plain(value: Any) -> Any:
    """An option's value as JSON can hold it (a path as its text)."""
    return value if value is None or isinstance(value, (bool, int, float, str, list, dict)) else str(value)


def _pair_by_template(system: ScoringSystem, prompt: str) -> tuple[str, str] | None:
    template = system.build_prompt(_REF_MARK, _CAND_MARK)
    if template.count(_REF_MARK) != 1 or template.count(_CAND_MARK) != 1:
        return None
    first, second = sorted((_REF_MARK, _CAND_MARK), key=template.index)
    prefix, rest = template.split(first)
    middle, suffix = rest.split(second)
    if not prompt.startswith(prefix):
        return None
    body = prompt[len(prefix):]
    cut = body.find(middle)
    # the text after the second report starts with the template's next line (few-shot blocks may follow)
    line = re.search(r"\S[^\n]*", suffix)
    head = suffix[: line.end()] if line else ""
    end = body.find(head, cut + len(middle)) if head else len(body)
    if cut < 0 or end < 0:
        return None
    values = {first: body[:cut], second: body[cut + len(middle):end]}
    pair = values[_REF_MARK], values[_CAND_MARK]
    return pair if prompt.startswith(system.build_prompt(*pair)) else None


def word_comparison(reference: str, candidate: str) -> tuple[list[str], list[str], list[str]]:
    """(shared, candidate-only, reference-only) lower-cased words of two reports, sorted: the plain comparison
    the rooms' sample answers are made of (a stand-in for a judge's findings, not a judgment)."""
    ref, cand = set(reference.lower().split()), set(candidate.lower().split())
    return sorted(ref & cand), sorted(cand - ref), sorted(ref - cand)


def mean_std_summary(key: str, judgments: Sequence[Judgment]) -> dict[str, Any]:
    scores = [j.score for j in judgments if j.score is not None]
    n = len(scores)
    mean = sum(scores) / n if n else None
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / n) if n else None
    return {
        key: mean,
        f"{key}_std": std,
        "num_scored": n,
        "num_unscored": len(judgments) - n,
        "unscored_reasons": count_reasons(judgments),
    }


class RowMeans:
    """Running means of a system's `row_means` values, summed in row order: the same numbers whether the
    judgments are held (`aggregate`) or streamed past (radmetrics.streaming). A name no row gave is None
    (per key for dict values)."""

    def __init__(self, system: ScoringSystem):
        self.system = system
        self.sums: dict[str, Any] = {name: (dict.fromkeys(keys, 0) if keys is not None else 0)
                                     for name, keys in system.row_mean_names.items()}
        self.count = 0

    def add(self, judgment: Judgment) -> None:
        values = self.system.row_means(judgment)
        if values is None:
            return
        self.count += 1
        for name, keys in self.system.row_mean_names.items():
            if keys is None:
                self.sums[name] += values[name]
            else:
                for key in keys:
                    self.sums[name][key] += values[name][key]

    def result(self) -> dict[str, Any]:
        n = self.count
        return {name: ({k: (v / n if n else None) for k, v in total.items()} if isinstance(total, dict)
                       else (total / n if n else None)) for name, total in self.sums.items()}


def row_means_summary(system: ScoringSystem, judgments: Sequence[Judgment]) -> dict[str, Any]:
    means = RowMeans(system)
    for judgment in judgments:
        means.add(judgment)
    return means.result()


#: how a reason names the input row it is about: "row 3: " (an index into the lists given) or "input line 4: " (of
#: an input file). A reason that starts so is the input's problem, never the judge's ("line 0: ..." from
#: FineRadScore is a line of the candidate report: the judge's).
ROW_PREFIX = re.compile(r"^(?:row|input line) \d+: ")


#: the part of a reason that differs from row to row where the cause is the same: the positions a prompt left its
#: answer in the judge's context (`CutAnswer.reason`). Counted with it, each row of a run whose reports fill the
#: context was a reason of its own (the summary's table listed the same truncated line once per row).
PER_ROW_DETAIL = re.compile(r"; the prompt left [\d,]+ to the answer")


def grouped_reason(reason: str | None, unknown: str = "unknown") -> str:
    """A reason as counted with equal ones: row and line numbers (`ROW_PREFIX`) and per-row details
    (`PER_ROW_DETAIL`) dropped; each row's own reason keeps them."""
    return PER_ROW_DETAIL.sub("", ROW_PREFIX.sub("", reason or unknown))


def is_input_problem(reason: str | None) -> bool:
    return bool(reason and ROW_PREFIX.match(reason))


#: distinct reasons a summary counts one by one. A reason may quote the judge's line, so a judge that drifts on
#: every row gives every row its own reason: the summary (and a streaming run's memory) grew with the input
#: (review 33: 3,000 rows, 3,000 reasons). Rows whose reason is first seen after these are counted together.
MAX_REASONS = 1000
OTHER_REASONS = (f"other reasons (the summary counts the first {MAX_REASONS:,} distinct reasons one by one; each "
                 "row's own is in its reason)")


def add_reason(reasons: dict[str, int], reason: str, n: int = 1) -> None:
    """Count ``n`` rows under ``reason``, or under OTHER_REASONS once MAX_REASONS distinct reasons are counted: the
    same counts whether rows come one at a time (a streaming run) or all at once (`count_reasons`)."""
    if reason not in reasons and len(reasons) - (OTHER_REASONS in reasons) >= MAX_REASONS:
        reason = OTHER_REASONS
    reasons[reason] = reasons.get(reason, 0) + n


def add_unscored(reasons: dict[str, int], judgment: Judgment) -> None:
    """Count an unscored row under its reason, row and line numbers dropped so that reasons group (`add_reason`,
    `grouped_reason`)."""
    add_reason(reasons, grouped_reason(judgment.reason))


def count_reasons(judgments: Sequence[Judgment]) -> dict[str, int]:
    """How many rows went unscored for each reason (`add_unscored`; at most MAX_REASONS of them, the rest counted
    together)."""
    reasons: dict[str, int] = {}
    for j in judgments:
        if j.score is None:
            add_unscored(reasons, j)
    return reasons
