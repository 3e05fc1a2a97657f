"""Reading FineRadScore corrections: tolerant JSON, severities 1-4, categories, applied corrections.

Severity numbers follow the paper (Sec. 6.4, 7): Not actionable 1, Actionable nonurgent error 2, Urgent
error 3, Emergent error 4; "Invalid comparison" counts as Not actionable (as the paper treats it), and a
report without corrections scores 0. Report scores: the sum (Sec. 7) and the max (Sec. 6.4) of severities.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from textwrap import shorten
from typing import Any

from radmetrics.json_answer import AnswerError, load_json_tolerant, revision_reason, written_pairs
from radmetrics.taxonomy import FINERAD_LABELS

PARSER_VERSION = "8"  # 5: severities with a Unicode dash or in Markdown emphasis (review 28); 6: a <think> block is
# drafting, one left open unscored (json_answer; review 29b: its draft was scored); 7: the field's name before the
# label ("Severity: Urgent error") is read past (review 31: unscored); 8: a sentence after the JSON that revises a
# correction ("Note: line 2 should be Emergent error instead.") is no single answer (review 31: the JSON was read)
#: what a sentence revising the corrections names: a line, a severity
_CORRECTION_TALK = re.compile(r"\d|\b(?:lines?|sentences?|actionable|nonurgent|non-urgent|urgent|emergent|emergency|"
                              r"severity|no\s+error|invalid\s+comparison|delet\w*|insert\w*)\b", re.I)
_EMPTY_LIST = re.compile(r"\s*(?:```(?:json)?\s*)?\[\s*\]\s*(?:```)?\s*")

SEVERITY = {"not actionable": 1, "nonactionable": 1, "not actionable error": 1, "nonactionable error": 1,
            "invalid comparison": 1,
            "actionable nonurgent error": 2, "actionable nonurgent": 2, "nonurgent actionable error": 2,
            "nonurgent actionable": 2,
            "urgent error": 3, "urgent": 3,
            "emergent error": 4, "emergent": 4, "emergency": 4, "emergency error": 4}
NO_ERROR = {"no error"}
# a severity left blank ("", null, "None"): no error only when the correction is blank too; beside a real
# correction ("[delete]", a rewritten line) it is a missing severity, not a 0 (fidelity audit F7)
BLANK = {"", "none", "null", "n/a", "no correction", "no change"}
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


#: a severity decorated with its number, "Urgent error (3)" / "3 - Urgent error" / "Urgent error: 3"
_NUMBERED = (re.compile(r"(?P<word>.+?)\s*\((?P<n>\d)\)"), re.compile(r"(?P<n>\d)\s*[-:.)]\s*(?P<word>.+)"),
             re.compile(r"(?P<word>.+?)\s*[-:]\s*(?P<n>\d)"))


def _severity_key(label: str) -> str:
    key = re.sub(r"[-,_/]", " ", label.strip().lower().rstrip("."))
    key = " ".join(key.split()).replace("non urgent", "nonurgent").replace("non actionable", "nonactionable")
    return key


#: the prompt's four severity names, as _severity_key writes them
OFFICIAL_SEVERITIES = ("emergent error", "urgent error", "actionable nonurgent error", "not actionable")
_UNICODE_DASHES = str.maketrans(dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"))
#: Markdown emphasis or quotes around the whole label: "**Urgent error**", "_Not actionable_", "'Urgent error'"
_WRAPPED = re.compile(r"""(?:(?P<wrap>\*{1,3}|_{1,3}|["'`])|[\u2018\u201c])\s*(?P<label>[^*_"'`\u2018\u2019\u201c\u201d]+?)"""
                      r"""\s*(?(wrap)(?P=wrap)|[\u2019\u201d])""")


def _official_name(label: str) -> int | None:
    """A label written with a Unicode dash ("Actionable–nonurgent error") or wrapped in Markdown emphasis or quotes
    ("**Urgent error**"): read when what is inside is one of the prompt's four names, nothing looser (review 28)."""
    text = label.translate(_UNICODE_DASHES).strip()
    wrapped = _WRAPPED.fullmatch(text)
    key = _severity_key(wrapped["label"] if wrapped else text)
    return SEVERITY[key] if key in OFFICIAL_SEVERITIES else None


#: the field's own name written before the label: "Severity: Urgent error", "**Clinical severity:** Urgent error"
_FIELD_NAME = re.compile(r"[*_\s]*(?:clinical[ \t]+)?severity[ \t]*(?::[*_]*|[*_]+:)\s*(?P<label>.+)", re.I | re.S)


def _severity(label: Any) -> int | None:
    """The paper's number for a severity label, read as the judge wrote it: case, hyphens, commas and the word
    order "nonurgent actionable" vary; a number beside the word counts only when it is the word's number; the
    field's name before it ("Severity: Urgent error") is no part of the label (review 31: it was unscored)."""
    named = _FIELD_NAME.fullmatch(str(label))
    if named:
        return _severity(named["label"])
    key = _severity_key(str(label))
    if key in NO_ERROR:
        return 0
    if key in SEVERITY:
        return SEVERITY[key]
    official = _official_name(str(label))
    if official is not None:
        return official
    raw = " ".join(str(label).strip().lower().rstrip(".").split())
    for pattern in _NUMBERED:
        match = pattern.fullmatch(raw)
        if match and SEVERITY.get(_severity_key(match["word"])) == int(match["n"]):
            return int(match["n"])
    return None


def _categories(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value] if value else []
    out = []
    for item in items:
        name = re.sub(r"^\s*\d\.\s*", "", str(item)).strip()
        out.append(_CATEGORY_BY_KEY.get(name.lower(), name))
    return out


def _text(value: Any) -> str:
    # Strings wrapped over lines as the paper prints them (App., Example 2): the line break is a space.
    return re.sub(r"[ \t]*\n\s*", " ", str(value)).strip()


def read_corrections(text: str) -> tuple[list[Correction], list[str]]:
    """The corrections, and notes on what had to be repaired to read them (kept in the judgment's details).

    - a line key given twice: identical entries count once; different entries are no single reading (a dict
      would keep only the last, silently): unscored, re-asked; several "None" keys are several inserted lines
      (the format names every insertion "None"; the official code's json.loads keeps only the last);
    - 'corrections' and 'clinical severity' swapped, as in the paper's own Example 2 (a severity label in
      the corrections field, a correction such as "[delete]" in the severity field): the severity vocabulary
      makes the swap unambiguous, so the fields are swapped back.
    """
    if not isinstance(text, str) or not text.strip():
        raise FineRadParseError("empty judge output", retryable=True)
    if _EMPTY_LIST.fullmatch(text):  # "[]": nothing to correct (the official code accepts it as no errors)
        return [], ["the answer is [] (no corrections)"]
    data = load_json_tolerant(text)
    revised = revision_reason(text, _CORRECTION_TALK)
    if revised:
        raise FineRadParseError(revised, retryable=True)
    if not isinstance(data, dict):
        raise FineRadParseError(f"JSON is a {type(data).__name__}, not an object keyed by line id", retryable=True)
    out: list[Correction] = []
    notes: list[str] = []
    seen: dict[str, list[Any]] = {}
    for key, value in written_pairs(data):
        key_text = str(key).strip()
        if key_text.lower().startswith("none"):
            line = None
        elif re.fullmatch(r"\[?\d+\]?", key_text):
            line = int(key_text.strip("[]"))
        else:
            raise FineRadParseError(f"key {key_text!r} is neither a line id nor 'None'", retryable=True)
        if not isinstance(value, dict) or "corrections" not in value or "clinical severity" not in value:
            raise FineRadParseError(f"line {key_text}: needs 'corrections' and 'clinical severity'", retryable=True)
        name = "None" if line is None else str(line)
        if value in seen.get(name, []):
            notes.append(f"line {name}: the same entry given twice, counted once")
            continue
        if seen.get(name) and line is not None:  # two rival corrections of one line: no single reading
            raise FineRadParseError(f"line {name} is given {len(seen[name]) + 1} times with different entries",
                                    retryable=True)
        if seen.get(name):  # the format names every inserted line "None": each one is a correction
            notes.append(f"{len(seen[name]) + 1} inserted lines ('None' keys), all counted")
        seen.setdefault(name, []).append(value)
        corrections, label = _text(value["corrections"]), _text(value["clinical severity"])
        if label.lower().rstrip(".") in BLANK:
            if corrections.lower().rstrip(".") in BLANK:
                notes.append(f"line {name}: no correction and no severity, not counted")
                continue
            raise FineRadParseError(f"line {name}: correction {shorten(corrections, 60)!r} has no clinical severity",
                                    retryable=True)
        severity = _severity(label)
        if severity is None:
            if _severity(corrections) in (None, 0):
                raise FineRadParseError(f"line {name}: unknown clinical severity {label!r}", retryable=True)
            notes.append(f"line {name}: 'corrections' ({corrections!r}) and 'clinical severity' ({label!r}) were "
                         "swapped; swapped back")
            corrections, label = label, corrections
            severity = _severity(label)
        if severity == 0:
            continue  # "No error": not a correction
        out.append(Correction(line, corrections, severity, label, _text(value.get("comments", "")),
                              _categories(value.get("error category", []))))
    return out, notes


def parse_corrections(text: str) -> list[Correction]:
    return read_corrections(text)[0]


def apply_corrections(lines: list[str], corrections: list[Correction]) -> str:
    """The corrected report: substitutions and deletions by line id, insertions appended in order.
    Raises ValueError when one line has two different corrections (no single corrected report)."""
    by_line: dict[int, Correction] = {}
    for c in corrections:
        if c.line is None:
            continue
        if c.line in by_line and by_line[c.line].corrections.strip() != c.corrections.strip():
            raise ValueError(f"line {c.line} has two different corrections")
        by_line[c.line] = c
    out = []
    for i, line in enumerate(lines):
        c = by_line.get(i)
        if c is None:
            out.append(line)
        elif not c.deletes:
            out.append(c.corrections.strip())
    out.extend(c.corrections.strip() for c in corrections if c.line is None and not c.deletes)
    return " ".join(out)
