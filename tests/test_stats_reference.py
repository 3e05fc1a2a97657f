"""radmetrics.meta.stats against independent references: scipy's τ-b / ρ / bootstrap, and bootstrap percentiles
derived by hand from the exact bootstrap distribution (every one of the n^n resamples enumerated).

Seeds are fixed: the same resamples every run, so a failure reproduces.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sp

from radmetrics.meta import stats

# Seeded data with ties on both sides, as judge scores and expert error counts have.
RNG = np.random.default_rng(20261122)
X = np.round(RNG.uniform(0, 1, 20), 1).tolist()
Y = (np.round(np.asarray(X) * 4 + RNG.normal(0, 2.5, 20))).tolist()


def test_tau_and_rho_equal_scipy_on_tied_data():
    assert len(set(X)) < len(X) and len(set(Y)) < len(Y)  # the data has ties: τ-b, not τ-a, matters
    tau = stats.kendall_tau(X, Y, resamples=0)
    ref = sp.kendalltau(X, Y, variant="b")
    assert tau.value == pytest.approx(ref.statistic, abs=1e-12) and tau.p_value == pytest.approx(ref.pvalue)
    assert tau.n == 20 and tau.resamples == 0
    rho = stats.spearman(X, Y, resamples=0)
    ref = sp.spearmanr(X, Y)
    assert rho.value == pytest.approx(ref.statistic, abs=1e-12) and rho.p_value == pytest.approx(ref.pvalue)


def test_tau_b_by_hand_with_ties():
    # x = [1, 2, 2, 3], y = [1, 3, 2, 2]. Pairs (i<j): (0,1) C, (0,2) C, (0,3) C, (1,2) tied in x,
    # (1,3) D, (2,3) tied in y. nc = 3, nd = 1, n0 = 6, n1 (x ties) = 1, n2 (y ties) = 1:
    # τ-b = (3 - 1) / sqrt((6 - 1)(6 - 1)) = 2 / 5 = 0.4   (τ-a would be 2/6)
    assert stats.kendall_tau([1, 2, 2, 3], [1, 3, 2, 2], resamples=0).value == pytest.approx(0.4)


def test_spearman_by_hand():
    # ranks x = 1..5, y = [1, 3, 2, 5, 4]: d² = 0 + 1 + 1 + 1 + 1 = 4; ρ = 1 - 6·4 / (5·24) = 0.8
    assert stats.spearman([1, 2, 3, 4, 5], [1, 3, 2, 5, 4], resamples=0).value == pytest.approx(0.8)


@pytest.mark.parametrize("method", ["kendall", "spearman"])
def test_bootstrap_ci_agrees_with_scipy_bootstrap(method):
    """Percentile bootstrap over resampled (x, y) pairs, 95%: radmetrics vs scipy.stats.bootstrap(paired=True,
    method="percentile"), 4,000 resamples each with different random streams: the endpoints agree within
    Monte-Carlo error (measured: ≤ 0.013 apart); a 90% interval's lower end sits ≥ 0.04 higher."""
    ours = stats.correlation(X, Y, method, resamples=4000, seed=7)

    def statistic(a, b):
        fn = sp.kendalltau if method == "kendall" else sp.spearmanr
        return fn(a, b).statistic

    ref = sp.bootstrap((np.asarray(X), np.asarray(Y)), statistic, paired=True, vectorized=False,
                       n_resamples=4000, method="percentile", confidence_level=0.95,
                       random_state=np.random.default_rng(11))
    assert ours.ci_low == pytest.approx(ref.confidence_interval.low, abs=0.02)
    assert ours.ci_high == pytest.approx(ref.confidence_interval.high, abs=0.02)
    narrower = sp.bootstrap((np.asarray(X), np.asarray(Y)), statistic, paired=True, vectorized=False,
                            n_resamples=4000, method="percentile", confidence_level=0.90,
                            random_state=np.random.default_rng(11))
    # the check can tell 95% from 90%: their lower ends are further apart than the bound above
    assert ref.confidence_interval.low < narrower.confidence_interval.low - 0.035
    assert narrower.confidence_interval.high < ref.confidence_interval.high


def exact_bootstrap_quantiles(x, y, levels):
    """The exact bootstrap distribution of τ-b: all n^n equally likely index tuples (resamples with one
    distinct value have no τ and are left out, as radmetrics leaves them out). Returns, per level, the value
    whose cumulative share first reaches it, and the cumulative share on each side of that value."""
    values = []
    for idx in itertools.product(range(len(x)), repeat=len(x)):
        a, b = np.asarray(x)[list(idx)], np.asarray(y)[list(idx)]
        v = sp.kendalltau(a, b, variant="b").statistic
        if not math.isnan(v):
            values.append(round(float(v), 9))
    atoms, counts = np.unique(values, return_counts=True)
    cdf = np.cumsum(counts) / len(values)
    out = []
    for level in levels:
        k = int(np.searchsorted(cdf, level))
        out.append((float(atoms[k]), float(cdf[k - 1]) if k else 0.0, float(cdf[k])))
    return out


def test_bootstrap_ci_endpoints_equal_the_hand_derived_percentiles():
    """x = 1..5, y = [1, 2, 4, 3, 5] (one swapped pair, τ-b = 0.8). Enumerating all 5^5 resamples: τ-b = -1
    for 0.96% of them, 0 up to 3.85%, 1/7 up to 7.69%, ..., 1 from 57.7% on. So the 2.5% point is 0 and the 97.5%
    point is 1: the 95% CI is [0, 1] (a 90% CI would start at 1/7). With y reversed the distribution mirrors:
    [-1, 0]. 3,000 resamples put the empirical 2.5% point within ±0.3% (1 sd) of 2.5%, well inside the atom 0."""
    x, y = [1, 2, 3, 4, 5], [1, 2, 4, 3, 5]
    low, high, ninety = exact_bootstrap_quantiles(x, y, [0.025, 0.975, 0.05])
    assert low == (0.0, pytest.approx(0.0096, abs=1e-4), pytest.approx(0.0385, abs=1e-4))
    assert high[0] == 1.0 and high[1] < 0.6
    assert ninety[0] == pytest.approx(1 / 7)  # where a 90% CI starts
    for seed in (0, 1):
        ci = stats.kendall_tau(x, y, resamples=3000, seed=seed)
        assert (ci.value, ci.ci_low, ci.ci_high) == (pytest.approx(0.8), 0.0, 1.0)
        mirrored = stats.kendall_tau(x, [-v for v in y], resamples=3000, seed=seed)
        assert (mirrored.ci_low, mirrored.ci_high) == (-1.0, 0.0)
    wide = stats.kendall_tau(x, y, resamples=3000, seed=0, confidence=0.90)
    assert wide.ci_low == pytest.approx(1 / 7)


def test_bootstrap_is_reproducible_and_seed_dependent():
    a = stats.kendall_tau(X, Y, resamples=300, seed=3)
    assert stats.kendall_tau(X, Y, resamples=300, seed=3) == a
    assert stats.kendall_tau(X, Y, resamples=300, seed=4) != a


def test_unscored_rows_are_left_out_before_the_statistic():
    # None and NaN (unscored) rows dropped pairwise; what remains equals scipy on the kept pairs
    x = [0.2, None, 0.4, float("nan"), 0.9, 0.1, 0.5]
    y = [1.0, 3.0, 2.0, 2.0, float("nan"), 0.0, 4.0]
    kept = [(a, b) for a, b in zip(x, y) if a is not None and a == a and b == b]
    r = stats.kendall_tau(x, y, resamples=0)
    assert r.n == len(kept) == 4
    assert r.value == pytest.approx(sp.kendalltau(*zip(*kept)).statistic)


def test_fewer_than_three_pairs_give_nan_not_a_number():
    r = stats.kendall_tau([1, 2], [2, 1], resamples=100)
    assert math.isnan(r.value) and math.isnan(r.ci_low) and r.n == 2


def test_mae_and_error_type_f1_by_hand():
    # |0-1| + |2-2| + |5-3| + |1-0| = 4 over 4 -> 1.0; squared deviations 0, 1, 1, 0 -> variance 1/2
    out = stats.mae([0, 2, 5, 1], [1, 2, 3, 0])
    assert out == {"mae": 1.0, "std": pytest.approx(math.sqrt(0.5)), "n": 4}
    # one category, reports (human, model) = (3, 1), (0, 2), (2, 2): TP = 1 + 0 + 2 = 3, FP = 0 + 2 + 0 = 2,
    # FN = 2 + 0 + 0 = 2 -> P = 3/5, R = 3/5, F1 = 3/5
    f1 = stats.error_type_f1([[3], [0], [2]], [[1], [2], [2]])[0]
    assert (f1["tp"], f1["fp"], f1["fn"]) == (3.0, 2.0, 2.0)
    assert f1["precision"] == f1["recall"] == f1["f1"] == pytest.approx(0.6)


def test_paired_randomization_p_value_by_hand():
    """3 samples, 2^3 = 8 equally likely swap patterns. A = [1, 2, 3] (the expert order), B = [3, 2, 1]: observed
    τ(A) - τ(B) = 1 - (-1) = 2. Swapping the middle sample changes nothing (both 2). Swapping none or both ends
    gives |difference| 2 again; swapping one end gives A' = [3, 2, 3], B' = [1, 2, 1], τ-b 0 each. So
    |difference| >= 2 for 4 of the 8 patterns: p = 1/2, which the add-one estimate approaches."""
    expert = [1.0, 2.0, 3.0]
    out = stats.paired_randomization_test([1, 2, 3], [3, 2, 1], expert, trials=4000, seed=5)
    assert out["difference"] == pytest.approx(2.0)
    assert out["p_value"] == pytest.approx(0.5, abs=0.03)



def test_the_ci_says_how_many_resamples_it_is_made_of():
    """Review 29a: resamples that draw one distinct value have no correlation and are left out of the CI, yet the
    results said the requested count; with 4 rows that is 10 of 200. The draws replayed here (the same generator),
    with scipy deciding which resamples have a correlation."""
    import warnings

    x, y = [1, 2, 3, 4], [1, 2, 2, 3]
    result = stats.kendall_tau(x, y, resamples=200, seed=0)
    rng = np.random.default_rng(0)
    a, b = np.asarray(x, float), np.asarray(y, float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on a constant resample
        defined = sum(not math.isnan(sp.kendalltau(a[i], b[i], variant="b").statistic)
                      for i in (rng.integers(0, 4, 4) for _ in range(200)))
    assert result.resamples == 200 and result.resamples_used == defined < 200
    assert result.to_dict()["resamples_used"] == defined


def test_resampling_groups_of_one_row_is_the_row_bootstrap_and_studies_widen_the_interval():
    """Review 36c: ReXVal's 200 rows are 50 studies x 4 candidate reports; a study's reports move together, and the
    row bootstrap's 95% CI held the population τ-b in 89% of simulated runs (resampling studies: 94%). With
    ``groups`` the CI resamples whole groups: one row per group is exactly the row bootstrap; on clustered data
    the interval is wider, and it says how it was made."""
    rng = np.random.default_rng(36)
    studies = np.repeat(np.arange(50), 4)
    hardness = rng.normal(0, 1.5, 50)[studies]  # a hard study: every candidate worse
    expert = np.clip(np.round(hardness + rng.normal(0, 1, 200) + 2), 0, 6)
    metric = -expert + rng.normal(0, 2, 50)[studies] + rng.normal(0, 0.5, 200)  # and the metric misjudges it as one
    rows = stats.kendall_tau(metric.tolist(), (-expert).tolist(), resamples=400)
    singletons = stats.kendall_tau(metric.tolist(), (-expert).tolist(), resamples=400, groups=list(range(200)))
    assert (singletons.ci_low, singletons.ci_high) == (rows.ci_low, rows.ci_high)
    by_study = stats.kendall_tau(metric.tolist(), (-expert).tolist(), resamples=400, groups=studies.tolist(),
                                 groups_name="study_id")
    assert by_study.value == rows.value and by_study.n == 200
    assert by_study.ci_high - by_study.ci_low > 1.3 * (rows.ci_high - rows.ci_low)  # 1.5x here
    assert by_study.to_dict()["resampled_groups"] == "study_id: 50 groups" and "resampled_groups" not in rows.to_dict()
    missing = metric.tolist()
    missing[:4] = [None] * 4  # study 0 unscored: out of its group, not a group of nothing
    assert stats.kendall_tau(missing, (-expert).tolist(), resamples=50, groups=studies.tolist()).resampled_groups \
        == "group: 49 groups"
