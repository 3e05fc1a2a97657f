"""GREEN and its derived scores on realistic fake-judge answers: seeded non-zero counts in every category,
significant and insignificant (tests/fake_judge.py `green_counts`). Every expected number comes from the
papers' formulas written in tests/green_answers.py, never from radmetrics' parser or scores."""
from __future__ import annotations

import math
import random

import pytest
from fake_judge import green_counts
from green_answers import ERROR_TYPES, f1_score, formula_score, green_score

import radmetrics

FINDINGS = ["small left pleural effusion", "mild cardiomegaly", "no pneumothorax", "right lower lobe opacity",
            "stable sternotomy wires", "pulmonary edema", "tube 3 cm above the carina", "old rib fracture",
            "increased interstitial markings", "atelectasis at the bases"]


def seeded_pairs(n=24, seed=18):
    """Reference / candidate pairs from a seeded generator: shared, dropped and added findings in varied mixes,
    one identical pair (no error) and one with nothing in common (GREEN's score-0 rule)."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n - 2):
        ref = rng.sample(FINDINGS, rng.randint(2, 5))
        cand = [f for f in ref if rng.random() < 0.6] + rng.sample(FINDINGS, rng.randint(0, 2))
        pairs.append((". ".join(ref).capitalize() + ".", (". ".join(cand) or "normal study").capitalize() + "."))
    pairs.append(("Mild cardiomegaly. No pneumothorax.", "Mild cardiomegaly. No pneumothorax."))
    pairs.append(("Pulmonary edema.", "Rib fracture seen."))
    return pairs


PAIRS = seeded_pairs()
REFS, CANDS = [p[0] for p in PAIRS], [p[1] for p in PAIRS]
COUNTS = [green_counts(r, c) for r, c in PAIRS]


def test_the_fake_answers_are_realistic():
    """Not the zeros that hid category and formula bugs: every category non-zero in both sections on every
    pair with errors, various matched counts including 0."""
    with_errors = [c for c in COUNTS if sum(c[0].values())]
    assert len(with_errors) == len(PAIRS) - 1
    for significant, insignificant, _ in with_errors:
        assert all(significant[x] >= 1 and insignificant[x] >= 1 for x in ERROR_TYPES)
    assert len({c[2] for c in COUNTS}) >= 4 and 0 in {c[2] for c in COUNTS}
    assert len({tuple(c[0].values()) for c in with_errors}) == len(with_errors)  # the generator varies them


def population_std(values):
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def test_green_scores_counts_and_summary(fake_judge):
    result = radmetrics.score("green", REFS, CANDS, backend="fake", cache=False, progress=False)
    expected = [green_score(s, m) for s, _, m in COUNTS]
    assert result.scores == pytest.approx(expected)
    assert expected[-2:] == [1.0, 0.0]  # identical pair; nothing matched
    for judgment, (significant, insignificant, matched) in zip(result.judgments, COUNTS):
        assert judgment.significant == significant and judgment.insignificant == insignificant
        assert judgment.matched_findings == matched
    assert result.summary["green"] == pytest.approx(sum(expected) / len(expected))
    assert result.summary["green_std"] == pytest.approx(population_std(expected))  # ddof=0, as GREEN's np.std
    # per category, the share of reports without a significant error of it: only the identical pair
    shares = result.summary["error_free_share"]
    assert list(shares.values()) == pytest.approx([1 / len(PAIRS)] * 6)


@pytest.mark.parametrize("metric, formula", [
    ("green_f1", lambda s, i, m: f1_score(s, m)),
    ("green_formula", formula_score),
    ("green_ec", lambda s, i, m: float(sum(s.values()))),
    ("green_total_errors", lambda s, i, m: float(sum(s.values()) + sum(i.values()))),
])
def test_derived_scores(metric, formula, fake_judge, tmp_path):
    result = radmetrics.score(metric, REFS, CANDS, backend="fake", cache=tmp_path / "c.sqlite", progress=False)
    expected = [formula(*c) for c in COUNTS]
    assert result.scores == pytest.approx(expected)
    assert result.summary[metric] == pytest.approx(sum(expected) / len(expected))


def test_green_through_evaluate(fake_judge, monkeypatch):
    import evaluate
    from conftest import REPO

    monkeypatch.chdir(REPO)
    green = evaluate.load("radmetrics/green", backend="fake", cache=False, progress=False)
    out = green.compute(predictions=CANDS[:6], references=REFS[:6])
    assert out["scores"] == pytest.approx([green_score(s, m) for s, _, m in COUNTS[:6]])
    assert [d["significant"] for d in out["details"]] == [s for s, _, _ in COUNTS[:6]]
