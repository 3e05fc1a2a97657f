"""Scores derived from a GREEN-format analysis without another model call (VERT paper, App. B).

With TP = matched findings, S = clinically significant errors, I = clinically insignificant errors:
    GREEN     = TP / (TP + S)               (B.2, Eq. 3)
    GREEN-F1  = 2TP / (2TP + S)             (B.3, Eq. 4)
    Formula   = TP / (TP + 2S + 0.5I)       (B.4, Eq. 5)
    GREEN-EC  = S, the error count          (Sec. 5.1 and App. B: clinically significant errors only; lower is better)
    total     = S + I                       (GREEN paper Sec. 4.3.1, "total error count": significant plus
                                             insignificant, what radiologists' ReXVal totals count; lower is better)
Like GREEN (score 0 when there is no matched finding), the ratios are 0 when TP = 0.
"""
from __future__ import annotations


def weighted_ratio(tp: int, significant: int, insignificant: int, alpha: float, beta_s: float,
                   beta_i: float) -> float:
    """Unified form (App. B.5, Eq. 6): alpha TP / (alpha TP + beta_S S + beta_I I); 0 when TP = 0."""
    if tp == 0:
        return 0.0
    return alpha * tp / (alpha * tp + beta_s * significant + beta_i * insignificant)


def green_f1(tp: int, significant: int) -> float:
    return weighted_ratio(tp, significant, 0, alpha=2, beta_s=1, beta_i=0)


def green_formula(tp: int, significant: int, insignificant: int) -> float:
    return weighted_ratio(tp, significant, insignificant, alpha=1, beta_s=2, beta_i=0.5)


def derived_scores(tp: int, significant: int, insignificant: int | None) -> dict[str, float | None]:
    return {
        "green_ec": float(significant),
        # needs the insignificant section, like the Formula score
        "green_total_errors": None if insignificant is None else float(significant + insignificant),
        "green_f1": green_f1(tp, significant),
        # needs the insignificant section; None when the analysis has none
        "green_formula": None if insignificant is None else green_formula(tp, significant, insignificant),
    }
