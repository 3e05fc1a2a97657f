"""Statistics for comparing report generators on the same references: pure functions, explicit seeds, scipy.

- per system: mean over scored rows with a percentile bootstrap CI (scipy.stats.bootstrap), expanded on few rows so
  that it holds its level (Hesterberg 2015; `expanded_confidence`);
- per pair of systems, on the rows both have scored: mean difference A − B with a paired percentile bootstrap
  CI (resampling rows, i.e. the bootstrap of the per-row differences; Koehn 2004; expanded the same way), and a two-sided paired
  approximate-randomization test (scipy.stats.permutation_test, permutation_type="samples": each row's two
  scores are swapped at random; exact over all 2^n swaps when that is no more than the resamples asked for;
  otherwise (hits + 1) / (resamples + 1)) (Riezler & Maxwell 2005; Noreen 1989), with enough trials that the
  smallest p it can give survives Holm's correction across the pairs (`randomization_trials`);
- Holm's step-down correction across the pairs of one metric (Holm 1979);
- win / tie / loss counts oriented by the metric's direction.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np


#: two scores closer than this are the same score (a tie in win / tie / loss; no difference for the test)
TIE_TOLERANCE = 1e-9
#: resamples an interval or test takes, 0 (none) aside, for `compare` in Python and every report command's
#: --resamples: fewer than 10 make a percentile interval of a point or two that need not hold the estimate (1
#: resample printed "95% CI [0.7505, 0.7505]" for a mean of 0.7657); 99999999999999999999999 was numpy's "Maximum
#: allowed dimension exceeded" traceback once the metrics had run, and a million already puts an interval's ends
#: within its printed rounding
MIN_RESAMPLES, MAX_RESAMPLES = 10, 1_000_000
#: resamples beyond each end of a bootstrap interval at least, where that is cheap (`bootstrap_resamples`)
MIN_RESAMPLES_PER_TAIL = 5
#: resampled scores a raise of the resamples may cost (about a second)
MAX_RAISED_DRAWS = 100_000_000
#: rows a mean's or a difference's bootstrap interval needs: a bootstrap interval cannot reach past the data, so on
#: few rows it cannot hold its level however it is expanded (review 37, 600 seeded runs: a "95%" interval held the
#: truth 75% / 87-90% / 92% of the time at 3 / 4 / 5 rows; at 3 and 4 rows it is about the data's range); with two
#: rows a resample's mean takes one of three values, and "[+0.60, +0.80]" excluded 0 beside an exact p of 0.5
MIN_ROWS_FOR_INTERVAL = 5


def rows_for_interval(confidence: float) -> int:
    """Rows a bootstrap interval at ``confidence`` needs: at least `MIN_ROWS_FOR_INTERVAL`, and enough that the
    data's range can hold the truth that often. A bootstrap interval lies within the range of the n rows, which
    misses the median of a symmetric distribution with chance 2^(1-n): at most 93.75% on 5 rows, so a "95%"
    interval on 5 rows held the truth ~93% of the time (review 38); 95% needs 6 rows, 99% 8."""
    return max(MIN_ROWS_FOR_INTERVAL, math.ceil(1 + math.log2(1 / max(1 - confidence, 1e-300)) - 1e-9))


@dataclass(frozen=True)
class Interval:
    """An estimate with a CI; value/ci are None (never NaN) with `reason` set when it cannot be computed."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_settings(resamples: Any, seed: Any, confidence: Any, alpha: Any) -> None:
    """The statistics settings of `radmetrics.compare`, checked before any judging, as the CLI's flags are
    (radmetrics.cli.stat_options): alpha=nan was a ValueError traceback once every metric had run, confidence=nan
    reported every interval as n/a, seed=-1 was numpy's error after the judging, resamples=3 a "95% CI" of three
    resamples."""
    from radmetrics.errors import InputError
    from radmetrics.types import is_finite_number

    def whole(value: Any) -> bool:
        return isinstance(value, (int, np.integer)) and not isinstance(value, bool)

    if not whole(resamples) or not (resamples == 0 or MIN_RESAMPLES <= resamples <= MAX_RESAMPLES):
        raise InputError(f"resamples must be 0 (no intervals or tests) or a whole number from {MIN_RESAMPLES} to "
                         f"{MAX_RESAMPLES:,}, not {resamples!r}")
    if not whole(seed) or seed < 0:
        raise InputError(f"seed must be a whole number of at least 0, not {seed!r}")
    for name, value in (("confidence", confidence), ("alpha", alpha)):
        if not is_finite_number(value) or not 0 < value < 1:
            raise InputError(f"{name} must be a number strictly between 0 and 1, not {value!r}")


def _finite(values: Sequence[float | None]) -> np.ndarray:
    return np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)


def expanded_confidence(n: int, confidence: float) -> float:
    """The level a percentile bootstrap interval of a mean is taken at so that it covers as a t interval would on
    ``n`` rows: the "expanded percentile interval" of Hesterberg (2015, "What teachers should know about the
    bootstrap", The American Statistician 69(4); R's resample::CI.percentile(expand=TRUE)): its normal quantile is
    sqrt(n / (n - 1)) times Student's t quantile with n - 1 degrees of freedom. The plain percentile interval is too
    narrow on few rows (it is the bootstrap of the plug-in standard error and takes the normal quantile): on
    GREEN-like differences under the null it excluded a true zero in 9.1-9.7% of runs at 10 rows where 5% was asked;
    expanded, 5.1% (review 37's seeded reruns, 2,000 runs; 4.8-5.9% at 30-100 rows;
    `tests/test_compare.py::test_intervals_are_expanded_on_few_rows_and_hold_their_level`). 0.95 becomes 0.983 at
    10 rows, 0.963 at 30, 0.954 at 100, 0.9504 at 1,000."""
    from scipy import stats

    if n < 2:
        return confidence
    quantile = math.sqrt(n / (n - 1)) * stats.t.ppf((1 + confidence) / 2, n - 1)
    return float(min(1 - 2 * stats.norm.sf(quantile), 1 - 1e-12))


def bootstrap_resamples(resamples: int, rows: int, level: float) -> int:
    """The resamples an interval at ``level`` over ``rows`` rows takes: those asked for, raised (as
    `randomization_trials` raises the test's) so that at least `MIN_RESAMPLES_PER_TAIL` lie beyond each end, where
    that costs at most `MAX_RAISED_DRAWS` resampled scores. An end with fewer is the most extreme resample or two and
    moves with the seed: the expansion takes a 95% interval on 6 rows at the 99.5% level, whose ends 1,000 resamples
    put on the 2nd-3rd most extreme resample; it takes 2,057."""
    needed = _tail_resamples(level)
    return int(min(max(resamples, needed), max(resamples, MAX_RAISED_DRAWS // max(rows, 1)), MAX_RESAMPLES))


def _tail_resamples(level: float) -> int:
    """Resamples an interval at ``level`` takes for `MIN_RESAMPLES_PER_TAIL` beyond each of its ends."""
    return math.ceil(MIN_RESAMPLES_PER_TAIL / max((1 - level) / 2, 1e-300))


def resamples_beyond(resamples: int, level: float) -> int:
    """Resamples beyond each end of a percentile interval at ``level`` drawn from ``resamples`` (distinct resampled
    means): scipy's quantile interpolates between the sorted resamples, putting the lower end at position
    (resamples - 1) x (1 - level) / 2 from 0, so the whole positions below it lie beyond it: 8,695 resamples of a
    99.9% interval over 11,500 rows put it at 4.33, with 5 beyond (review 39a: resamples x (1 - level) / 2 rounded,
    4, read "fewer than 5"); 1,000 of a 99% interval over 2M rows (expanded to 99.0001%) at 4.995, with 5."""
    return math.ceil((resamples - 1) * (1 - level) / 2 - 1e-9)


def thin_tails(resamples: int, rows: int, confidence: float) -> tuple[int, int | None] | None:
    """Where `bootstrap_resamples` could not raise an interval's resamples far enough (their cost, rows x resamples,
    is capped at `MAX_RAISED_DRAWS`; the count at `MAX_RESAMPLES`): (resamples used, the --resamples that gives its
    ends their resamples), the second None where no --resamples allowed does (past 99.999%, or 99.9% on 11-13 rows
    once expanded: a lower confidence does). None when the ends have their resamples, or there is no interval (too
    few rows, --resamples 0). Example: a 99.9% interval over 50,000 rows needs 10,009 resamples and is drawn with
    2,000: about one resample lies beyond each end, which moves with the seed."""
    if resamples <= 0 or rows < rows_for_interval(confidence):
        return None
    level = expanded_confidence(rows, confidence)
    used = bootstrap_resamples(resamples, rows, level)
    if resamples_beyond(used, level) >= MIN_RESAMPLES_PER_TAIL:
        return None
    # asked for, they are drawn (the cost cap never lowers what was asked); 1,000,000 was advised where they
    # still left one beyond each end, after 1,000,000 had been drawn (review 39a)
    needed = min(_tail_resamples(level), MAX_RESAMPLES)
    return used, needed if resamples_beyond(needed, level) >= MIN_RESAMPLES_PER_TAIL else None


def _percentile_bootstrap(samples: np.ndarray, resamples: int, seed: int,
                          confidence: float) -> tuple[float | None, float | None]:
    """The expanded percentile bootstrap interval of the mean of ``samples`` (`expanded_confidence`). Its callers
    give no interval for samples equal up to `TIE_TOLERANCE` (every resample would have the same mean)."""
    from scipy import stats

    if resamples <= 0:
        return None, None
    level = expanded_confidence(len(samples), confidence)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on near-degenerate resamples; the percentiles stay defined
        # batches of at most ~4M resampled scores, as the randomization test: 1,000 resamples of 200,000 rows were
        # one 3.2 GB array (the same draws either way, so the same interval)
        result = stats.bootstrap((samples,), np.mean, n_resamples=bootstrap_resamples(resamples, len(samples), level),
                                 confidence_level=level, method="percentile", rng=np.random.default_rng(seed),
                                 vectorized=True, batch=max(1, 4_000_000 // len(samples)))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def mean_ci(values: Sequence[float | None], resamples: int = 1000, seed: int = 0,
            confidence: float = 0.95) -> Interval:
    """Mean of the scored values with a percentile bootstrap CI (expanded on few rows: `expanded_confidence`);
    unscored (None/NaN/inf) values are left out."""
    x = _finite(values)
    if len(x) == 0:
        return Interval(None, None, None, 0, "no scored rows")
    if len(x) == 1:
        return Interval(float(x[0]), None, None, 1, "one scored row: no interval")
    needed = rows_for_interval(confidence)
    if len(x) < needed:
        return Interval(float(x.mean()), None, None, len(x), f"{len(x)} scored rows: too few for a bootstrap "
                        f"interval to hold its level (needs {needed})")
    if np.allclose(x, x[0], rtol=0, atol=TIE_TOLERANCE):
        # every resample has the same mean: "1.0000 [1.0000, 1.0000]" read as a mean known exactly from 20 rows;
        # equal up to float noise (0.1 + 0.2 beside 0.3) is equal, as for a pair's differences
        return Interval(float(x[0]), None, None, len(x), f"all {len(x)} scored rows are {x[0]:.4g}: a bootstrap "
                        "interval would have no width")
    low, high = _percentile_bootstrap(x, resamples, seed, confidence)
    return Interval(float(x.mean()), low, high, len(x))


def proportion_ci(successes: Sequence[bool | float], confidence: float = 0.95, resamples: int = 1000) -> Interval:
    """The share of successes with its Wilson score interval (scipy.stats.binomtest(...).proportion_ci). A percentile
    bootstrap of a share near 1 on few rows is often the point itself: 20 pairs all right gave "1.00 [1.00, 1.00]",
    and at a true accuracy of 0.95 on 20 pairs it covered the truth 59% of the time (Wilson: about 95%, never zero
    width). ``resamples`` 0 keeps every report command's "no intervals or tests" meaning."""
    from scipy import stats

    n = len(successes)
    if n == 0:
        return Interval(None, None, None, 0, "no pairs")
    k = int(sum(bool(v) for v in successes))
    if resamples <= 0:
        return Interval(k / n, None, None, n)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return Interval(k / n, float(ci.low), float(ci.high), n)


def paired_rows(a: Sequence[float | None], b: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray]:
    """The rows both systems have a score for (a row unscored on either side carries no paired evidence)."""
    if len(a) != len(b):
        raise ValueError(f"paired scores differ in length: {len(a)} vs {len(b)}")
    keep = [(x, y) for x, y in zip(a, b) if x is not None and y is not None
            and math.isfinite(x) and math.isfinite(y)]  # inf - inf is NaN: every swap's statistic (review 25, H1)
    if not keep:
        return np.array([]), np.array([])
    x, y = zip(*keep)
    return np.asarray(x, dtype=float), np.asarray(y, dtype=float)


def paired_difference_ci(a: Sequence[float | None], b: Sequence[float | None], resamples: int = 1000,
                         seed: int = 0, confidence: float = 0.95) -> Interval:
    """Mean of A − B over the rows both scored, with the paired percentile bootstrap CI (expanded on few rows:
    `expanded_confidence`). Resampling rows and
    taking mean(A*) − mean(B*) equals resampling the per-row differences d = A − B and taking mean(d*). No interval
    (None, with the reason) on fewer than `rows_for_interval` rows, or when every row differs by the same
    amount."""
    x, y = paired_rows(a, b)
    if len(x) == 0:
        return Interval(None, None, None, 0, "no row scored for both systems")
    if len(x) == 1:
        return Interval(float(x[0] - y[0]), None, None, 1, "one row scored for both systems: no interval")
    d = x - y
    needed = rows_for_interval(confidence)
    if len(x) < needed:
        return Interval(float(d.mean()), None, None, len(x),
                        f"{len(x)} rows scored for both systems: too few for a bootstrap interval to hold its level "
                        f"(needs {needed})")
    if np.allclose(d, d[0], rtol=0, atol=TIE_TOLERANCE):
        # every resample has the same mean: a zero-width "CI" around a nonzero difference looked certain, and float
        # noise (0.05000000000000001 vs 0.050000000000000044) made it a bootstrap of rounding errors
        return Interval(float(d.mean()), None, None, len(x),
                        "no paired row differs" if abs(d[0]) <= TIE_TOLERANCE else
                        f"every one of the {len(x)} paired rows differs by the same {d[0]:+.4g} (zero variance): "
                        "a bootstrap interval would have no width; the test says whether that is significant")
    low, high = _percentile_bootstrap(d, resamples, seed, confidence)
    return Interval(float(d.mean()), low, high, len(x))


def randomization_trials(resamples: int, pairs: int, alpha: float) -> int:
    """Randomization trials for ``pairs`` tests of one metric: the resamples asked for, raised so that the smallest
    p the test can give (2 / (trials + 1), two-sided) survives Holm's correction with room to spare
    (``pairs`` x that p <= alpha / 10). With 1,000 trials and 28 pairs (8 systems) no p could fall below
    28 x 2/1001 = 0.056: no pair could ever be significant at 0.05. 0 stays 0 (no tests asked for)."""
    if resamples <= 0:
        return 0
    return max(resamples, math.ceil(20 * max(1, pairs) / alpha))


def smallest_p(n_paired: int, trials: int, differing: int | None = None) -> float:
    """The smallest two-sided p `paired_randomization_p` can give on ``n_paired`` rows, ``differing`` of which differ
    (all, by default): 2 / 2^differing for the exact test (every swap enumerated; swapping a tied row changes
    nothing, so each extreme split counts 2^ties times), 2 / (trials + 1) otherwise (the observed split counts as
    one of the trials)."""
    if n_paired < 63 and 2**n_paired <= trials:
        return min(1.0, 2 / 2 ** (n_paired if differing is None else differing))
    return min(1.0, 2 / (trials + 1))


def paired_randomization_p(a: Sequence[float | None], b: Sequence[float | None], resamples: int = 1000,
                           seed: int = 0) -> float | None:
    """Two-sided p-value of "A and B score the same on average": randomly swapping A's and B's score within each
    row (the null makes the labels exchangeable per row), how often is |mean(A') − mean(B')| at least the observed
    |mean(A) − mean(B)|. None when fewer than 2 rows are scored by both."""
    from scipy import stats

    x, y = paired_rows(a, b)
    if len(x) < 2 or resamples <= 0:  # resamples 0: no test asked for
        return None
    # no difference on any row (within win_tie_loss's tie tolerance): p = 1. An absolute tolerance only: numpy's
    # default relative one (1e-5 of the score) called B's consistent +0.005 on scores near 1000 "identical", p = 1,
    # beside a CI excluding 0 and 0/0/8 wins (review 29a)
    if np.allclose(x, y, rtol=0, atol=TIE_TOLERANCE):
        return 1.0

    def mean_difference(u, v, axis):
        return np.mean(u, axis=axis) - np.mean(v, axis=axis)

    # batches of at most ~4M swapped scores: many trials on many rows would otherwise be one large array
    result = stats.permutation_test((x, y), mean_difference, permutation_type="samples", vectorized=True,
                                    n_resamples=resamples, batch=max(1, 4_000_000 // len(x)),
                                    alternative="two-sided", rng=np.random.default_rng(seed))
    return float(min(1.0, result.pvalue))


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values (step-down): sort the m p-values ascending, multiply the i-th (0-based) by m − i,
    take the running maximum, cap at 1. None stays None and does not count in m."""
    present = [(p, i) for i, p in enumerate(p_values) if p is not None]
    m = len(present)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(sorted(present)):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


def win_tie_loss(a: Sequence[float | None], b: Sequence[float | None], higher_is_better: bool = True,
                 tolerance: float = TIE_TOLERANCE) -> dict[str, int]:
    """Rows where A scores better / equal (within tolerance) / worse than B, on rows both scored."""
    x, y = paired_rows(a, b)
    diff = (x - y) if higher_is_better else (y - x)
    return {"win": int((diff > tolerance).sum()), "tie": int((np.abs(diff) <= tolerance).sum()),
            "loss": int((diff < -tolerance).sum())}
