"""Reading a VERT answer: the overall score, and the GREEN-format counts when the judge wrote them."""
from __future__ import annotations

import re
from typing import Any

PARSER_VERSION = "1"

# "[Overall Accuracy Score]: 0.85", "[Overall accuracy Score]:\n0.85" (both spellings are in App. D),
# "**Overall Accuracy Score:** 0.85"
_SCORE = re.compile(r"\[?\s*overall\s+accuracy\s+score\s*\]?\s*\**\s*:?\s*\**\s*(-?\d+(?:\.\d+)?)(?!\d)", re.I)


class VertParseError(ValueError):
    pass


def read_overall_score(text: str) -> float:
    if not isinstance(text, str) or not text.strip():
        raise VertParseError("empty judge output")
    found = _SCORE.findall(text)
    if not found:
        if re.search(r"overall\s+accuracy\s+score", text, re.I):
            raise VertParseError("[Overall Accuracy Score] has no readable number")
        raise VertParseError("no [Overall Accuracy Score] in the output (truncated or another format)")
    value = float(found[-1])  # the last one: a judge may restate the template before answering
    if not 0.0 <= value <= 1.0:  # App. D.2: "a continuous number in [0.00, 1.00]" - not clamped
        raise VertParseError(f"overall score {found[-1]} outside [0, 1]")
    return value


def read_counts(text: str) -> dict[str, Any]:
    """GREEN-format counts if the answer has them (VERT keeps GREEN's format); {} otherwise."""
    from radmetrics.green.parse import GreenParseError, parse_green

    try:
        analysis = parse_green(text)
    except GreenParseError:
        return {}
    return {"significant": analysis.significant, "insignificant": analysis.insignificant or {},
            "matched_findings": analysis.matched_findings}
