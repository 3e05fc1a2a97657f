"""The six error categories every error-counting judge in radmetrics uses, written once.

GREEN (Sec. 3.1; upstream `sub_categories`), VERT (App. B/C), RadCliQ (Yu et al. 2023, the ER²Score App. A.2
JSON keys) and FineRadScore (Sec. 3, its six labels) count the same six kinds of error, each with its own
wording. A category here holds every wording, so that a room names categories by `letter` and translates
at its edges. `ErrorCounts` is the typed form of a judgment's counts: significant (and, when the judge
wrote them, insignificant) errors per letter, the field meta-eval, lm-eval and ER²Score pairs read.

Also here: MRScore's seven weighted items (ER²Score App. A.2), read by the MRScore plugin and ER²Score.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from radmetrics.json_answer import written_pairs


@dataclass(frozen=True)
class ErrorCategory:
    #: "a".."f": GREEN's item letters, the order of every per-category list
    letter: str
    #: GREEN's wording (prompt, parse, summaries; VERT's few-shot counts)
    green: str
    #: GREEN App. A.4 `get_error_combination` wording (the data step that writes modified candidates)
    green_modify: str
    #: the JSON key of ER²Score App. A.2's RadCliQ format
    radcliq_key: str
    #: the bullet of ER²Score App. A.2's RadCliQ error list
    radcliq_label: str
    #: FineRadScore's label (its prompt's numbered list; Sec. 3)
    finerad: str


CATEGORIES: tuple[ErrorCategory, ...] = (
    ErrorCategory("a", "False report of a finding in the candidate", "False report of a finding",
                  "false_prediction", "False prediction of a finding", "False prediction of finding"),
    ErrorCategory("b", "Missing a finding present in the reference", "Missing a finding",
                  "omission", "Omission of a finding", "Omission of finding"),
    ErrorCategory("c", "Misidentification of a finding's anatomic location/position",
                  "Misidentification of a finding's anatomic location/position",
                  "incorrect_location", "Incorrect location/position of a finding",
                  "Incorrect location/position of finding"),
    ErrorCategory("d", "Misassessment of the severity of a finding", "Misassessment of the severity of a finding",
                  "incorrect_severity", "Incorrect severity of a finding", "Incorrect severity of finding"),
    ErrorCategory("e", "Mentioning a comparison that isn't in the reference",
                  "Mentioning a comparison that isn't in the reference",
                  "comparison_not_present", "Mention of a comparison not present in the reference impression",
                  "Mention of comparison that is not present in the reference impression"),
    ErrorCategory("f", "Omitting a comparison detailing a change from a prior study",
                  "Omitting a comparison detailing a change from a prior study",
                  "omission_of_comparison", "Omission of a comparison describing a change from a previous study",
                  "Omission of comparison describing a change from a previous study"),
)

LETTERS: tuple[str, ...] = tuple(c.letter for c in CATEGORIES)
GREEN_NAMES: dict[str, str] = {c.letter: c.green for c in CATEGORIES}
RADCLIQ_KEYS: tuple[str, ...] = tuple(c.radcliq_key for c in CATEGORIES)
FINERAD_LABELS: tuple[str, ...] = tuple(c.finerad for c in CATEGORIES)
_BY_RADCLIQ_KEY = {c.radcliq_key: c for c in CATEGORIES}


def radcliq_error_list() -> str:
    """ER²Score App. A.2's bulleted error list, as both of its RadCliQ prompts write it."""
    return "\n".join(f"- {c.radcliq_label}" for c in CATEGORIES)


@dataclass(frozen=True)
class ErrorCounts:
    """Errors per category letter: clinically significant, and insignificant (None when the judge's answer
    has no insignificant counts, e.g. a GREEN analysis without that section)."""

    significant: Mapping[str, int]
    insignificant: Mapping[str, int] | None = None

    def significant_list(self) -> list[int]:
        """Significant counts in letter order (a)-(f), a missing letter as 0."""
        return [int(self.significant.get(x, 0)) for x in LETTERS]

    def to_dict(self) -> dict[str, Any]:
        return {"significant": dict(self.significant),
                "insignificant": None if self.insignificant is None else dict(self.insignificant)}

    @classmethod
    def from_letters(cls, significant: Mapping[str, int], insignificant: Mapping[str, int] | None = None
                     ) -> ErrorCounts:
        return cls({x: int(significant.get(x, 0)) for x in LETTERS},
                   None if insignificant is None else {x: int(insignificant.get(x, 0)) for x in LETTERS})

    @classmethod
    def from_radcliq(cls, significant: Mapping[str, int], insignificant: Mapping[str, int] | None = None
                     ) -> ErrorCounts:
        """Counts keyed by RadCliQ's JSON keys (ER²Score A.2) to counts keyed by letter."""
        def by_letter(counts: Mapping[str, int]) -> dict[str, int]:
            return {_BY_RADCLIQ_KEY[key].letter: int(value) for key, value in counts.items()}

        return cls.from_letters(by_letter(significant), None if insignificant is None else by_letter(insignificant))

    def by_radcliq_key(self, kind: str = "significant") -> dict[str, int]:
        counts = getattr(self, kind) or {}
        return {c.radcliq_key: int(counts.get(c.letter, 0)) for c in CATEGORIES}


def whole_count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{where} is not a number: {value!r}")
    try:
        number = float(value)
    except ValueError:  # "two", "2 errors": ER²Score reads counts as numbers, so a word is no count (review 28)
        raise ValueError(f"{where} is {value!r}, not a number: counts are written as digits (2, not 'two')") from None
    if not math.isfinite(number) or number < 0 or number != int(number):  # NaN, Infinity, 1e999, -1, 1.5
        raise ValueError(f"{where} = {value!r}: counts are whole numbers >= 0")
    return int(number)


def written_key(name: Any) -> str:
    """A key as written ("False prediction", "false-prediction", "Significant") in RADCLIQ_KEYS' spelling."""
    return re.sub(r"[\s-]+", "_", str(name).strip().lower())


#: sub-keys of a category's counts; the rubric prompt itself says "significant and non-significant errors"
_COUNT_KEYS = {"significant": "significant", "clinically_significant": "significant",
               "insignificant": "insignificant", "non_significant": "insignificant",
               "nonsignificant": "insignificant", "not_significant": "insignificant",
               "clinically_insignificant": "insignificant"}


def read_radcliq_errors(errors: Mapping[str, Any], missing_as_zero: bool = False) -> ErrorCounts:
    """The "errors" object of ER²Score A.2's RadCliQ JSON: per RadCliQ key either
    {"significant": n, "insignificant": n} or A.2's single number (counted as significant).

    Keys are read in any case and with spaces or hyphens ("False prediction", "Non-significant"); a key that
    is no category, or no count kind, is an error: a count under a name we do not know is never read as 0
    (fidelity audit F8); a kind left out of a category's counts is 0. missing_as_zero: a category left out counts 0
    (A.2's format elides the categories of reports 2 and 3 as "{...}").
    Raises ValueError naming the category that cannot be read."""
    by_key: dict[str, Any] = {}
    written: dict[str, Any] = {}
    # every (key, value) as written: a dict keeps only a repeated key's last value (review 29b: a category given
    # twice with different counts was read with its last counts); the same key with the same value is one answer
    for name, entry in written_pairs(errors):
        key = written_key(name)
        if key not in RADCLIQ_KEYS:
            raise ValueError(f"unknown category {name!r}")
        if key in by_key and (by_key[key] != entry or written[key] != name):
            raise ValueError(f"category '{key}' given twice")
        by_key[key], written[key] = entry, name
    significant, insignificant = {}, {}
    for key in RADCLIQ_KEYS:
        entry = by_key.get(key)
        if entry is None:
            if not missing_as_zero:
                raise ValueError(f"category '{key}' missing")
            entry = 0
        if isinstance(entry, Mapping):
            kinds: dict[str, Any] = {}
            kind_written: dict[str, Any] = {}
            for name, value in written_pairs(entry):
                kind = _COUNT_KEYS.get(written_key(name))
                if kind is None or (kind in kinds and (kinds[kind] != value or kind_written[kind] != name)):
                    raise ValueError(f"{key}: {'unknown' if kind is None else 'repeated'} count {name!r}")
                kinds[kind], kind_written[kind] = value, name
            significant[key] = whole_count(kinds.get("significant", 0), f"{key}.significant")
            insignificant[key] = whole_count(kinds.get("insignificant", 0), f"{key}.insignificant")
        else:
            significant[key], insignificant[key] = whole_count(entry, key), 0
    return ErrorCounts.from_radcliq(significant, insignificant)


#: MRScore's items (ER²Score App. A.2 "Prompt for MRscore Scoring System"): (JSON key, item, what the judge
#: checks, weight); Total = 100 - sum_i S_i * W_i with S_i in {0, 1}
MRSCORE_ITEMS: tuple[tuple[str, str, str, int], ...] = (
    ("impression_consistency", "Impression consistency", "The impression shows normal or abnormal", 30),
    ("impression_organ", "Impression Organ", "Is the lesion-related anatomical organ correct", 20),
    ("description_of_lesion", "Description of Lesion",
     "Check the correctness of lesion location, lesion size, lesion opacity, cardiovascular size, bone integrity", 20),
    ("clinical_history", "Clinical History", "Check the correctness of operation history, treatment, family history", 10),
    ("completeness", "Completeness", "Conclude all information in ground truth report", 10),
    ("grammar", "Grammar", "Vocabulary, spelling, fluency", 5),
    ("medical_terminology", "Medical Terminology", "Correct use of medical terminology", 5),
)
MRSCORE_KEYS: tuple[str, ...] = tuple(item[0] for item in MRSCORE_ITEMS)
MRSCORE_WEIGHTS: tuple[int, ...] = tuple(item[3] for item in MRSCORE_ITEMS)
