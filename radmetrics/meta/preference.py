"""Preference accuracy (GREEN Sec. 4.3.2, Table 7): how often a metric prefers the candidate the experts preferred.

Input rows: reference, candidate_a, candidate_b, preferred ("a" or "b"), optionally id and confidence. Each
metric scores (reference, candidate_a) and (reference, candidate_b); the metric prefers the better-scored one
in its own direction; a tie or an unscored side counts as wrong (as in GREEN), and the counts say how many.
The 95% CI is the Wilson score interval of the share of right pairs (compare_stats.proportion_ci): a percentile
bootstrap of a share near 1 on few pairs was often the point itself ("1.00 [1.00, 1.00]").
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from radmetrics.errors import InputError
from radmetrics.meta import compare_stats as cs
from radmetrics.meta.runs import MetricRun, check_metrics_loadable, run_metric


def read_preferences(path: str | Path) -> list[dict[str, Any]]:
    """The pairs, each with `confidence` read as a level (`confidence_level`) and an `id`: the one given, or its
    row number when no row has one (some rows with an id and some without could give two pairs one id)."""
    from radmetrics.io import read_records_strict

    records = read_records_strict(Path(path), why="; every line is a pair, so every line must be readable")
    rows = [r.row for r in records]
    if not rows:
        raise InputError(f"{path} has no rows")

    def where(n: int) -> str:  # the line an editor shows (a CSV's row 1 is on line 2), and the row, which names pairs
        return f"{path} line {records[n - 1].line} (row {n})"

    required = ("reference", "candidate_a", "candidate_b", "preferred")
    for n, row in enumerate(rows, 1):
        missing = [c for c in required if c not in row]
        if missing:
            raise InputError(f"{where(n)}: missing {', '.join(missing)} (rows need {', '.join(required)})")
        if str(row["preferred"]).strip().lower() not in {"a", "b"}:
            raise InputError(f"{where(n)}: preferred must be 'a' or 'b', not {row['preferred']!r}")
        row["confidence"] = confidence_level(row.get("confidence"), where(n))
    given = [n for n, row in enumerate(rows, 1) if not _blank(row.get("id"))]
    if given and len(given) < len(rows):
        without = next(n for n in range(1, len(rows) + 1) if n not in set(given))
        raise InputError(f"{where(without)} has no id but {where(given[0]).removeprefix(f'{path} ')} has one: give "
                         "every pair an id, or none (each pair is then named by its row number)")
    seen: dict[str, int] = {}
    for n, row in enumerate(rows, 1):  # a pair given twice would count twice, and per_pair could not tell them apart
        row["id"] = str(row["id"]) if given else str(n)
        first = seen.setdefault(row["id"], n)
        if first != n:
            raise InputError(f"{where(n)}: id {row['id']!r} is also the id of "
                             f"{where(first).removeprefix(f'{path} ')}; each pair once")
    return rows


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def confidence_level(value: Any, where: str) -> str | None:
    """The experts' confidence as one level's name, or None when not given. Numbers and numeric text are one level
    (1, 1.0 and "1" are all "1"; JSONL written from a mixed column has both); words are kept as written, stripped.
    Not given: no cell, a blank cell, null, NaN (what json.dumps writes for a missing float) or a missing-value marker
    (NA, N/A, ...); such a pair counts in the accuracy but in no level. inf, or a list, is an error naming WHERE."""
    import math

    from radmetrics.runner import MISSING_MARKERS

    if _blank(value) or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputError(f"{where}: confidence {value!r} is a {type(value).__name__}; give a number or a word")
    text = str(value).strip()
    if text in MISSING_MARKERS:
        return None
    try:
        number = float(text)
    except ValueError:
        return text
    if not math.isfinite(number):
        raise InputError(f"{where}: confidence {value!r} is not a finite number")
    return str(int(number)) if number.is_integer() else repr(number)


def _level_order(level: str) -> tuple:
    """Numeric levels in numeric order (2 before 10), then words alphabetically."""
    try:
        return (0, float(level), "")
    except ValueError:
        return (1, 0.0, level)


def judge_preferences(run_a: MetricRun, run_b: MetricRun, prefers_a: Sequence[bool]) -> dict[str, Any]:
    """Per pair: 1 when the metric prefers the experts' choice, 0 otherwise (ties and unscored sides too), and
    each pair's outcome ("right", "wrong", "tie", "unscored") for the per-pair file."""
    right, outcomes, ties, unscored = [], [], 0, 0
    for a, b, pref in zip(run_a.scores, run_b.scores, prefers_a):
        if a is None or b is None:
            unscored += 1
            right.append(0.0)
            outcomes.append("unscored")
            continue
        if a == b:
            ties += 1
            right.append(0.0)
            outcomes.append("tie")
            continue
        metric_prefers_a = (a > b) == run_a.higher_is_better
        right.append(float(metric_prefers_a == pref))
        outcomes.append("right" if metric_prefers_a == pref else "wrong")
    return {"right": right, "outcomes": outcomes, "ties": ties, "unscored_pairs": unscored}


def _reason(run: MetricRun, i: int) -> str | None:
    return run.reasons[i] if i < len(run.reasons) else None


def preference_accuracy(rows: list[dict[str, Any]], metrics: Sequence[str], judge_kwargs: dict[str, Any],
                        resamples: int = 1000, seed: int = 0, *, metrics_checked: bool = False) -> dict[str, Any]:
    """The accuracy of each metric with its CI, ties, unscored pairs and, when rows have a confidence, the
    accuracy and pair count per level (GREEN Fig. 5); `per_pair` holds every pair's scores, outcome and reasons.
    A metric that cannot load raises RadmetricsError before any judging; one that fails on the rows is an error.
    metrics_checked=True skips that check, for a caller that has just made it (the CLI, before its judge check)."""
    if not metrics_checked:
        check_metrics_loadable(metrics)
    refs = [r["reference"] for r in rows]
    prefers_a = [str(r["preferred"]).strip().lower() == "a" for r in rows]
    confidence = [confidence_level(r.get("confidence"), f"row {n}") for n, r in enumerate(rows, 1)]  # None: not given
    ids = [str(r.get("id", n)) for n, r in enumerate(rows, 1)]
    levels = sorted({c for c in confidence if c is not None}, key=_level_order)
    out: dict[str, Any] = {"n_pairs": len(rows), "resamples": resamples, "seed": seed,
                           "rule": "ties and unscored sides count as wrong (GREEN Sec. 4.3.2)",
                           "interval": "Wilson score interval of the share of pairs right", "metrics": {},
                           "per_pair": []}
    if levels:
        out["pairs_without_confidence"] = confidence.count(None)
    for metric in metrics:
        # both sides in one call: the judge batches and de-duplicates
        run = run_metric(metric, refs + refs, [r["candidate_a"] for r in rows] + [r["candidate_b"] for r in rows],
                         judge_kwargs)
        n = len(rows)
        if run.error:
            out["metrics"][metric] = {"error": run.error, "accuracy": None}
            continue
        side_a = MetricRun(metric, run.scores[:n], run.higher_is_better, reasons=run.reasons[:n])
        side_b = MetricRun(metric, run.scores[n:], run.higher_is_better, reasons=run.reasons[n:])
        judged = judge_preferences(side_a, side_b, prefers_a)
        interval = cs.proportion_ci(judged["right"], resamples=resamples)
        entry = {"accuracy": interval.value, "ci_low": interval.ci_low, "ci_high": interval.ci_high,
                 "ties": judged["ties"], "unscored_pairs": judged["unscored_pairs"], "error": None,
                 "higher_is_better": run.higher_is_better, "fingerprint": run.fingerprint,
                 # sides the judge gave no answer for, or cut at the token limit: counted as wrong like any unscored
                 # side, but no verdict of the metric's; the CLI names them and exits 2, as compare does
                 **run.rows_without_verdict()}
        if levels:  # GREEN Fig. 5: accuracy by the experts' confidence, with how many pairs each level has
            entry["by_confidence"] = {}
            for level in levels:
                chosen = [x for x, c in zip(judged["right"], confidence) if c == level]
                entry["by_confidence"][level] = {"accuracy": sum(chosen) / len(chosen), "n": len(chosen)}
        out["metrics"][metric] = entry
        for i, outcome in enumerate(judged["outcomes"]):
            why = "; ".join(f"{side}: {r}" for side, r in (("a", _reason(side_a, i)), ("b", _reason(side_b, i)))
                            if r and (outcome == "unscored"))
            out["per_pair"].append({"id": ids[i], "metric": metric, "score_a": side_a.scores[i],
                                    "score_b": side_b.scores[i], "experts_prefer": "a" if prefers_a[i] else "b",
                                    "confidence": confidence[i], "outcome": outcome, "reason": why or None})
    return out
