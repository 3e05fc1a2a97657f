"""Reading a RadCliQ rubric answer: JSON counts per category (ER²Score A.2 keys) -> total error count.

The total is the sum of the counts (ER²Score Sec. 2.1: "The total score is the sum of the error counts"); the
judge's own `total_score`, when it disagrees, is kept with a warning. Malformed JSON, missing categories and
counts that are not whole numbers >= 0 are unscored with the reason.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from radmetrics.json_answer import AnswerError, load_json_tolerant, revision_reason, written_pairs
from radmetrics.taxonomy import read_radcliq_errors
from radmetrics.types import Judgment

PARSER_VERSION = "7"  # 3: an empty {} after an object is no single answer (json_answer); 4: a <think> block is
# drafting, one left open unscored (json_answer; review 29b: its draft was scored); 5: a category, count or 'errors'
# repeated with other values is no single answer (review 29b: read with its last value); 6: a sentence after the JSON
# that revises a count ("Correction: omission should have 2 significant errors.") is no single answer (review 31: the
# JSON's counts were read); 7: "Errors" in another case is the errors object (review 31: unscored)

#: what a sentence revising the counts names: a count, a count's kind or a category
_COUNT_TALK = re.compile(r"\d|\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|(?:in)?significant|counts?|"
                         r"total|errors?|false|omission|location|severity|comparison)\b", re.I)


@dataclass
class RubricJudgment(Judgment):
    significant: dict[str, int] = field(default_factory=dict)
    insignificant: dict[str, int] = field(default_factory=dict)
    judge_total: float | None = None


def parse_radcliq(text: str) -> RubricJudgment:
    try:
        data = load_json_tolerant(text) if isinstance(text, str) and text.strip() else None
    except AnswerError as e:
        return RubricJudgment(score=None, parsed=False, reason=str(e), raw=text,
                              details={"retryable": e.retryable})
    # "errors" as the format writes it, or in another case ("Errors", "ERRORS"; review 31: unscored)
    given = ([value for key, value in written_pairs(data) if str(key).strip().lower() == "errors"]
             if isinstance(data, dict) else [])
    if not given or not isinstance(given[0], dict):
        return RubricJudgment(score=None, parsed=False, reason="no 'errors' object in the output", raw=text or "")
    if any(value != given[0] for value in given):  # a dict keeps the last of them (review 29b)
        return RubricJudgment(score=None, parsed=False, raw=text, details={"retryable": True},
                              reason=f"'errors' is given {len(given)} times with different counts: no single answer")
    revised = revision_reason(text, _COUNT_TALK)
    if revised:
        return RubricJudgment(score=None, parsed=False, raw=text, details={"retryable": True}, reason=revised)
    try:
        counts = read_radcliq_errors(given[0])
    except ValueError as e:
        return RubricJudgment(score=None, parsed=False, reason=str(e), raw=text)
    significant, insignificant = counts.by_radcliq_key("significant"), counts.by_radcliq_key("insignificant")
    total = sum(significant.values()) + sum(insignificant.values())
    judge_total = data.get("total_score")
    details = {}
    try:
        judge_total = None if judge_total is None else float(judge_total)
    except (TypeError, ValueError):
        judge_total = None
    if judge_total is not None and judge_total != total:
        # The total is defined as the sum: we use the sum and record the judge's arithmetic slip.
        details["warnings"] = [f"judge total_score {judge_total:g} != sum of counts {total}"]
    return RubricJudgment(score=float(total), parsed=True, raw=text, details=details, significant=significant,
                          insignificant=insignificant, judge_total=judge_total,
                          error_counts=counts)
