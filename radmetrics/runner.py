"""report pairs -> prompts -> judge (cache -> model) -> parse -> Judgments -> aggregate.

The one path that evaluate's `_compute`, lm-eval's `process_results` and the CLI share. Bad rows
become unscored Judgments with a reason; nothing here raises for one row's sake.
"""
from __future__ import annotations

import logging
import math
import numbers
import reprlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from radmetrics.errors import InputError, JudgeError
from radmetrics.io import check_report_lists
from radmetrics.types import (
    CutAnswer,
    GenerationConfig,
    Judgment,
    answer_problem,
    answer_reached_context,
    call_failed_for_now,
    cut_at_max_new_tokens,
    judge_call_failed,  # noqa: F401 - imported from here by the CLI
    prompt_filled_context,
)

log = logging.getLogger(__name__)
#: marks the warnings counted over every row given ("the judge gave no answer", "answers cut", "candidate reports
#: were empty"): a caller that says them per system (compare, whose rows are every system's stacked) filters them out
PER_SYSTEM_RECORD = "radmetrics_said_per_system"


#: cell texts that spreadsheets, R (`write.csv`), pandas (`astype(str)`) and SQL exports write for a missing value;
#: pandas' read_csv reads the same as NaN. A "report" that is exactly one of them is a missing report, not text a
#: judge should grade (a real judge scores "NA" against "N/A" happily)
MISSING_MARKERS = frozenset({"NA", "N/A", "n/a", "NaN", "nan", "NAN", "None", "none", "null", "NULL", "#N/A", "<NA>"})


def row_problem(value: Any, label: str) -> str | None:
    """Why a report cannot be judged, or None."""
    if value is None:
        return f"{label} is missing (None)"
    if isinstance(value, float) and value != value:  # NaN: pandas' missing value, JSON's non-standard NaN
        return f"{label} is missing (NaN)"
    if not isinstance(value, str):
        return f"{label} is {type(value).__name__}, not text"
    if not value.strip():
        return f"{label} is empty"
    if value.strip() in MISSING_MARKERS:
        return f"{label} is {value.strip()!r}, a missing-value marker, not a report"
    return None


def pair_problem(reference: Any, candidate: Any, generated: bool = False) -> str | None:
    """Why a (reference, candidate) pair cannot be scored, or None. An empty (blank) generated report is the
    generator's failure, not a missing one: it is scored (judged as the official GREEN code judges it, make_prompt
    with an empty candidate) and counts against the generator instead of leaving its mean. An empty reference
    gives nothing to score against, and a missing candidate (None, not text) is a data problem: both unscored.

    generated: the candidate is a model's output as it came (an RL completion), never a file's cell, so a
    completion that reads "N/A" or "None" is judged as written: left unscored it would escape the reward a
    policy gets for its other answers (review 12)."""
    blank = isinstance(candidate, str) and not candidate.strip()
    written = generated and isinstance(candidate, str) and candidate.strip() in MISSING_MARKERS
    return row_problem(reference, "reference") or (None if blank or written else row_problem(candidate, "candidate"))


def check_lengths(references: Sequence[Any], candidates: Sequence[Any]) -> None:
    check_report_lists(references, candidates)
    if len(references) != len(candidates):
        raise InputError(
            f"{len(candidates)} candidates (predictions) but {len(references)} references: "
            "they must pair up one to one."
        )


@dataclass
class ScoreResult:
    judgments: list[Judgment]
    summary: dict[str, Any]
    fingerprint: dict[str, Any]
    scoring_system: Any = field(repr=False, default=None)

    @property
    def scores(self) -> list[float | None]:
        return [j.score for j in self.judgments]


def judge_pairs(system, judge, references: Sequence[Any], candidates: Sequence[Any],
                config: GenerationConfig | None = None, progress: bool = True,
                row_ids: Sequence[int] | None = None, row_labels: Sequence[str] | None = None,
                generated: bool = False) -> list[Judgment]:
    """Judge every pair; invalid rows and failed judge calls become unscored Judgments.
    generated: the candidates are a model's outputs as they came (pair_problem).

    row_ids: the row numbers to name in reasons ("row 3: ...", default 0..n-1, the index into the lists);
    row_labels: what reasons call each row instead, e.g. "input line 4" (scoring.ROW_PREFIX).
    """
    check_lengths(references, candidates)
    if row_labels is None:
        row_labels = [f"row {i}" for i in (row_ids if row_ids is not None else range(len(references)))]
    row_labels = list(row_labels)
    config = config or GenerationConfig()
    judgments: list[Judgment | None] = [None] * len(references)
    prompts: list[str] = []
    rows: list[int] = []
    warnings: dict[int, list[str]] = {}
    empty_candidates = []
    for i, (ref, cand) in enumerate(zip(references, candidates)):
        problem = pair_problem(ref, cand, generated)
        if problem:
            judgments[i] = Judgment.unscored(f"{row_labels[i]}: {problem}")
            continue
        try:
            note = system.input_warnings(ref, cand)
            prompt = system.build_prompt(ref, cand)
        except Exception as e:  # a plugin's bug on one pair must not lose the other rows (review 41b)
            judgments[i] = Judgment.unscored(f"{row_labels[i]}: scoring system '{system.name}' could not build the "
                                             f"prompt ({type(e).__name__}: {e})")
            continue
        if note:
            warnings[i] = note
        prompts.append(prompt)
        rows.append(i)
        if not cand.strip():  # judged as written (pair_problem)
            empty_candidates.append(i)
    if warnings:
        log.warning("%s cut to the prompt's length limit (see details.warnings)",
                    "1 row was" if len(warnings) == 1 else f"{len(warnings)} rows were")
    texts = _generate(judge, prompts, config, progress, rows, row_labels)
    for i, text in zip(rows, texts):
        judgments[i] = _parse(system, text)
    # Re-asks (FineRadScore: malformed JSON): up to `max_retries` further prompts for rows whose output the
    # system could not read and says a re-ask can help; every attempt is kept in details.
    asked = list(prompts)  # per row, the last prompt it was asked with
    for attempt in range(1, system.max_retries + 1):
        redo = [(pos, i) for pos, i in enumerate(rows)
                if not judgments[i].parsed and judgments[i].details.get("retryable")]
        if not redo:
            break
        # each re-ask builds on the previous one (a conversation shows the judge all its earlier answers), so a
        # deterministic judge is not sent the same request again and again
        more = []
        for pos, i in list(redo):
            try:
                more.append(system.retry_prompt(asked[pos], judgments[i], attempt))
            except Exception as e:  # a plugin's bug: this row keeps its unreadable answer, the others are asked again
                redo.remove((pos, i))
                judgments[i].details.pop("retryable", None)
                judgments[i].reason = (f"{judgments[i].reason or 'unscored'}; not asked again: scoring system "
                                       f"'{system.name}': retry_prompt raised {type(e).__name__}: {e}")
        for (pos, _), prompt in zip(redo, more):
            asked[pos] = prompt
        answers = _generate(judge, more, config, progress, [rows[pos] for pos, _ in redo], row_labels)
        for (_, i), text in zip(redo, answers):
            history = judgments[i].details.get("attempts", []) + [judgments[i].raw]
            judgments[i] = _parse(system, text)
            judgments[i].details["attempts"] = history
    # Systems whose result depends on the reports as well as the judge text (FineRadScore applies its
    # line corrections to the candidate) finish each parsed judgment here.
    for i in rows:
        judgments[i] = _finalize(system, judgments[i], references[i], candidates[i])
    for i, note in warnings.items():
        judgments[i].details["warnings"] = note
    for i in empty_candidates:
        judgments[i].details["empty_candidate"] = True
    if empty_candidates:
        reports = "1 candidate report was" if len(empty_candidates) == 1 else f"{len(empty_candidates)} candidate reports were"
        log.warning("%s empty: judged as written (an empty report counts against its generator; "
                    "details.empty_candidate)", reports, extra={PER_SYSTEM_RECORD: True})
    return judgments  # type: ignore[return-value]


def _parse(system, text: str) -> Judgment:
    why = answer_problem(text)  # no answer, or one cut at the token limit: never read as if complete (review 15)
    if why:
        return Judgment.unscored(why, raw=str(text) if isinstance(text, CutAnswer) else "")
    try:
        return _held_to_contract(system, system.parse(text), "parse", text)
    except Exception as e:  # a parser bug must not lose the other rows
        return Judgment.unscored(f"parser error ({type(e).__name__}: {e})", raw=text)


def _finalize(system, judgment: Judgment, reference: str, candidate: str) -> Judgment:
    if not judgment.parsed:
        return judgment
    try:
        return _held_to_contract(system, system.finalize(judgment, reference, candidate), "finalize", judgment.raw)
    except Exception as e:
        return Judgment.unscored(f"scoring system '{system.name}': finalize raised {type(e).__name__}: {e}",
                                 raw=judgment.raw)


def _held_to_contract(system, judgment: Any, step: str, text: Any) -> Judgment:
    """What a scoring system's parse or finalize gave, held to the Judgment contract: anything but a Judgment, or
    a score that is not a finite number (nan, inf, a string, True), is the row unscored naming the system, never
    a number in the mean (review 41b: a plugin's nan made the corpus mean nan, a string score or a parse that
    returned None stopped the whole run)."""
    name = getattr(system, "name", type(system).__name__)
    if not isinstance(judgment, Judgment):
        return Judgment.unscored(f"scoring system '{name}': {step} returned {type(judgment).__name__}, not a "
                                 "radmetrics.Judgment", raw=text if isinstance(text, str) else "")
    score = judgment.score
    if score is not None:
        number = _finite_number(score)
        if number is None:
            return Judgment(score=None, parsed=False, raw=judgment.raw, details=dict(judgment.details),
                            reason=f"scoring system '{name}': {step} gave the score {reprlib.repr(score)}, not a finite "
                                   "number")
        judgment.score = number
    elif not judgment.reason:
        judgment.reason = f"scoring system '{name}': {step} gave no score and no reason"
    return judgment


def _finite_number(score: Any) -> int | float | None:
    """A plugin's score as the int or float that JSON and the sums take (numpy's float32, a Decimal, a Fraction:
    a float), or None where it is no finite number (nan, inf, True, a string, a complex, an int too large for a
    float)."""
    if isinstance(score, bool) or not isinstance(score, numbers.Number):
        return None
    try:
        value = float(score)  # a complex raises TypeError; 10**400 OverflowError
    except (TypeError, ValueError, OverflowError):
        return None
    if not math.isfinite(value):
        return None
    return score if type(score) is int else value


def read_answer(system, text: str, reference: str, candidate: str) -> Judgment:
    """One judge answer to a Judgment, as judge_pairs reads it (never raises; finalized). For callers that get
    the text elsewhere, e.g. lm-eval's process_results."""
    return _finalize(system, _parse(system, text), reference, candidate)


def aggregate(system, judgments: Sequence[Judgment], **options: Any) -> dict[str, Any]:
    """system.aggregate with the options it declares; an option it does not take is reported, not passed
    (e.g. --summary, GREEN's clustered summary, asked of VERT)."""
    unknown = sorted(k for k, v in options.items() if k not in system.aggregate_options and v not in (None, False))
    if unknown:
        log.warning("%s has no aggregate option %s (it takes: %s); ignored", system.name, ", ".join(unknown),
                    ", ".join(system.aggregate_options) or "none")
    try:
        summary = system.aggregate(judgments, **{k: v for k, v in options.items() if k in system.aggregate_options})
        if not isinstance(summary, dict):
            raise TypeError(f"it returned {type(summary).__name__}, not a dict")
    except Exception as e:  # a plugin's bug: no corpus number, the rows and their scores kept (review 41b)
        from radmetrics.scoring import mean_std_summary

        why = f"scoring system '{system.name}': aggregate failed ({type(e).__name__}: {e}), so there is no corpus summary"
        log.warning("%s; the per-row scores are kept", why)
        summary = {**mean_std_summary(system.score_key, judgments), system.score_key: None,
                   f"{system.score_key}_std": None, "aggregate_error": why}
    # how many generated reports were empty (judged, not dropped: see judge_pairs)
    summary["num_empty_candidates"] = sum(1 for j in judgments if j.details.get("empty_candidate"))
    return summary


def _generate(judge, prompts: list[str], config: GenerationConfig, progress: bool, rows: list[int],
              row_labels: list[str]) -> list[str]:
    """judge.generate, with a failing prompt's position turned into the input row it came from."""
    try:
        return judge.generate(prompts, config, progress=progress) if prompts else []
    except JudgeError as e:
        if e.prompt_index is None:
            raise
        raise JudgeError(f"{row_labels[rows[e.prompt_index]]}: {e.message}") from e


def fingerprint(system, judge, config: GenerationConfig) -> dict[str, Any]:
    from radmetrics import __version__

    identity = judge.identity() if judge is not None else {}
    # an in-process judge also says where and in what precision it runs (dtype "auto" resolved)
    runtime = getattr(getattr(judge, "backend", judge), "runtime", None)
    if callable(runtime):
        identity = {**identity, "runtime": runtime()}
    return {"radmetrics_version": __version__, **system.fingerprint(), "judge": identity,
            "generation": config.to_dict()}


def system_to_check(name: str, system_options: dict[str, Any] | None = None):
    """Scoring system `name` configured with those of the run's system options it takes, for the checks before any
    judging: an option value that cannot work (VERT's shots_path naming a missing, empty or malformed file) stops
    the run in one line there, not as a failed metric after the other metrics were judged (review 29c). An option
    the system lacks stays for the run itself to report (the metric fails, the others are kept)."""
    from radmetrics.plugins import get_scoring_system

    system = get_scoring_system(name)
    own = {k: v for k, v in (system_options or {}).items() if k in system.option_names()}
    return system.configure(**own) if own else system


def check_summary_model(summary_model: str | None, flag: str) -> None:
    """The GREEN summary's libraries and embedding model, checked before any judging: in Python (radmetrics.score,
    evaluate's summary=True) an uncached model offline was transformers' OSError after every row had been judged
    (review 34); the CLI checks the same before its run."""
    from radmetrics.errors import require_installed
    from radmetrics.green.summary import DEFAULT_SUMMARY_MODEL
    from radmetrics.judge.preflight import check_hub_model

    for module in ("sklearn", "sentence_transformers", "scipy"):
        require_installed(module, "summary", "by the GREEN summary")
    check_hub_model(summary_model or DEFAULT_SUMMARY_MODEL, what="summary model", flag=flag)


def preflight_judge(backend: str, model: str | None, options: dict[str, Any] | None = None,
                    system: Any = None) -> str | None:
    """The judge model a run uses (the system's published judge when none is named, except for replay, whose
    file is the judge), checked in seconds to be reachable: not minutes of Hub retries later. Raises a
    one-line JudgeError with what to do."""
    from radmetrics.judge.preflight import check_judge

    if model is None and backend != "replay" and system is not None:
        model = system.default_judge
        if model is None and backend in ("transformers", "vllm", "openai"):
            raise JudgeError(f"{system.name} has no published default judge: name one (--judge MODEL on the command "
                             "line, judge=... in radmetrics.score or evaluate.load): a Hub id or a local folder, or "
                             "with --backend openai the model name the server serves.")
    check_judge(backend, model, options)
    return model


def build_judge(backend: str = "transformers", model: str | None = None, options: dict[str, Any] | None = None,
                cache: Any = None, system: Any = None, engine: str = "local", actors: int = 2):
    """The shared judge for a run: the system's published judge when no model is named (except for replay,
    whose file is the judge), behind the response cache (None: the default cache; False: none).
    engine="ray" shards the judging over `actors` Ray actors sharing the cache file."""
    from radmetrics.judge import _USE_DEFAULT, get_judge

    model = preflight_judge(backend, model, options, system)
    if engine == "ray":
        from radmetrics.judge.cache import default_cache_path
        from radmetrics.judge.ray_engine import RayShardedJudge

        return RayShardedJudge(backend, model=model, cache=cache or None, actors=actors,
                               default_cache=default_cache_path() if cache is None else None, **(options or {}))
    return get_judge(backend, model=model, cache=_USE_DEFAULT if cache is None else cache, **(options or {}))


def score(metric: Any, references: Sequence[Any], candidates: Sequence[Any], *, backend: str = "transformers",
          judge: Any = None, judge_options: dict[str, Any] | None = None, cache: Any = None,
          config: GenerationConfig | None = None, progress: bool = True, summary: bool = False,
          summary_model: str | None = None, system_options: dict[str, Any] | None = None,
          row_ids: Sequence[int] | None = None, row_labels: Sequence[str] | None = None) -> ScoreResult:
    """Score candidates against references with a scoring system on the shared judge.

    metric: a registered name or a ScoringSystem; judge: a model id (the judge is built from backend,
    judge_options and cache) or a ready Judge (radmetrics.judge.base.Judge; then those three are not used);
    row_ids: the row numbers reasons name (default 0..n-1); row_labels: what reasons call each row instead (e.g.
    "id study-17").

    >>> # result = radmetrics.score("green", refs, cands, judge="StanfordAIMI/GREEN-RadLlama2-7b")
    """
    from radmetrics.judge.base import Judge
    from radmetrics.plugins import get_scoring_system

    if isinstance(metric, str):
        system = get_scoring_system(metric, **(system_options or {}))
    else:
        system = metric.configure(**system_options) if system_options else metric
    check_lengths(references, candidates)
    if summary and "summary" in getattr(system, "aggregate_options", ()):
        check_summary_model(summary_model, flag="summary_model= (--summary-model on the command line)")
    the_judge = judge if isinstance(judge, Judge) else build_judge(backend, judge, judge_options, cache, system)
    config = config or GenerationConfig()
    judgments = judge_pairs(system, the_judge, references, candidates, config, progress=progress, row_ids=row_ids,
                            row_labels=row_labels)
    too_long = sum(prompt_filled_context(j.reason) for j in judgments)
    if too_long:  # not sent: a rerun fails them the same
        log.warning("%s: %d of %d prompts left no room for an answer in the judge's context and were not sent; they "
                    "are unscored: shorten the reports, or use a judge with a longer context", system.name, too_long,
                    len(judgments), extra={PER_SYSTEM_RECORD: True})
    failed = [j.reason for j in judgments if call_failed_for_now(j.reason)]
    if failed:  # no answer at all (the CLI exits 1 on it): say so, not only in each row's reason (review 14)
        log.warning("%s: the judge gave no answer for %d of %d rows (first: %s); they are unscored, and a rerun with "
                    "a cache asks only them", system.name, len(failed), len(judgments), failed[0],
                    extra={PER_SYSTEM_RECORD: True})
    # an answer that reached the end of the judge's context is cut too, but a higher max_new_tokens gives the same
    # cut: said apart, with what helps
    context = sum(answer_reached_context(j.reason) for j in judgments)
    cut = sum(cut_at_max_new_tokens(j.reason) for j in judgments)
    if context:
        log.warning("%s: the judge's answer reached the end of the judge's context for %d of %d rows (the prompt left "
                    "it fewer tokens than max_new_tokens); they are unscored: shorten the reports, or use a judge "
                    "with a longer context (a higher max_new_tokens does not help)", system.name, context,
                    len(judgments), extra={PER_SYSTEM_RECORD: True})
    if cut:  # the mean covers fewer rows: say why, and what helps (review 16)
        log.warning("%s: the judge's answer reached the token limit (max_new_tokens=%d) for %d of %d rows; they are "
                    "unscored: raise max_new_tokens (config=GenerationConfig(max_new_tokens=...) in radmetrics.score, "
                    "max_new_tokens= in evaluate.load)", system.name,
                    config.max_new_tokens, cut, len(judgments), extra={PER_SYSTEM_RECORD: True})
    return ScoreResult(judgments=judgments,
                       summary=aggregate(system, judgments, summary=summary, summary_model=summary_model),
                       fingerprint=fingerprint(system, the_judge, config), scoring_system=system)
