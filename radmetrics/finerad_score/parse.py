"""Reading FineRadScore corrections: tolerant JSON, severities 1-4, categories, applied corrections.

Severity numbers follow the paper (Sec. 6.4, 7): Not actionable 1, Actionable nonurgent error 2, Urgent
error 3, Emergent error 4; "Invalid comparison" counts as Not actionable (as the paper treats it), and a
report without corrections scores 0. Report scores: the sum (Sec. 7) and the max (Sec. 6.4) of severities.
"""
from __future__ import annotations

import ast
import json
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

PARSER_VERSION = "1"

SEVERITY = {"not actionable": 1, "invalid comparison": 1, "actionable nonurgent error": 2,
            "actionable non-urgent error": 2, "actionable nonurgent": 2, "urgent error": 3, "urgent": 3,
            "emergent error": 4, "emergent": 4}
NO_ERROR = {"no error", "none", ""}
CATEGORIES = (
    "False prediction of finding", "Omission of finding", "Incorrect location/position of finding",
    "Incorrect severity of finding", "Mention of comparison that is not present in the reference impression",
    "Omission of comparison describing a change from a previous study",
)
_CATEGORY_BY_KEY = {c.lower(): c for c in CATEGORIES}


class FineRadParseError(ValueError):
    def __init__(self, message: str, retryable: bool):
        super().__init__(message)
        self.retryable = retryable


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


def _json_text(text: str) -> str:
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    body = fenced.group(1) if fenced else text
    start = body.find("{")
    if start < 0:
        raise FineRadParseError("no JSON object in the output", retryable=True)
    depth, in_string, escape = 0, None, False
    for end in range(start, len(body)):  # the matching brace, skipping braces inside strings
        ch = body[end]
        if in_string:
            escape = ch == "\\" and not escape
            if ch == in_string and not escape:
                in_string = None
            elif ch != "\\":
                escape = False
        elif ch in "\"'":
            in_string = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return body[start : end + 1]
    raise FineRadParseError("JSON object is not closed (truncated output?)", retryable=True)


def load_json_tolerant(text: str) -> Any:
    """json.loads, then with trailing commas removed, then as a Python literal (single quotes)."""
    raw = _json_text(text)
    attempts = [raw, re.sub(r",\s*([}\]])", r"\1", raw)]
    for candidate in attempts:
        try:
            return json.loads(candidate)
        except ValueError:
            pass
    try:
        literal = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", attempts[1])))
        with warnings.catch_warnings():  # odd escapes in judge text warn (and may one day be errors)
            warnings.simplefilter("ignore")
            return ast.literal_eval(literal)
    except (ValueError, SyntaxError, MemoryError, RecursionError) as e:
        raise FineRadParseError(f"malformed JSON ({type(e).__name__})", retryable=True) from e


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
