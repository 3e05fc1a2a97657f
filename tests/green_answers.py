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


def read_official_answer(text: str) -> tuple[dict[str, int], int] | None:
    """(significant counts, matched findings) of an answer in exactly the App. A.1 layout, or None when it
    is not in that layout (a section missing, a count unreadable). Written from the template, not from
    radmetrics, for checks that must not reuse radmetrics' parser (lm-eval's τ, meta-eval's τ).
    A section that starts with "No" ("No clinically significant errors.") counts zero, as in GREEN's outputs."""
    import re

    def section(name: str) -> str | None:
        found = re.search(r"\[" + re.escape(name) + r"\]:[ \t]*\n?(.*?)(?:\n[ \t]*\n|\Z)", text, re.S)
        return found.group(1).strip() if found else None

    significant, matched = section("Clinically Significant Errors"), section("Matched Findings")
    if significant is None or matched is None:
        return None
    counts = dict.fromkeys(ERROR_TYPES, 0)
    if not significant.startswith("No"):
        for letter in ERROR_TYPES:
            line = re.search(r"^\(" + letter + r"\) [^\n:]*: (\S*)", significant, re.M)
            if line:  # the count is the whole number the text after the colon starts with ("2.", "3-moderate")
                number = re.match(r"(\d+)(?!\d)", line.group(1))
                if number is None:
                    return None
                counts[letter] = int(number.group(1))
    if matched.startswith("No"):
        return counts, 0
    number = re.match(r"(\d+)\.", matched)
    return (counts, int(number.group(1))) if number else None
