"""Reading FineRadScore corrections: tolerant JSON, severities 1-4, categories, applied corrections.

Severity numbers follow the paper (Sec. 6.4, 7): Not actionable 1, Actionable nonurgent error 2, Urgent
error 3, Emergent error 4; "Invalid comparison" counts as Not actionable (as the paper treats it), and a
report without corrections scores 0. Report scores: the sum (Sec. 7) and the max (Sec. 6.4) of severities.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from radmetrics.json_answer import AnswerError, load_json_tolerant
from radmetrics.taxonomy import FINERAD_LABELS

PARSER_VERSION = "1"

SEVERITY = {"not actionable": 1, "invalid comparison": 1, "actionable nonurgent error": 2,
            "actionable non-urgent error": 2, "actionable nonurgent": 2, "urgent error": 3, "urgent": 3,
            "emergent error": 4, "emergent": 4}
NO_ERROR = {"no error", "none", ""}
#: the six error categories in FineRadScore's wording (radmetrics.taxonomy)
CATEGORIES = FINERAD_LABELS
_CATEGORY_BY_KEY = {c.lower(): c for c in CATEGORIES}


#: why corrections cannot be read, and whether a re-ask can help (`retryable`)
FineRadParseError = AnswerError


@dataclass
class Correction:
    line: int | None  # None: an inserted line ("None" key)
    corrections: str
    severity: int
    severity_label: str
    comments: str
    categories: list[str] = field(default_factory=list)

    @property
    def deletes(self) -> bool:
        return self.corrections.strip().lower() in {"[delete]", "delete", "[deleted]"}


def _severity(label: Any) -> int | None:
    key = str(label).strip().lower().rstrip(".")
    if key in NO_ERROR:
        return 0
    return SEVERITY.get(key)


def _categories(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value] if value else []
    out = []
    for item in items:
        name = re.sub(r"^\s*\d\.\s*", "", str(item)).strip()
        out.append(_CATEGORY_BY_KEY.get(name.lower(), name))
    return out


def parse_corrections(text: str) -> list[Correction]:
    if not isinstance(text, str) or not text.strip():
        raise FineRadParseError("empty judge output", retryable=True)
    data = load_json_tolerant(text)
    if not isinstance(data, dict):
        raise FineRadParseError(f"JSON is a {type(data).__name__}, not an object keyed by line id", retryable=True)
    out = []
    for key, value in data.items():
        key_text = str(key).strip()
        if key_text.lower().startswith("none"):
            line = None
        elif re.fullmatch(r"\[?\d+\]?", key_text):
            line = int(key_text.strip("[]"))
        else:
            raise FineRadParseError(f"key {key_text!r} is neither a line id nor 'None'", retryable=True)
        if not isinstance(value, dict) or "corrections" not in value or "clinical severity" not in value:
            raise FineRadParseError(f"line {key_text}: needs 'corrections' and 'clinical severity'", retryable=True)
        corrections, label = str(value["corrections"]), value["clinical severity"]
        severity = _severity(label)
        if severity is None:
            if _severity(corrections) not in (None, 0):
                # The paper's own Example 2 has these two fields swapped: flag it, do not guess.
                raise FineRadParseError(
                    f"line {key_text}: 'corrections' and 'clinical severity' look swapped "
                    f"(corrections={corrections!r}, clinical severity={label!r})", retryable=False)
            raise FineRadParseError(f"line {key_text}: unknown clinical severity {label!r}", retryable=False)
        if severity == 0:
            continue  # "No error": not a correction
        out.append(Correction(line, corrections, severity, str(label).strip(), str(value.get("comments", "")),
                              _categories(value.get("error category", []))))
    return out


def apply_corrections(lines: list[str], corrections: list[Correction]) -> str:
    """The corrected report: substitutions and deletions by line id, insertions appended in order."""
    by_line = {c.line: c for c in corrections if c.line is not None}
    out = []
    for i, line in enumerate(lines):
        c = by_line.get(i)
        if c is None:
            out.append(line)
        elif not c.deletes:
            out.append(c.corrections.strip())
    out.extend(c.corrections.strip() for c in corrections if c.line is None and not c.deletes)
    return " ".join(out)
