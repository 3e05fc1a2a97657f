"""What metrics are graded against, on which rows: expert targets, held-out splits, inter-rater baselines and
ensembles. Pure functions over lists; the dataset columns are those of radmetrics/data/schema.py.

- targets (GREEN Sec. 4.1 and Table 6, ER²Score Table 2): "score" (the dataset's headline expert_score),
  "significant" (mean clinically significant errors over raters), "total" (significant + insignificant),
  "per-category" (each error category (a)-(f) on its own);
- a seeded held-out subset (FineRadScore Table 10 uses 40 ReXVal pairs);
- inter-rater rows (GREEN Table 6 "Inter-Expert"): each rater against the mean of the other raters;
- ensembles (VERT Sec. 4.1.2 / Table 5): average of z-scored oriented scores, and linear regression fitted on
  the training rows (the complement of the held-out split) or, without a split, cross-validated.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from radmetrics.errors import InputError

TARGETS = ("score", "significant", "total", "per-category")


def _has_categories(data, column: str) -> list[bool]:
    if column not in data.column_names:
        return [False] * len(data)
    return [v is not None and len(v) == 6 for v in data[column]]


def expert_target(data, target: str) -> tuple[list[float | None], bool, str]:
    """(values, higher_is_better, description) of the expert judgment to grade against."""
    if target not in TARGETS:
        raise InputError(f"unknown target {target!r}; choose one of {', '.join(TARGETS)}")
    if target == "score":
        return list(data["expert_score"]), bool(data[0]["expert_higher_is_better"]), "the dataset's expert_score"
    sig_ok = _has_categories(data, "expert_significant")
    if not any(sig_ok):
        raise InputError(f"target {target!r} needs per-category expert error counts (expert_significant); this "
                         "dataset has none: use --target score")
    sig = [_mean_total(data[i], ("rater_significant",)) if ok else None for i, ok in enumerate(sig_ok)]
    if target in {"significant", "per-category"}:
        return sig, False, "mean clinically significant errors over raters"
    insig_ok = _has_categories(data, "expert_insignificant")
    if not any(insig_ok):
        raise InputError("target 'total' needs insignificant error counts (expert_insignificant); this dataset "
                         "has none: use --target significant")
    total = [_mean_total(data[i], ("rater_significant", "rater_insignificant")) if s is not None and ok else None
             for i, (s, ok) in enumerate(zip(sig, insig_ok))]
    return total, False, "mean clinically significant + insignificant errors over raters"


def _mean_total(row, rater_columns: tuple[str, ...]) -> float:
    """The raters' mean error total of a row. A sum of per-category means in float leaves equal means a last digit
    apart (37/6 as 6.166666666666666 or ...667), and Kendall τ-b and Spearman then rank what is a tie; so it is one
    division of the raters' integer counts where the row has them, else the sum of the means with that noise cut."""
    raters = [row.get(c) or [] for c in rater_columns]
    if raters[0] and all(len(r) == len(raters[0]) for r in raters):
        return sum(sum(map(sum, r)) for r in raters) / len(raters[0])
    means = [row["expert_significant"], *([row["expert_insignificant"]] if len(rater_columns) > 1 else [])]
    return float(f"{sum(sum(m) for m in means):.12g}")


def held_out(n: int, size: float | int | None, seed: int = 0) -> tuple[list[int], list[int]]:
    """(train, test) row indices: a seeded random test subset of `size` rows (an int) or share (0 < size < 1);
    everything when size is None (train is then empty)."""
    if size is None:
        return [], list(range(n))
    k = int(round(size * n)) if isinstance(size, float) and size < 1 else int(size)
    if not 2 < k <= n:
        raise InputError(f"--split {size}: the held-out subset must have 3..{n} rows, got {k}")
    order = np.random.default_rng(seed).permutation(n)
    return sorted(int(i) for i in order[k:]), sorted(int(i) for i in order[:k])


def inter_rater(data, target: str) -> dict[str, list[float | None]] | None:
    """Per rater, (its count per row, the mean of the other raters' counts per row) — the rater is then
    correlated with the others like a metric. None when the dataset has no per-rater counts."""
    if "rater_significant" not in data.column_names:
        return None
    rows = []
    for i in range(len(data)):
        sig = data[i]["rater_significant"] or []
        insig = data[i].get("rater_insignificant") or [[0] * 6] * len(sig)
        totals = [sum(s) + (sum(t) if target == "total" else 0) for s, t in zip(sig, insig)]
        rows.append(totals)
    n_raters = max((len(r) for r in rows), default=0)
    if n_raters < 2:
        return None
    out: dict[str, list[float | None]] = {}
    for r in range(n_raters):
        own, others = [], []
        for totals in rows:
            if len(totals) == n_raters:
                own.append(float(totals[r]))
                others.append(float(np.mean([t for k, t in enumerate(totals) if k != r])))
            else:
                own.append(None)
                others.append(None)
        out[f"rater {r}"] = own
        out[f"others of rater {r}"] = others
    return out


def plain_average(columns: Sequence[Sequence[float | None]]) -> list[float | None]:
    """Mean of the columns per row (VERT Sec. 4.1.2's average operator, for members on one scale); None where any
    is missing."""
    return [None if any(v is None for v in row) else float(np.mean(row)) for row in zip(*columns, strict=True)]


#: a plain mean follows the member whose scores spread widest: at 3 times another's spread (max − min over the rows)
#: the narrower member carries a quarter of the say or less, and `mean:` says so (review 24: GREEN, 0..1, averaged
#: with GREEN-EC's error counts, 0..5, was GREEN-EC alone)
MEAN_SPREAD_RATIO = 3.0


def mixed_scales_note(name: str, columns: dict[str, Sequence[float | None]]) -> str | None:
    """The line that says a plain-mean ensemble's members are on different scales (their ranges of scores, member ->
    scores, spread MEAN_SPREAD_RATIO times apart or more), or None."""
    ranges = {m: (min(vals), max(vals)) for m, col in columns.items() if (vals := [v for v in col if v is not None])}
    spread = {m: high - low for m, (low, high) in ranges.items()}
    if len(spread) < 2 or min(spread.values()) <= 0 or max(spread.values()) < MEAN_SPREAD_RATIO * min(spread.values()):
        return None  # a constant member ranks nothing either way
    widest = max(spread, key=spread.get)
    shown = ", ".join(f"{m} {low:.3g} to {high:.3g}" for m, (low, high) in ranges.items())
    return (f"{name}: its members' scores spread over different ranges ({shown}), so the plain mean mostly follows "
            f"{widest}; average:{','.join(columns)} z-scores each member first")


def zscore_average(columns: Sequence[Sequence[float | None]]) -> list[float | None]:
    """Mean of z-scored columns per row (already oriented so that higher = better); None where any is missing."""
    m = np.asarray([[np.nan if v is None else v for v in col] for col in columns], dtype=float)
    mean = np.nanmean(m, axis=1, keepdims=True)
    std = np.nanstd(m, axis=1, keepdims=True)
    z = (m - mean) / np.where(std == 0, 1, std)
    avg = z.mean(axis=0)
    return [None if np.isnan(v) else float(v) for v in avg]


def rows_to_fit(members: int) -> int:
    """Rows a linear ensemble's least-squares fit needs: a weight per member and an intercept, plus one."""
    return members + 2


def linear_ensemble(columns: Sequence[Sequence[float | None]], target: Sequence[float | None],
                    train: Sequence[int], test: Sequence[int], folds: int = 5, seed: int = 0) -> dict[str, Any]:
    """Least-squares weights (with intercept, numpy lstsq) predicting the oriented expert target from the
    metrics. With a train split: fitted on `train`, predictions for every row (only test rows are graded).
    Without: `folds`-fold cross-validation (seeded), each row predicted by the fit that did not see it."""
    x = np.asarray([[np.nan if v is None else v for v in col] for col in columns], dtype=float).T
    y = np.asarray([np.nan if v is None else v for v in target], dtype=float)
    usable = ~np.isnan(x).any(axis=1) & ~np.isnan(y)

    def fit(rows):
        rows = [i for i in rows if usable[i]]
        if len(rows) < rows_to_fit(x.shape[1]):
            return None
        design = np.column_stack([np.ones(len(rows)), x[rows]])
        weights, *_ = np.linalg.lstsq(design, y[rows], rcond=None)
        return weights

    predictions = np.full(len(y), np.nan)
    fits = []
    if train:
        weights = fit(train)
        if weights is not None:
            rows = np.where(~np.isnan(x).any(axis=1))[0]
            predictions[rows] = np.column_stack([np.ones(len(rows)), x[rows]]) @ weights
            fits.append(weights)
        scheme = f"fitted on the {len(train)} training rows"
    else:
        order = np.random.default_rng(seed).permutation(len(y))
        for k in range(folds):
            held = order[k::folds]
            weights = fit([i for i in order if i not in set(held)])
            if weights is None:
                continue
            rows = [i for i in held if not np.isnan(x[i]).any()]
            if rows:
                predictions[rows] = np.column_stack([np.ones(len(rows)), x[rows]]) @ weights
            fits.append(weights)
        scheme = f"{folds}-fold cross-validation (seed {seed})"
    mean_weights = np.mean(fits, axis=0) if fits else None
    return {"predictions": [None if np.isnan(v) else float(v) for v in predictions], "scheme": scheme,
            "intercept": None if mean_weights is None else float(mean_weights[0]),
            "weights": None if mean_weights is None else [float(w) for w in mean_weights[1:]]}
