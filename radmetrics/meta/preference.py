"""Preference accuracy (GREEN Sec. 4.3.2, Table 7): how often a metric prefers the candidate the experts preferred.

Input rows: reference, candidate_a, candidate_b, preferred ("a" or "b"), optionally id and confidence. Each
metric scores (reference, candidate_a) and (reference, candidate_b); the metric prefers the better-scored one
in its own direction; a tie or an unscored side counts as wrong (as in GREEN), and the counts say how many.
The 95% CI is the percentile bootstrap of the share of right pairs (compare_stats.mean_ci).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from radmetrics.errors import InputError
from radmetrics.meta import compare_stats as cs
from radmetrics.meta.runs import MetricRun, run_metric


def read_preferences(path: str | Path) -> list[dict[str, Any]]:
    from radmetrics.meta.compare import _read_rows

    rows = _read_rows(Path(path))
    required = ("reference", "candidate_a", "candidate_b", "preferred")
    for n, row in enumerate(rows, 1):
        missing = [c for c in required if c not in row]
        if missing:
            raise InputError(f"{path} row {n}: missing {', '.join(missing)} (rows need {', '.join(required)})")
        if str(row["preferred"]).strip().lower() not in {"a", "b"}:
            raise InputError(f"{path} row {n}: preferred must be 'a' or 'b', not {row['preferred']!r}")
    return rows


def judge_preferences(run_a: MetricRun, run_b: MetricRun, prefers_a: Sequence[bool]) -> dict[str, Any]:
    """Per pair: 1 when the metric prefers the experts' choice, 0 otherwise (ties and unscored sides too)."""
    right, ties, unscored = [], 0, 0
    for a, b, pref in zip(run_a.scores, run_b.scores, prefers_a):
        if a is None or b is None:
            unscored += 1
            right.append(0.0)
            continue
        if a == b:
            ties += 1
            right.append(0.0)
            continue
        metric_prefers_a = (a > b) == run_a.higher_is_better
        right.append(float(metric_prefers_a == pref))
    return {"right": right, "ties": ties, "unscored_pairs": unscored}


def preference_accuracy(rows: list[dict[str, Any]], metrics: Sequence[str], judge_kwargs: dict[str, Any],
                        resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    refs = [r["reference"] for r in rows]
    prefers_a = [str(r["preferred"]).strip().lower() == "a" for r in rows]
    confidence = [r.get("confidence") for r in rows]
    out: dict[str, Any] = {"n_pairs": len(rows), "resamples": resamples, "seed": seed,
                           "rule": "ties and unscored sides count as wrong (GREEN Sec. 4.3.2)", "metrics": {}}
    for metric in metrics:
        # both sides in one call: the judge batches and de-duplicates
        run = run_metric(metric, refs + refs, [r["candidate_a"] for r in rows] + [r["candidate_b"] for r in rows],
                         judge_kwargs)
        n = len(rows)
        if run.error:
            out["metrics"][metric] = {"error": run.error, "accuracy": None}
            continue
        side_a = MetricRun(metric, run.scores[:n], run.higher_is_better)
        side_b = MetricRun(metric, run.scores[n:], run.higher_is_better)
        judged = judge_preferences(side_a, side_b, prefers_a)
        interval = cs.mean_ci(judged["right"], resamples, seed)
        entry = {"accuracy": interval.value, "ci_low": interval.ci_low, "ci_high": interval.ci_high,
                 "ties": judged["ties"], "unscored_pairs": judged["unscored_pairs"], "error": None,
                 "higher_is_better": run.higher_is_better, "fingerprint": run.fingerprint}
        levels = sorted({c for c in confidence if c is not None}, key=str)
        if levels:  # GREEN Fig. 5: accuracy by the experts' confidence
            entry["by_confidence"] = {
                str(level): sum(x for x, c in zip(judged["right"], confidence) if c == level)
                / sum(1 for c in confidence if c == level) for level in levels}
        out["metrics"][metric] = entry
    return out
