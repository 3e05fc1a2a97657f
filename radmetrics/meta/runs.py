"""One metric over a list of report pairs -> per-row scores with a direction, whatever the metric is.

`run_metric(spec, references, candidates, judge_kwargs)` is the one entry `compare` and `meta-eval` share:
- a radmetrics scoring system (green, vert, ...) runs on the shared judge and cache;
- a named baseline (bleu-4, rouge-l, bertscore, radgraph-f1, ...; radmetrics/baselines/) runs its own library;
- anything else is an `evaluate` module (name or local path) with `name:key` to pick the output key and
  `name:option=value` for compute() options, e.g. `rouge:rougeL`, `bleu:bleu:max_order=2`. Its direction:
  `name:higher_is_better=false` for an error or distance, else the known direction of evaluate's own error
  metrics (wer, cer, ter, ...), else higher is better, said in a warning.

A metric that fails as a whole (library missing, weights not downloadable offline, an unknown key) never raises
here: it comes back with every row unscored and `error` set, so the metrics that finished are kept.
"""
from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from radmetrics.errors import RadmetricsError
from radmetrics.meta.html_report import shorten

log = logging.getLogger(__name__)

@dataclass
class MetricRun:
    name: str
    scores: list[float | None]
    higher_is_better: bool
    #: per sample significant counts (a)-(f), when the metric's judge writes them
    counts: list[list[int] | None] = field(default_factory=list)
    fingerprint: dict[str, Any] = field(default_factory=dict)
    reasons: list[str | None] = field(default_factory=list)
    #: why the whole metric failed (every row is then unscored with this reason)
    error: str | None = None
    #: per sample extra score columns some metrics give (ER²Score's per-criterion rewards), name -> scores
    extra: dict[str, list[float | None]] = field(default_factory=dict)
    #: which judge, when one run grades several judges (meta-eval --judge A --judge B): name is metric@label
    judge_label: str | None = None

    @classmethod
    def failed(cls, name: str, n: int, error: str, higher_is_better: bool = True) -> MetricRun:
        return cls(name, [None] * n, higher_is_better, [None] * n, {}, [f"metric failed: {error}"] * n, error)

    @property
    def num_scored(self) -> int:
        return sum(s is not None for s in self.scores)

    def rows_without_verdict(self) -> dict[str, int]:
        """Rows the judge gave no verdict for, by why: no answer at all (a failed call), an answer cut at the
        token limit (max_new_tokens), and the judge's context too short (a prompt it cannot hold, not sent; an
        answer that reached its end: `past_context`, counted in neither of the others, as a rerun or a higher
        max_new_tokens does not help); unreadable answers are the judge's own result and not counted. The results
        entries' keys."""
        from radmetrics.types import call_failed_for_now, context_too_short, cut_at_max_new_tokens

        reasons = self.reasons or []
        return {"judge_calls_failed": sum(map(call_failed_for_now, reasons)),
                "answers_cut": sum(map(cut_at_max_new_tokens, reasons)), "past_context": sum(map(context_too_short, reasons))}


#: evaluate's own modules whose scores are errors, distances or losses (lower is better); any other module is
#: taken as higher-is-better unless its spec says `higher_is_better=false`
LOWER_IS_BETTER_MODULES = frozenset({"wer", "cer", "ter", "character", "charcut_mt", "mse", "mae", "mape", "smape",
                                     "brier_score", "perplexity"})


@dataclass(frozen=True)
class EvaluateSpec:
    """`name[:key][:option=value...]` for an evaluate module used as a baseline; the option `higher_is_better`
    (true/false) is the metric's direction, not a compute() option."""

    module: str
    key: str | None
    options: dict[str, Any]
    higher_is_better: bool | None = None

    @property
    def direction(self) -> bool | None:
        """higher_is_better as the spec says it, else as known for the module, else None (unknown)."""
        if self.higher_is_better is not None:
            return self.higher_is_better
        name = self.module.rstrip("/").rsplit("/", 1)[-1].removesuffix(".py").lower()
        return False if name in LOWER_IS_BETTER_MODULES else None

    @classmethod
    def parse(cls, spec: str) -> EvaluateSpec:
        # A local path may hold ':' only on Windows drives; we split from the module name's end.
        parts = spec.split(":")
        module, key, options = parts[0], None, {}
        for part in parts[1:]:
            if "=" in part:
                name, value = part.split("=", 1)
                try:
                    options[name] = json.loads(value)
                except ValueError:
                    options[name] = value
            elif key is None and part:
                key = part
            else:
                raise RadmetricsError(f"metric '{spec}': more than one output key named ('{key}', '{part}'); "
                                      "use name:key:option=value")
        higher_is_better = options.pop("higher_is_better", None)
        if higher_is_better is not None and not isinstance(higher_is_better, bool):
            raise RadmetricsError(f"metric '{spec}': higher_is_better must be true or false, not "
                                  f"{higher_is_better!r}")
        return cls(module, key, options, higher_is_better)


def _clean(value: Any) -> float | None:
    """A metric's value as a float, None when it gave none: NaN, and inf too (evaluate's mape with a zero
    reference; review 25, H1: one inf made every permutation's difference NaN, and compare reported p = 0)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _no_value_reason(what: str, value: Any) -> str:
    try:
        shown = float(value)
    except (TypeError, ValueError):
        shown = None
    if shown is not None and math.isinf(shown):
        return f"{what} returned {shown} (not a finite score)"
    return f"{what} returned no value"


def pair_problems(references: Sequence[Any], candidates: Sequence[Any]) -> list[str | None]:
    """Why each pair cannot be scored by a library metric, or None.

    An empty (blank) candidate is a real output of its generator, and a bad one: it is scored, as the judge metrics
    judge it (runner.judge_pairs), so that a system is not rewarded for emitting nothing by having its worst outputs
    left out of its mean. An empty or missing reference leaves nothing to score against, and a missing candidate
    (None, not text) is a data problem, not an output: both unscored with the reason."""
    from radmetrics.runner import pair_problem

    return [pair_problem(reference, candidate) for reference, candidate in zip(references, candidates)]


def score_library_pairs(call: Callable[[list[str], list[str]], tuple[list[Any], dict[str, list[Any]]]],
                        references: Sequence[Any], candidates: Sequence[Any],
                        empty_candidate: float | Callable[[], float] | None = None,
                        what: str = "the library") -> tuple[list[float | None], list[str | None],
                                                            dict[str, list[float | None]]]:
    """Per-row (scores, reasons, extra columns) of a library metric called as call(references, candidates) ->
    (per-pair values, {column: per-pair values}) on the pairs `pair_problems` lets through.

    A blank candidate reaches the library as "" (its own empty-hypothesis path: sacrebleu, rouge-score, nltk and
    radgraph all define one), or scores `empty_candidate` (a value, or a function that gives it) without a call
    when the library cannot take one. A library that fails on the call with "" in it is called again without: when
    that call succeeds, those rows are unscored with the first call's error and the others keep their scores. A
    library that returns another number of values than pairs it was given is an error (it would shift every later
    pair's score onto the wrong row)."""
    n = len(references)
    problems = pair_problems(references, candidates)
    scores: list[float | None] = [None] * n
    reasons: list[str | None] = list(problems)
    extra: dict[str, list[float | None]] = {}
    rows = [i for i, p in enumerate(problems) if p is None]
    blank = {i for i in rows if not candidates[i].strip()}
    if empty_candidate is not None and blank:
        value = float(empty_candidate() if callable(empty_candidate) else empty_candidate)
        for i in blank:
            scores[i], reasons[i] = value, None
        rows = [i for i in rows if i not in blank]

    def run(rows: list[int]) -> tuple[list[Any], dict[str, list[Any]]]:
        if not rows:
            return [], {}
        values, columns = call([references[i] for i in rows], ["" if i in blank else candidates[i] for i in rows])
        for label, got in [("scores", values), *columns.items()]:
            if len(got) != len(rows):
                raise RuntimeError(f"{what} returned {len(got)} {label} for {len(rows)} report pairs")
        return values, columns

    try:
        values, columns = run(rows)
    except Exception as e:  # noqa: BLE001 - retried below without the empty candidates, else raised
        tried = [i for i in rows if i in blank]
        rows = [i for i in rows if i not in blank]
        if not tried or not rows:  # nothing tells the empty candidates apart as the cause
            raise
        values, columns = run(rows)
        why = " ".join(str(e).split()) or "no message"
        for i in tried:
            reasons[i] = f"{what} failed on the empty candidate ({type(e).__name__}: {why})"
    for i, value in zip(rows, values):
        scores[i] = _clean(value)
        reasons[i] = None if scores[i] is not None else _no_value_reason(what, value)
    for column, got in columns.items():
        extra[column] = [None] * n
        for i, value in zip(rows, got):
            extra[column][i] = _clean(value)
    return scores, reasons, extra


def run_radmetrics_metric(name: str, references: Sequence[Any], candidates: Sequence[Any],
                          judge_kwargs: dict[str, Any]) -> MetricRun:
    import radmetrics

    result = radmetrics.score(name, references, candidates, **judge_kwargs)
    counts = [j.significant_errors() for j in result.judgments]
    return MetricRun(name, result.scores, result.scoring_system.higher_is_better, counts,
                     result.fingerprint, [j.reason for j in result.judgments])


def pick_key(spec: str, output: dict[str, Any], key: str | None, n: int) -> str:
    """The output key to report: the one named; else the only per-sample list; else the only numeric value;
    else the one named like the module. Several candidates are an error that lists them (never "the first
    numeric key": that picked ROUGE-1 for rouge and precision for bertscore)."""
    lists = [k for k, v in output.items()
             if isinstance(v, list) and len(v) == n and v and all(isinstance(x, (int, float)) for x in v)]
    numeric = [k for k, v in output.items() if isinstance(v, (int, float)) and not isinstance(v, bool)] + lists
    if key is not None:
        if key not in output:
            raise RadmetricsError(f"metric '{spec}' has no output '{key}'; its outputs: {', '.join(output)}")
        return key
    if len(lists) == 1:
        return lists[0]
    if len(numeric) == 1:
        return numeric[0]
    base = spec.split(":")[0].rstrip("/").rsplit("/", 1)[-1].removesuffix(".py")
    if base in numeric:
        return base
    raise RadmetricsError(f"metric '{spec}' gives several scores ({', '.join(numeric) or 'none numeric'}); "
                          f"name one, e.g. {base}:{numeric[0] if numeric else 'KEY'}")


def run_evaluate_metric(spec: str, references: Sequence[Any], candidates: Sequence[Any]) -> MetricRun:
    """An evaluate module as a baseline: per-sample scores from its list output under the chosen key, or one
    compute() per sample when that key is a corpus value. Rows are kept or unscored as `score_library_pairs` says
    (an empty candidate is scored). Its direction is `EvaluateSpec.direction`; unknown, higher is better, and the
    user is told (an error count taken as a score would name the worse system better and flip its τ)."""
    import evaluate

    parsed = EvaluateSpec.parse(spec)
    module = evaluate.load(parsed.module)
    key = parsed.key

    def call(refs: list[str], preds: list[str]) -> tuple[list[Any], dict[str, list[Any]]]:
        nonlocal key
        out = module.compute(predictions=preds, references=refs, **parsed.options)
        key = pick_key(spec, out, parsed.key, len(preds))
        values = out[key]
        if not (isinstance(values, list) and len(values) == len(preds)):
            values = [module.compute(predictions=[p], references=[r], **parsed.options)[key]
                      for p, r in zip(preds, refs)]
        return values, {}

    scores, reasons, _ = score_library_pairs(call, references, candidates,
                                             what=f"evaluate module '{parsed.module}'")
    direction = parsed.direction
    if direction is None:  # said once it has scores: a module that failed has no direction to read
        log.warning("metric %s: taken as higher-is-better; for an error or distance, write %s:higher_is_better=false",
                    spec, spec)
    higher_is_better = True if direction is None else direction
    source = ("unknown: assumed" if direction is None else "spec" if parsed.higher_is_better is not None
              else "known for the module")
    return MetricRun(spec, scores, higher_is_better, [None] * len(references),
                     {"evaluate_module": parsed.module, "key": key, "options": parsed.options,
                      "higher_is_better": higher_is_better, "direction_from": source}, reasons)


def metric_direction(spec: str) -> bool | None:
    """higher_is_better of a metric name, when it is known without running it."""
    import radmetrics
    from radmetrics import baselines

    if spec in radmetrics.list_scoring_systems():
        return radmetrics.get_scoring_system(spec).higher_is_better
    if baselines.is_baseline(spec):
        return baselines.get_baseline(spec).higher_is_better
    return EvaluateSpec.parse(spec).direction


def run_metric(spec: str, references: Sequence[Any], candidates: Sequence[Any],
               judge_kwargs: dict[str, Any] | None = None) -> MetricRun:
    """Any metric over the pairs; a failure of the whole metric comes back as an all-unscored run with the
    reason (logged), never as an exception, so other metrics' results are kept."""
    import radmetrics
    from radmetrics import baselines

    references, candidates = list(references), list(candidates)
    try:
        if spec in radmetrics.list_scoring_systems():
            return run_radmetrics_metric(spec, references, candidates, dict(judge_kwargs or {}))
        if baselines.is_baseline(spec):
            return baselines.run_baseline(spec, references, candidates)
        return run_evaluate_metric(spec, references, candidates)
    except KeyboardInterrupt:
        raise
    except Exception as e:  # noqa: BLE001 - one metric's failure must not lose the others
        if isinstance(e, ModuleNotFoundError):  # name the extra that installs the library
            from radmetrics.errors import MissingExtraError

            e = MissingExtraError.from_import_error(e) or e
        # the whole reason travels with the run (results.json, per_row.csv, the reports); the log line is shortened
        message = " ".join(str(e).split()) or type(e).__name__
        log.warning("metric %s failed: %s", spec, shorten(message, 300))
        direction = None
        try:
            direction = metric_direction(spec)
        except Exception:  # noqa: BLE001
            pass
        return MetricRun.failed(spec, len(references), f"{type(e).__name__}: {message}",
                                True if direction is None else direction)


def check_metrics_loadable(metrics: Sequence[str]) -> list[str]:
    """Every metric of a run that is not one of radmetrics' judge metrics can run (`check_loadable`), in seconds and
    before any judging (review 24 M5: a baseline that cannot load was an n/a after every row was judged). The one
    pre-check of compare, meta-eval, preference-eval and rexamine, from the CLI and from Python. Returns the judge
    metrics, in the order given: their judge is checked apart (`runner.preflight_judge`, the CLI's check_judges)."""
    import radmetrics

    scoring_systems = set(radmetrics.list_scoring_systems())
    for spec in metrics:
        if spec not in scoring_systems:
            check_loadable(spec)
    return [m for m in metrics if m in scoring_systems]


def check_loadable(spec: str) -> None:
    """A baseline's or evaluate module's metric can run, checked in seconds before any judging (a run's judge metrics
    may take hours): an evaluate module loads; a named baseline has its library and what it downloads (model,
    corpus; `baselines.check_baseline`). Radmetrics' own judge metrics are checked by `runner.preflight_judge`.
    Raises RadmetricsError, one line with the fix; a name close to a radmetrics metric is most likely its typo."""
    import difflib

    import radmetrics
    from radmetrics import baselines
    from radmetrics.meta.report import load_evaluate_module
    from radmetrics.plugins import plugin_install_hint

    if baselines.is_baseline(spec):
        baselines.check_baseline(spec)
        return
    module = EvaluateSpec.parse(spec).module
    try:
        load_evaluate_module(module)
    except RadmetricsError as e:
        ours = set(radmetrics.list_scoring_systems()) | set(baselines.list_baselines())
        close = difflib.get_close_matches(module, ours, n=1, cutoff=0.6)
        install = plugin_install_hint(module)
        hint = f" {install}" if install else f" Did you mean radmetrics' '{close[0]}'?" if close else ""
        raise RadmetricsError(f"{e}{hint}") from e
