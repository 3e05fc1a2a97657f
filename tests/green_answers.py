"""GREEN-format analyses and GREEN scores written from the paper, independently of radmetrics' parser.

The answer layout is GREEN App. A.1's response template ("(a) <Error Type>: <The number of errors>. <Error 1>;
..."), the category names are the paper's six error types, and the score is Eq. 1:
GREEN = #matched / (#matched + sum over (a)-(f) of #significant errors), and 0 when #matched = 0.
Tests build answers with counts they chose and check radmetrics reads back those counts and that score.
"""
from __future__ import annotations

# GREEN Sec. 3.1 / App. A.1, "Errors can fall into one of these categories".
ERROR_TYPES = {
    "a": "False report of a finding in the candidate",
    "b": "Missing a finding present in the reference",
    "c": "Misidentification of a finding's anatomic location/position",
    "d": "Misassessment of the severity of a finding",
    "e": "Mentioning a comparison that isn't in the reference",
    "f": "Omitting a comparison detailing a change from a prior study",
}


def _section(counts: dict[str, int], kind: str) -> str:
    lines = []
    for letter, name in ERROR_TYPES.items():
        n = counts.get(letter, 0)
        errors = "; ".join(f"{kind} {letter} error {i + 1}" for i in range(n))
        lines.append(f"({letter}) {name}: {n}." + (f" {errors}" if errors else ""))
    return "\n".join(lines)


def green_answer(significant: dict[str, int], insignificant: dict[str, int], matched: int,
                 overall: float | None = None) -> str:
    """A judge answer in the App. A.1 format; with `overall`, VERT's extra block (VERT App. D.2)."""
    findings = "; ".join(f"finding {i + 1}" for i in range(matched))
    text = ("[Explanation]:\nThe candidate differs from the reference as counted below.\n\n"
            f"[Clinically Significant Errors]:\n{_section(significant, 'significant')}\n\n"
            f"[Clinically Insignificant Errors]:\n{_section(insignificant, 'insignificant')}\n\n"
            f"[Matched Findings]:\n{matched}." + (f" {findings}" if findings else ""))
    if overall is not None:
        text += f"\n\n[Overall Accuracy Score]:\n{overall:.2f}"
    return text


def green_score(significant: dict[str, int], matched: int) -> float:
    """GREEN paper Eq. 1 (and 0 when nothing matched)."""
    if matched == 0:
        return 0.0
    return matched / (matched + sum(significant.values()))


def formula_score(significant: dict[str, int], insignificant: dict[str, int], matched: int) -> float:
    """VERT App. B.4, Eq. 5: TP / (TP + 2S + 0.5I); 0 when TP = 0 (as GREEN)."""
    if matched == 0:
        return 0.0
    return matched / (matched + 2 * sum(significant.values()) + 0.5 * sum(insignificant.values()))


def f1_score(significant: dict[str, int], matched: int) -> float:
    """VERT App. B.3, Eq. 4: 2TP / (2TP + S); 0 when TP = 0."""
    if matched == 0:
        return 0.0
    return 2 * matched / (2 * matched + sum(significant.values()))
