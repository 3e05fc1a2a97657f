"""What the official GREEN code reads from an analysis, re-implemented for auditing.

Stanford-AIMI/GREEN green_score/green.py (commit d72c195) `parse_error_counts` / `compute_green` after
green_score/utils.py `clean_responses`; jbdel/RadEval (radeval 2.2.1) radeval/metrics/green_score/green.py
is the same except that it reads the [Matched Findings] count at the start of ANY line of the section
(`re.MULTILINE`), where Stanford-AIMI reads it only at the start of the section (`variant="radeval"`).

radmetrics scores with its own reader (radmetrics/green/parse.py); this module only says what the official
code would have returned, so that every judgment can show where the two differ and why. It is checked against
the official code itself: tests/fixtures/generate_green_cases.py runs the real upstream functions on every
fixture text and records their numbers, and tests/test_green_drift.py compares them with this module.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_CATEGORIES = ("Clinically Significant Errors", "Clinically Insignificant Errors", "Matched Findings")


@dataclass(frozen=True)
class OfficialReading:
    significant: tuple[int, ...]
    insignificant: tuple[int, ...]
    matched_findings: int
    #: `compute_green`: 0 when no matched finding, else matched / (matched + sum of significant)
    score: float


def official_clean(text: str) -> str:
    """`clean_responses`. Its `("A" or "B") in text` only tests "A", the echoed template's first line."""
    if "[Explanation]:" in text:
        if "<|assistant|>" in text:
            text = text.split("<|assistant|>")[-1]
        if "[Explanation]:\n    <Explanation>\n" in text:
            text = text.split("[Explanation]:")[1]
        else:
            text = text.split("[Explanation]:")[-1]
    if "<|assistant|>" in text:
        text = text.split("<|assistant|>")[-1]
    return text.replace("</s>", "").replace("<unk>", "")


def _counts(text: str, category: str, variant: str) -> tuple[int, list[int]]:
    found = re.search(rf"\[{category}\]:\s*(.*?)(?:\n\s*\n|\Z)", text, re.DOTALL)
    subs = [0] * 6
    if not found or found.group(1).startswith("No"):
        return 0, subs
    body = found.group(1)
    if category == "Matched Findings":
        counts = re.findall(r"^\b\d+\b(?=\.)", body, re.MULTILINE if variant == "radeval" else 0)
        return (int(counts[0]) if counts else 0), subs
    keys = ["(a) ", "(b) ", "(c) ", "(d) ", "(e) ", "(f) "]
    lines = sorted(re.findall(r"\([a-f]\) .*", body))
    if not lines:
        lines = sorted(re.findall(r"\([1-6]\) .*", body))
        keys = [f"({i}) " for i in range(1, 7)]
    for position, key in enumerate(keys):
        for line in lines:  # every matching line overwrites: the last in sorted order wins
            if line.startswith(key):
                count = re.findall(r"(?<=: )\b\d+\b(?=\.)", line)
                if count:
                    subs[position] = int(count[0])
    return sum(subs), subs


def official_reading(raw_output: str, variant: str = "stanford") -> OfficialReading:
    """The official code's counts and score for one raw judge output (never raises on text)."""
    text = official_clean(raw_output)
    _, significant = _counts(text, _CATEGORIES[0], variant)
    _, insignificant = _counts(text, _CATEGORIES[1], variant)
    matched, _ = _counts(text, _CATEGORIES[2], variant)
    score = 0.0 if matched == 0 else matched / (matched + sum(significant))
    return OfficialReading(tuple(significant), tuple(insignificant), matched, score)
