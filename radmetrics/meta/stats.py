"""Meta-evaluation statistics: pure functions with an explicit seed, scipy underneath.

- Kendall τ-b and Spearman ρ with percentile bootstrap CIs (1,000 resamples of pairs; GREEN Sec. 4.2 and
  ER²Score follow Yu et al. 2023's bootstrap of Kendall τ).
- MAE of error counts and per-category accuracy against the expert mean (GREEN Sec. 4.1).
- Error-type F1 (VERT App. C): per category, TP = Σ min(h, g), FP = Σ max(0, g − h), FN = Σ max(0, h − g).
- Preference accuracy (GREEN Sec. 4.3.2): how often the report the experts prefer gets the better score.
- Paired approximate-randomization test between two systems' agreement with experts.
- ReXamine-Global (Sec. 2): per-site paired t-test original vs standardized references with Bonferroni
  α / (metrics × sites), and per-site Spearman.
- Ensembles (VERT Sec. 4.1.2): average of (standardized) scores; linear regression fitted on a train split.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from radmetrics.meta.compare_stats import TIE_TOLERANCE


@dataclass(frozen=True)
class Correlation:
    value: float
    ci_low: float
    ci_high: float
    p_value: float
    n: int
    resamples: int
    #: the resamples the CI is made of: those with a correlation (a resample of one distinct value has none, and
    #: is left out; with few rows that can be many of the `resamples` asked for)
    resamples_used: int | None = None
    #: the CI resampled whole groups of rows (e.g. "study_id: 50 groups"), not rows (`correlation`'s ``groups``)
    resampled_groups: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items()
                if k not in ("resamples_used", "resampled_groups") or v is not None}


def _pairs(x: Sequence[float | None], y: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray]:
    """Drop pairs where either side is missing (unscored rows are reported separately, not imputed)."""
    if len(x) != len(y):
        raise ValueError(f"{len(x)} scores but {len(y)} expert values")
    keep = _kept_rows(x, y)
    return np.asarray([x[i] for i in keep], dtype=float), np.asarray([y[i] for i in keep], dtype=float)


def _kept_rows(x: Sequence[float | None], y: Sequence[float | None]) -> list[int]:
    """The rows with both sides present (neither None nor NaN), in order: `_pairs`' rows."""
    def present(v: Any) -> bool:
        return v is not None and not (isinstance(v, float) and math.isnan(v))

    return [i for i, (a, b) in enumerate(zip(x, y)) if present(a) and present(b)]


def _statistic(name: str):
    from scipy import stats

    if name == "kendall":
        return lambda a, b: stats.kendalltau(a, b, variant="b")
    if name == "spearman":
        return lambda a, b: stats.spearmanr(a, b)
    raise ValueError(name)


@contextmanager
def _constant_input_is_nan():
    """scipy warns when a side of a correlation is constant; the value is then NaN, which the callers handle (n/a
    for a whole sample, left out for a resample or a permutation), so its raw warning would only be noise in a
    user's terminal."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.filterwarnings("ignore", message=".*constant.*")
        yield


def correlation(x: Sequence[float | None], y: Sequence[float | None], method: str = "kendall",
                resamples: int = 1000, seed: int = 0, confidence: float = 0.95,
                groups: Sequence[Any] | None = None, groups_name: str = "group") -> Correlation:
    """τ-b (method="kendall") or ρ ("spearman") with a percentile bootstrap CI over resampled pairs; with ``groups``
    (one label per row, e.g. its study), over resampled groups, each drawn with all its rows (a cluster bootstrap):
    rows of one study move together (a hard study makes each of its candidate reports worse), so resampling them
    as independent rows gives intervals narrower than their level (review 36c: 89% for a 95% CI on 50 studies x 4
    candidates, 94% by study)."""
    if groups is not None and len(groups) != len(x):
        raise ValueError(f"{len(groups)} group labels but {len(x)} scores")
    kept = _kept_rows(x, y)
    a, b = _pairs(x, y)
    n = len(a)
    if n < 3:
        return Correlation(float("nan"), float("nan"), float("nan"), float("nan"), n, 0)
    stat = _statistic(method)
    rng = np.random.default_rng(seed)
    boots = []
    clusters, described = None, None
    if groups is not None:
        by_group: dict[Any, list[int]] = {}
        for position, row in enumerate(kept):
            by_group.setdefault(groups[row], []).append(position)
        clusters = [np.asarray(rows) for rows in by_group.values()]
        described = f"{groups_name}: {len(clusters)} groups"
    with _constant_input_is_nan():
        result = stat(a, b)
        for _ in range(resamples):
            if clusters is None:
                idx = rng.integers(0, n, n)
            else:
                idx = np.concatenate([clusters[k] for k in rng.integers(0, len(clusters), len(clusters))])
            value = stat(a[idx], b[idx]).statistic
            if not math.isnan(value):  # a resample with one distinct value has no correlation
                boots.append(value)
    tail = (1 - confidence) / 2 * 100
    low, high = (np.percentile(boots, [tail, 100 - tail]) if boots else (float("nan"), float("nan")))
    return Correlation(float(result.statistic), float(low), float(high), float(result.pvalue), n, resamples,
                       len(boots), described)


def why_no_correlation(x: Sequence[float | None], y: Sequence[float | None], scores: str = "the judge",
                       values: str = "the experts") -> str | None:
    """Why a correlation of ``x`` with ``y`` is undefined (NaN), or None when it is defined: fewer than 3 rows with
    both values, or one side the same on every such row (a constant ranks nothing)."""
    a, b = _pairs(x, y)
    if len(a) < 3:
        return (f"{len(a)} of {len(x)} rows have both a score from {scores} and a value from {values}; a correlation "
                "needs 3")
    for side, name in ((a, scores), (b, values)):
        if np.all(side == side[0]):
            return f"{name} gave all {len(a)} rows the same value ({side[0]:g}): a constant ranks nothing"
    return None


def kendall_tau(x, y, **kwargs) -> Correlation:
    return correlation(x, y, "kendall", **kwargs)


def spearman(x, y, **kwargs) -> Correlation:
    return correlation(x, y, "spearman", **kwargs)


def mae(predicted: Sequence[float | None], expert: Sequence[float | None]) -> dict[str, float]:
    """Mean absolute error and its (population) std, as GREEN reports "MAE ± std"."""
    a, b = _pairs(predicted, expert)
    diff = np.abs(a - b)
    return {"mae": float(diff.mean()) if len(diff) else float("nan"),
            "std": float(diff.std()) if len(diff) else float("nan"), "n": int(len(diff))}


def category_accuracy(predicted: Sequence[Sequence[float]], expert: Sequence[Sequence[float]]) -> list[float]:
    """Per category, the share of reports where the judge's count equals the expert mean rounded to the
    nearest integer (GREEN Sec. 4.1)."""
    p, e = np.asarray(predicted, dtype=float), np.rint(np.asarray(expert, dtype=float))
    return [float(v) for v in (p == e).mean(axis=0)]


def error_type_f1(human: Sequence[Sequence[int]], model: Sequence[Sequence[int]]) -> list[dict[str, float]]:
    """VERT App. C: count-level TP/FP/FN per report and category, summed over reports; 0 when a
    denominator is 0."""
    h, g = np.asarray(human, dtype=float), np.asarray(model, dtype=float)
    tp = np.minimum(h, g).sum(axis=0)
    fp = np.maximum(0, g - h).sum(axis=0)
    fn = np.maximum(0, h - g).sum(axis=0)
    out = []
    for t, f_p, f_n in zip(tp, fp, fn):
        precision = t / (t + f_p) if t + f_p else 0.0
        recall = t / (t + f_n) if t + f_n else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        out.append({"precision": float(precision), "recall": float(recall), "f1": float(f1),
                    "tp": float(t), "fp": float(f_p), "fn": float(f_n)})
    return out


def preference_accuracy(score_a: Sequence[float], score_b: Sequence[float], expert_prefers_a: Sequence[bool],
                        higher_is_better: bool = True) -> float:
    """GREEN Sec. 4.3.2: share of pairs where the metric prefers the report the experts preferred
    (ties count as wrong)."""
    right = 0
    for a, b, pref in zip(score_a, score_b, expert_prefers_a):
        if a == b:
            continue
        metric_prefers_a = (a > b) == higher_is_better
        right += metric_prefers_a == bool(pref)
    return right / len(score_a) if len(score_a) else float("nan")


def paired_randomization_test(system_a: Sequence[float], system_b: Sequence[float], expert: Sequence[float],
                              trials: int = 1000, seed: int = 0, method: str = "kendall") -> dict[str, float]:
    """Is A's correlation with the experts different from B's? Swap A and B's scores per sample at random
    and count how often |corr(A') − corr(B')| ≥ the observed difference (two-sided, add-one smoothing).

    What is swapped is each metric's standardized ranks, not its raw scores: swapping raw scores between a
    0..1 metric and a 0..5 error count puts every swapped value at one end of the other's ranking, so the same two
    rankings gave p = 0.007 or 0.128 depending on units (review 24). Deutsch, Dror & Roth (2021, TACL, "A
    Statistical Analysis of Summarization Evaluation Metrics using Resampling Methods"; their nlpstats
    ``permutation_test``) standardize each metric before permuting; ranks first make the p-value depend on the
    rankings only, as the rank correlations compared here do (the observed difference is unchanged)."""
    a, b = (_standard_ranks(np.asarray(v, dtype=float)) for v in (system_a, system_b))
    e = np.asarray(expert, dtype=float)
    stat = _statistic(method)

    def diff(x, y):
        return stat(x, e).statistic - stat(y, e).statistic

    with _constant_input_is_nan():
        observed = diff(a, b)
        if math.isnan(observed):
            # a metric with one score for every row has no correlation: no difference, so no p-value (a NaN
            # observed difference compared as "never reached" and gave p = 1/(trials+1), the smallest there is)
            return {"difference": float("nan"), "p_value": float("nan"), "trials": 0}
        rng = np.random.default_rng(seed)
        hits = counted = 0
        for _ in range(trials):
            swap = rng.random(len(a)) < 0.5
            permuted = diff(np.where(swap, b, a), np.where(swap, a, b))
            if math.isnan(permuted):  # a swap that leaves one side constant has no difference: not a trial
                continue
            counted += 1
            hits += abs(permuted) >= abs(observed) - 1e-12
    return {"difference": float(observed), "p_value": (hits + 1) / (counted + 1), "trials": counted}


def _standard_ranks(scores):
    """Average ranks (ties share theirs), centred and scaled to unit variance: the same for any monotone rescaling
    of ``scores``. A constant vector stays constant (its correlation is undefined either way)."""
    from scipy import stats

    return _zscores(stats.rankdata(scores))


def _zscores(m):
    """Each row (the last axis) centred and scaled by its population std; a constant row only centred (zeros)."""
    std = m.std(axis=-1, keepdims=True)
    return (m - m.mean(axis=-1, keepdims=True)) / np.where(std == 0, 1, std)


def paired_t_test(after: Sequence[float], before: Sequence[float]) -> dict[str, Any]:
    """Paired t-test of after − before (scipy.stats.ttest_rel), with the two cases where it has no answer said
    so: identical scores are t 0, p 1 (no shift at all); a difference that is the same for every pair has zero
    variance, so t would be ±inf and p 0 for any shift however small: t and p are None with the reason, not
    a "significant" p of 0. Fewer than 2 pairs: None with the reason."""
    from scipy import stats

    a, b = np.asarray(after, dtype=float), np.asarray(before, dtype=float)
    if len(a) < 2:
        return {"t": None, "p_value": None, "reason": f"{len(a)} pair(s): no paired t-test"}
    diff = a - b
    # absolute tolerances only (float rounding of score differences, as compare's ties): a relative one called
    # differences near 10 that vary by 1e-4 "the same" (review 29a), as compare's test once did
    if np.allclose(diff, 0, rtol=0, atol=TIE_TOLERANCE):
        return {"t": 0.0, "p_value": 1.0, "reason": "identical scores under both references"}
    if np.allclose(diff, diff[0], rtol=0, atol=TIE_TOLERANCE):
        return {"t": None, "p_value": None,
                "reason": f"every pair differs by the same {diff[0]:+.4g}: zero variance, the t-test is undefined"}
    result = stats.ttest_rel(a, b)
    return {"t": float(result.statistic), "p_value": float(result.pvalue), "reason": None}


def bonferroni_over_tests_run(rows: list[dict[str, Any]], alpha: float) -> list[dict[str, Any]]:
    """Sets each row's threshold α / (the tests run: rows with a p-value) and whether it is significant (None
    where no test ran); a row without a test does not tighten the others' threshold."""
    threshold = alpha / max(1, sum(row["p_value"] is not None for row in rows))
    for row in rows:
        row["threshold"] = threshold
        row["significant"] = None if row["p_value"] is None else bool(row["p_value"] < threshold)
    return rows


def rexamine_site_tests(original: dict[str, dict[str, Sequence[float]]], standardized: dict[str, dict[str, Sequence[float]]],
                        alpha: float = 0.05, higher_is_better: Mapping[str, bool] | None = None,
                        convention: str = "paper") -> list[dict[str, Any]]:
    """ReXamine-Global Sec. 2: for each metric and site, a paired t-test of scores against the original vs
    the style-standardized references; significant when p < α / (metrics × sites) (Bonferroni over the tests
    run: a site whose differences have zero variance has none).

    original[metric][site] and standardized[metric][site] are per-report scores in the same order.

    convention="paper" (default) gives the paper's sign (Sec. 2, Table 2): scores are first oriented so that
    higher means WORSE (higher-is-better metrics multiplied by -1; `higher_is_better[metric]`, True when not
    given), and t is that of standardized - original, so a negative t means the metric rates the AI candidates
    better against the standardized references. convention="raw": t of original - standardized on the scores
    as given (the same t for higher-is-better metrics, the opposite sign for lower-is-better ones)."""

    if convention not in ("paper", "raw"):
        raise ValueError(f"unknown convention {convention!r}: 'paper' or 'raw'")
    directions = dict(higher_is_better or {})
    tests = [(m, s) for m in original for s in original[m]]
    out = []
    for metric, site in tests:
        x, y = np.asarray(original[metric][site], float), np.asarray(standardized[metric][site], float)
        if convention == "paper":
            sign = -1.0 if directions.get(metric, True) else 1.0  # oriented: higher = worse
            test = paired_t_test(sign * y, sign * x)
        else:
            test = paired_t_test(x, y)
        out.append({"metric": metric, "site": site, "mean_original": float(x.mean()),
                    "mean_standardized": float(y.mean()), "t": test["t"], "p_value": test["p_value"],
                    "threshold": None, "significant": None, "t_convention": convention,
                    **({"reason": test["reason"]} if test["reason"] else {})})
    return bonferroni_over_tests_run(out, alpha)


def per_site_spearman(scores: Sequence[float], expert: Sequence[float], sites: Sequence[str], **kwargs) -> dict[str, dict]:
    """ReXamine-Global: Spearman between metric and expert scores within each site."""
    out = {}
    for site in sorted(set(sites)):
        idx = [i for i, s in enumerate(sites) if s == site]
        out[site] = spearman([scores[i] for i in idx], [expert[i] for i in idx], **kwargs).to_dict()
    return out


def ensemble_average(score_lists: Sequence[Sequence[float]], standardize: bool = True) -> list[float]:
    """VERT Sec. 4.1.2: the mean of several metrics' scores per sample (z-scored first, so scales mix)."""
    m = np.asarray(score_lists, dtype=float)
    if standardize:
        m = _zscores(m)
    return [float(v) for v in m.mean(axis=0)]


def ensemble_linear(train_scores: Sequence[Sequence[float]], train_expert: Sequence[float],
                    test_scores: Sequence[Sequence[float]]) -> dict[str, Any]:
    """VERT Sec. 4.1.2: least-squares weights (with intercept) fitted on a train split, applied to test."""
    x = np.column_stack([np.ones(len(train_expert)), np.asarray(train_scores, dtype=float).T])
    weights, *_ = np.linalg.lstsq(x, np.asarray(train_expert, dtype=float), rcond=None)
    t = np.column_stack([np.ones(np.asarray(test_scores).shape[1]), np.asarray(test_scores, dtype=float).T])
    return {"intercept": float(weights[0]), "weights": [float(w) for w in weights[1:]],
            "test_predictions": [float(v) for v in t @ weights]}
