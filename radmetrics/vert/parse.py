"""Reading a VERT answer: the overall score, and the GREEN-format counts when the judge wrote them.

The score is the number the judge gives under its last "[Overall Accuracy Score]" header (VERT App. D.2-D.4
ask for "a continuous number in [0.00, 1.00]"). Judges write it in more ways than one: "0.85", "0,85"
(decimal comma), ".85", "**0.85**", or, for the Formula prompt that asks them to compute (D.3), a worked
answer "Score = 3/(3+2) = 0.60", whose result is the number after the last "=". A number outside [0, 1] is
not clamped: the row is unscored with the reason.

Only what the judge gave as its score is read (parser version 3, after a fidelity audit): a header is the
"[Overall Accuracy Score]" line, not a sentence that mentions the phrase ("The overall accuracy score reflects 1
error."); an empty score section is not read from the next section; a range or hedge ("0.75–0.89", "0.6 or 0.7"),
a count or another scale ("1 out of 5", "1 significant error, so 0.5", "N/A (1 finding only)"), a second score
after the first ("0.8, revised to 0.6", "0.7 (or 0.8)", "0.6, 0.7", "0.7" then "0.9" on the next line), and two
headers that give different scores have no single reading and are unscored; "Score = 2/3 ≈ 0.67" is 0.67.
"""
from __future__ import annotations

import re
from typing import Any

PARSER_VERSION = "4"  # 4: a second score after the first has no single reading (review 15)

# "[Overall Accuracy Score]:", "[Overall accuracy Score]:" (both spellings are in App. D), "**Overall Accuracy
# Score:**", "Overall Accuracy Score = 0.6", "## Overall Accuracy Score", "4. [Overall Accuracy Score]": at the
# start of a line, never a sentence that mentions the phrase. [ \t] not \s: an empty score line must not run on
# into the next section.
_HEADER = re.compile(r"(?im)^[ \t>#*_`-]*(?:\d+[.)][ \t]*)?\[?[ \t]*overall[ \t]+accuracy[ \t]+score[ \t]*\]?"
                     r"[ \t*_]*(?:[:=][ \t*_]*|(?=[ \t]*$)|(?=[ \t]*[-−.,\d]))")
# 0.85 | 0,85 | .85 | 1 | 1.0 ; a sign is kept so that -0.2 is seen as out of range, not read as 0.2
_NUMBER = r"[-−]?(?:\d+(?:[.,]\d+)?|[.,]\d+)"
# after a number: a fraction, product, sum, range or hedge ("3/5", "0.75–0.89", "0.6 or 0.7", "1 out of 5")
_OPERATOR = r"\s*(?:[/*×x+−\-–—]|to\b|or\b|and\b|out\s+of\b|of\b)\s*[-−]?[\d(.]"
# a number that counts something is not the score ("1 significant error, so 0.5", "1 finding")
_COUNT_WORD = re.compile(r"\s*(?:clinically\s+)?(?:significant|insignificant|errors?|findings?|mistakes?|matched|"
                         r"discrepanc\w*|omissions?|points?|out\s+of)\b", re.I)
# a worked answer's result follows its last "=" or "≈" ("Score = 2/3 ≈ 0.67" is 0.67)
_RESULT_SIGN = re.compile(r"=|≈|→|->")
_NOT_A_SCORE = re.compile(r"(?:n/?a\b|not\s+applicable|cannot|unable)", re.I)


class VertParseError(ValueError):
    pass


def _to_float(token: str) -> float:
    token = token.replace("−", "-")
    if "," in token:
        whole, _, decimals = token.partition(",")
        # "0,85" is a decimal comma; "1,000" could be a thousands separator: no single reading
        if whole.lstrip("-") not in {"", "0", "1"} or (whole.lstrip("-") == "1" and len(decimals) > 2):
            raise VertParseError(f"overall score {token!r} has no single reading (decimal or thousands comma?)")
        token = f"{whole}.{decimals}"
    return float(token)


def read_score_text(answer: str) -> tuple[float, str]:
    """The score in the text after the header (or a bare answer): (value, how it was written)."""
    lines = [line.strip() for line in answer.splitlines() if re.search(r"\d", line)]
    if not lines:
        raise VertParseError("[Overall Accuracy Score] has no readable number")
    line = lines[0].strip(" *`_")
    line = re.sub(r"^(?:final\s+)?(?:overall\s+)?(?:accuracy\s+)?score\s*[:=]\s*", "", line, flags=re.I)
    line = line.strip(" *`_")
    if _NOT_A_SCORE.match(line):
        raise VertParseError(f"[Overall Accuracy Score] gives no score: {line[:60]!r}")
    if _RESULT_SIGN.search(line):  # a worked answer: the result is the number after the last "=" (or "≈")
        last = re.match(rf"\s*\**\s*({_NUMBER})(?![\d.,]*\d)(?!{_OPERATOR})", _RESULT_SIGN.split(line)[-1])
        if not last:
            raise VertParseError(f"worked score {line[:60]!r} does not end in a number")
        first, form = last, "worked"
        after = last.string[last.end():]
    else:
        first = re.match(rf"({_NUMBER})(?!\d)", line)
        form = "plain"
        if not first:  # "I would rate it 0.85." - one number in a sentence; several have no single reading
            numbers = list(re.finditer(rf"(?<![\w.,])({_NUMBER})(?![\d.,]*\d)", line))
            if len(numbers) != 1:
                raise VertParseError(f"[Overall Accuracy Score] has no single number: {line[:60]!r}")
            first, form = numbers[0], "in-sentence"
        after = line[first.end():]
        if re.match(_OPERATOR, after) or re.match(r"\s*%", after):
            raise VertParseError(f"[Overall Accuracy Score] has no readable number (a fraction, range, hedge or "
                                 f"percentage): {line[:60]!r}")
    if _COUNT_WORD.match(after):
        raise VertParseError(f"[Overall Accuracy Score] gives a count, not a score: {line[:60]!r}")
    token = first.group(1)
    _check_no_other_score(_to_float(token), after, lines[1:])
    if form == "worked":
        pass
    elif "," in token:
        form = "decimal-comma"
    elif re.match(r"[-−]?[.]", token):
        form = "leading-point"
    return _to_float(token), form


# a score-like number: written with decimals ("0.6", ".6", "0,6", "1.0"), or 0 / 1
_SCORE_LIKE = r"[-−]?(?:\d+[.,]\d+|[.,]\d+|[01])(?![\d.,]*\d)"
# another score right after the first ("0.6, 0.7", "0.6; 0.7", "0.7 0.8")
_NEXT_TO = re.compile(rf"^\s*[,;]?\s*\**({_SCORE_LIKE})\**\s*(?:$|[,;.)])")
# a hedge or a revision before another number on the score's line ("0.7 (or 0.8)", "0.8, revised to 0.6")
_HEDGED = re.compile(rf"\b(?:or|maybe|possibly|perhaps|could\s+be|might\s+be|revised|revise|corrected|changed|after\s+"
                     rf"review|actually|rather|instead|updated?|finally|alternatively)\b[^\d\n]{{0,25}}\b({_SCORE_LIKE})",
                     re.I)
# a later line that gives a score alone ("0.9", "**0.9**", "Score: 0.9", "Answer: 0.5"); not "Rounded: 0.67"
_SCORE_LINE = re.compile(rf"^\s*\**\s*(?:(?:(?:final|overall|accuracy|revised|corrected|updated|my)\s+)*(?:score|answer|"
                         rf"rating|grade|result)\s*[:=]\s*)?\**\s*({_SCORE_LIKE})\s*\**\.?\s*$", re.I)


def _check_no_other_score(value: float, after: str, later: list[str]) -> None:
    """Raise when the judge offers another score beside the first: next to it ("0.6, 0.7"), after a hedge or a
    revision on its line ("0.7 (or 0.8)", "0.8, revised to 0.6"), or alone on a later line ("0.9", "Answer: 0.5")
    (review 15: the first was read). Explanation is no other score (review 16): the rubric band it falls in
    ("0.50-0.74"), a size ("0.5 cm"), "a perfect report would score 1.0", a rounding ("Rounded: 0.67")."""
    found = [m.group(1) for m in (_NEXT_TO.match(after), _HEDGED.search(after)) if m]
    found += [m.group(1) for line in later if (m := _SCORE_LINE.match(line))]
    for token in found:
        try:
            other = _to_float(token)
        except (VertParseError, ValueError):
            other = None
        if other != value:
            raise VertParseError(f"[Overall Accuracy Score] gives more than one score ({value:g}, then "
                                 f"{token!r}): no single reading")


def read_overall_score(text: str) -> float:
    return read_overall_score_with_form(text)[0]


def read_overall_score_with_form(text: str) -> tuple[float, str]:
    if not isinstance(text, str) or not text.strip():
        raise VertParseError("empty judge output")
    headers = list(_HEADER.finditer(text))
    if not headers:
        raise VertParseError("no [Overall Accuracy Score] in the output (truncated or another format)")
    # every header's section up to the next "[Section]" line; a judge may restate the template (no number)
    # before answering, but two sections that give different scores have no single reading
    readings, errors = [], []
    for header in headers:
        answer = re.split(r"\n\s*\[[A-Za-z][^\]\n]*\]", text[header.end():])[0]
        try:
            value, form = read_score_text(answer)
            check_range(value, form)
            readings.append((value, form))
        except VertParseError as error:
            errors.append(error)
    if not readings:
        raise errors[-1]
    if len({value for value, _ in readings}) > 1:
        shown = ", ".join(f"{value:g}" for value, _ in readings)
        raise VertParseError(f"[Overall Accuracy Score] is given {len(readings)} times with different scores ({shown})")
    return readings[-1]


def check_range(value: float, written: str) -> None:
    if not 0.0 <= value <= 1.0:  # App. D.2: "a continuous number in [0.00, 1.00]" - not clamped
        how = "" if written == "plain" else f" ({written})"
        raise VertParseError(f"overall score {value:g} outside [0, 1]{how}")


def read_bare_score(text: str) -> tuple[float, str]:
    """A fine-tuned VERT judge's answer (vert_ft): "0.7", "0,7", ".7", "Score: 0.7", "**0.70**"."""
    if not isinstance(text, str) or not text.strip():
        raise VertParseError("empty judge output")
    head = text.strip().split("\n", 1)[0]
    if _HEADER.match(head):
        return read_overall_score_with_form(text)
    value, form = read_score_text(text.strip())  # the first line with a number; a later score is refused
    check_range(value, form)
    return value, form


def read_counts(text: str) -> dict[str, Any]:
    """GREEN-format counts if the answer has them (VERT keeps GREEN's format); {} otherwise."""
    from radmetrics.green.parse import GreenParseError, parse_green

    try:
        analysis = parse_green(text)
    except GreenParseError:
        return {}
    return {"significant": analysis.significant, "insignificant": analysis.insignificant or {},
            "matched_findings": analysis.matched_findings, "green_leniency": analysis.leniency}
