"""Accepted/rejected pairs with margins (ER²Score Sec. 2.2, Fig. 2) and the reward model's text input.

All reports generated from one reference are paired: the one with the higher total score is accepted;
margin_j = score_accepted,j - score_rejected,j for every criterion and for the total (the total margin is
always > 0, sub-score margins need not be). MRScore deductions enter negated (its total, 100 - sum of
deductions, is higher-is-better).

RadCliQ's sign follows the paper by default (`convention="paper"`): its sub-scores are the error counts
themselves, so the accepted ("chosen") report is the one with MORE errors — as in the paper's A.4 RadCliQ sample
("chosen_score": 4, "rejected_score": 2) — and the trained rewards predict error counts (ER²Score higher = more
errors, lower is better; Fig. 3: "a high ER²Score for incorrect severity"). `convention="quality"` negates the
counts: the accepted report has fewer errors and the rewards are qualities (higher is better).
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


def quality_scores(system: str, errors: dict[str, float], convention: str = "paper") -> list[float]:
    """Sub-scores from a rubric's error values, in the criteria order: the pair builder accepts the report
    with the higher total (RadCliQ: see the module docstring for its two conventions)."""
    if system == "radcliq":
        return [_sign(convention) * float(errors[k]) for k in CRITERIA["radcliq"]]
    if system == "mrscore":
        return [-float(errors[k]) * w for k, w in zip(CRITERIA["mrscore"], MRSCORE_WEIGHTS)]
    raise ValueError(f"unknown scoring system {system!r}: {sorted(CRITERIA)}")


#: RadCliQ pair direction: "paper" (error counts, the chosen report has more errors) or "quality" (negated)
RADCLIQ_CONVENTIONS = ("paper", "quality")


def _sign(convention: str) -> float:
    if convention not in RADCLIQ_CONVENTIONS:
        raise ValueError(f"unknown RadCliQ convention {convention!r}: {', '.join(RADCLIQ_CONVENTIONS)}")
    return 1.0 if convention == "paper" else -1.0


def higher_is_better(system: str, convention: str = "paper") -> bool:
    """Direction of a trained ER²Score: RadCliQ in the paper's convention predicts errors (lower is better)."""
    return system != "radcliq" or _sign(convention) < 0


def radcliq_sub_scores(counts: ErrorCounts, convention: str = "paper") -> list[float]:
    """RadCliQ sub-scores of one report: its errors (significant + insignificant) per category; negated with
    convention="quality"."""
    insignificant = counts.insignificant or {}
    sign = _sign(convention)
    return [sign * float(counts.significant.get(x, 0) + insignificant.get(x, 0)) for x in LETTERS]


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
