"""Accepted/rejected pairs with margins (ER²Score Sec. 2.2, Fig. 2) and the reward model's text input.

All reports generated from one reference are paired: the one with the higher total score is accepted;
margin_j = score_accepted,j - score_rejected,j for every criterion and for the total (the total margin is
always > 0, sub-score margins need not be). Sub-scores are "higher is better": RadCliQ error counts and
MRScore deductions enter negated.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from radmetrics.taxonomy import LETTERS, MRSCORE_KEYS, MRSCORE_WEIGHTS, RADCLIQ_KEYS, ErrorCounts

# ER²Score App. A.4, the scoring samples' text format.
INPUT_TEMPLATE = ("Human: 'The ground truth report is: {reference}, Assistant: 'The predicted report is: "
                  "{candidate}', Human: 'Please evaluate the quality of the assistant's predicted radiology report "
                  "based on the ground truth provided.'")

#: the reward head's outputs per scoring system, in the order of radmetrics.taxonomy
CRITERIA = {"radcliq": RADCLIQ_KEYS, "mrscore": MRSCORE_KEYS}


def reward_input(reference: str, candidate: str) -> str:
    return INPUT_TEMPLATE.format(reference=" ".join(reference.split()), candidate=" ".join(candidate.split()))


def quality_scores(system: str, errors: dict[str, float]) -> list[float]:
    """Sub-scores (higher = better) from a rubric's error values, in the criteria order."""
    if system == "radcliq":
        return [-float(errors[k]) for k in CRITERIA["radcliq"]]
    if system == "mrscore":
        return [-float(errors[k]) * w for k, w in zip(CRITERIA["mrscore"], MRSCORE_WEIGHTS)]
    raise ValueError(f"unknown scoring system {system!r}: {sorted(CRITERIA)}")


def radcliq_sub_scores(counts: ErrorCounts) -> list[float]:
    """RadCliQ sub-scores of one report: minus its errors (significant + insignificant) per category."""
    insignificant = counts.insignificant or {}
    return [-float(counts.significant.get(x, 0) + insignificant.get(x, 0)) for x in LETTERS]


@dataclass
class ScoredReport:
    report: str
    sub_scores: list[float]

    @property
    def total(self) -> float:
        return sum(self.sub_scores)


def build_pairs(reference: str, reports: Sequence[ScoredReport]) -> list[dict[str, Any]]:
    pairs = []
    for a, b in combinations(reports, 2):
        if a.total == b.total:
            continue  # no preference to learn
        win, lose = (a, b) if a.total > b.total else (b, a)
        pairs.append({"reference": reference, "accepted": win.report, "rejected": lose.report,
                      "accepted_scores": list(win.sub_scores), "rejected_scores": list(lose.sub_scores),
                      "margins": [w - s for w, s in zip(win.sub_scores, lose.sub_scores)] + [win.total - lose.total]})
    return pairs
