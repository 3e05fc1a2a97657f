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
headers that give different scores, or one a score we cannot read ("80%", "8/10", "1.4"), have no single reading and
are unscored; "Score = 2/3 ≈ 0.67" is 0.67; "0.7/1"
and "0.8 out of 1.0" are VERT's scale written out, "1 (out of 5)" another scale (unscored; review 24). A
revision is such a second score however it is worded ("0.75", then "I lower it to about 0.5" or "the final score is
rounded down to 0.5"): the row is unscored, never given the score it revises (review 21, H4), also when it is
close ("On second thought, about 0.7 is fairer.": review 22, L4). Explaining the score is no revision: "0.75 (reduced
from 1.0 for the missed effusion)", "each significant error reduces the score by about 0.15", "it correctly
identifies ... so it is rated below 1.0" keep 0.75 and the like (review 22, M1). A revision written as a whole number,
a percentage or on a scale of 10 ("I'd give it a 1.", "The revised score is 1.", "60% is fairer.", "Final score: 6/10")
is such a second score too, where a revising or scoring word governs it; "0.8 (80%)" and "8/10" restate the score,
and "1 finding", "1. The effusion ...", "T12" explain it (parser version 9, review 24). A whole number on no stated
scale ("I'd give it a 7") or on another ("I'd give it a 3 out of 5") is such a second score; "8 out of 10" and "4/5"
restate 0.8. Sizes and clinical ratios are no scores ("0.85 (nodule 1.5 vs 1.6 cm)", "cardiothoracic ratio of 0.6";
"The effusion is 0.5 cm." gives no score); a line of sizes before the score line ("The nodule is 1.5 vs 1.6 cm.\nScore:
0.8") and the rubric band named before the score ("High accuracy (0.75–0.89)\n0.85", a score outside it has no
single reading) are read past; a worked answer's arithmetic must check out ("1 minus 0.2 = 0.8", also after the score;
"1 minus 0.2 = 0.7" has no single reading) (parser version 10, review 24).

An answer in GREEN's format instead of a score (its "[Clinically Significant Errors]" / "[Matched Findings]"
sections, or its error items "(b) Missing a finding ...: 1. Left pleural effusion." however they are marked) gives
no score: the first count in it is not the judge's score (parser version 7, review 21, H3/H4).
"""
from __future__ import annotations

import math
import re
from typing import Any

PARSER_VERSION = "19"  # 4: a second score after the first has no single reading (review 15); 5: GREEN items are
# no in-sentence score (review 19); 6: only GREEN-shaped count lines after the score line are (review 20); 7: GREEN's
# analysis in any of its layouts (sections; items "(b)", "b.", "1.", bold, with the finding after the count) is no
# score, a vert_ft answer that is a whole VERT answer is read under its header; a number after a rounding word is a
# rounding of the score only within 0.05 of it and outside a revising sentence (review 21, H3/H4); revising words are
# about the score (a verb leading to the number, "on second thought", "more accurately"), not stems like "correct",
# "chang", "reduc" in the explanation, and a deduction ("reduced from 1.0", "by 0.15") is no new score (review 22);
# revisions are looked for first ("I lower it to 0.6 per the rubric", "Overall, I would give 0.6", "from 0.8 to
# 0.6"), "about 0.3 deducted" is a deduction, and each number reads a bounded window around it (linear time; review
# 23); 8: a comparison, deduction or scale-end word governs the number it explains ("Given the above, I would assign
# 0.6" is a second score), a proposal ("0.6 would better reflect") is no hypothetical, "I'd lower it by", a score on
# another scale ("1 (out of 5)"), a count ("errors: 0"), "N/A" with a later note; "0.7/1" is 0.7, "Overall Accuracy
# Score (0-1):" a header, "= 0.85 → High accuracy" 0.85, and "1.0 minus 0.25" a deduction from the top (review 24);
# 9: a revision written as a whole number, a percentage or x/10 ("I'd give it a 1", "60% is fairer", "Final score:
# 6/10") is a second score where a revising or scoring word governs it; "0.8 (80%)", "8/10" restate the score, "1
# finding", "1. The effusion ..." are explanation (review 24, left unfixed); 10: a whole number on no stated scale ("I'd
# give it a 7") or on another ("3 out of 5") after the score is a second score; sizes ("1.5 vs 1.6 cm", "0.5 cm") and
# clinical ratios are no scores, a line of them or a rubric band before the score line is read past, a worked
# answer's arithmetic must check out, also on a later line ("Final score: 1 minus 0.2 = 0.8" was unscored); 11: a
# score line "1. The effusion is missed." (a list's first item or a score of 1, then a sentence) has no single reading
# (it was 1.0; session 22); 12: a reasoning model's "<think>...</think>" is drafting, not read, and one left open is
# unscored (its draft score was read; review 29b); 13: a second score section we cannot read ("80%", "8/10", "1.4")
# beside one we can has no single reading (the readable one was taken; review 29b); 14: a header with no colon before
# a score in code format ("[Overall Accuracy Score] `0.8`") is a header (it was unscored: no header found); 15: a
# "[Section]" after the score section is read as its explanation: another score there ("[Revised Score]: 0.6") has no
# single reading (review 31: it was never read, the score it revises taken); 16: a Markdown table's row "| Overall
# Accuracy Score | 0.8 |" is a header (it was unscored: no header found); 17: a score spelled out ("zero point six",
# "one point zero") is read as written in digits: as the score, or as a revision after it (review 31: "0.8" then
# "Actually, I'd say zero point five." was 0.8); 18: a vert_ft answer's lone whole number inside a sentence with no
# scoring word before it ("The candidate report is 1 the effusion") is no score (review 39b: it was 1.0); 19: ... where
# a score noun earlier in the clause or an answer's label states it ("The score would be 1.", "The score for this
# report is 0.", "Overall Accuracy: 1", "Final answer: 1") is the score again (review 41a: parser 18 left them unscored)

# "[Overall Accuracy Score]:", "[Overall accuracy Score]:" (both spellings are in App. D), "**Overall Accuracy
# Score:**", "Overall Accuracy Score = 0.6", "## Overall Accuracy Score", "4. [Overall Accuracy Score]": at the
# start of a line, never a sentence that mentions the phrase. [ \t] not \s: an empty score line must not run on
# into the next section.
# "Overall Accuracy Score (0-1): 0.8" and "Overall Accuracy Score – 0.8" too (review 24, M2: no header found);
# "[Overall Accuracy Score] `0.8`" too (a score in code format, no colon; 14); a Markdown table's row "| Overall
# Accuracy Score | 0.8 |" too (16).
_HEADER = re.compile(r"(?im)^[ \t>#*_`|-]*(?:\d+[.)][ \t]*)?(?:\[[ \t]*)?overall[ \t]+accuracy[ \t]+score"
                     r"(?:[ \t]*\])?(?:[ \t]*\([^()\n]{0,20}\))?[ \t*_]*(?:[:=|][ \t*_]*|(?=[-−–—.,\d`]|$))")
# 0.85 | 0,85 | .85 | 1 | 1.0 ; a sign is kept so that -0.2 is seen as out of range, not read as 0.2
_NUMBER = r"[-−]?(?:\d+(?:[.,]\d+)?|[.,]\d+)"
# after a number: a fraction, product, sum, range or hedge ("3/5", "0.75–0.89", "0.6 or 0.7", "1 out of 5")
_OPERATOR = r"\s*(?:[/*×x+−\-–—]|to\b|or\b|and\b|out\s+of\b|of\b)\s*[-−]?[\d(.]"
# a number that counts something is not the score ("1 significant error, so 0.5", "1 finding")
_COUNT_WORD = re.compile(r"\s*(?:clinically\s+)?(?:significant|insignificant|errors?|findings?|mistakes?|matched|"
                         r"discrepanc\w*|omissions?|points?|out\s+of)\b", re.I)
# the scale written after a number ("0.7/1", "0.8 out of 1.0", "1 (out of 5)", "**1** out of 5", "1 (on a scale of
# 1-5)"): the score on VERT's scale when it is 1, another scale otherwise (review 24: "1 (out of 5)" was read as 1.0,
# "0.7/1" left unscored)
_SCALE_AFTER = re.compile(r"[ \t*_`]*(?:\([ \t*_`]*)?(?:/|out\s+of\b|(?:on\s+)?(?:a\s+)?scale\s+(?:of\s+|from\s+)?"
                          r"\d+(?:[.,]\d+)?\s*(?:-|–|—|to)\s*)[ \t*_`]*(\d+(?:[.,]\d+)?)(?![\d.,]*\d)(?:[ \t*_`]*\))?", re.I)
_SAME_SCALE_AFTER = re.compile(r"[ \t*_`]*(?:\([ \t*_`]*)?(?:/|out\s+of\b)[ \t*_`]*1(?:[.,]0+)?(?![\d.,]*\d)", re.I)
# a count named right before the number: "Clinically significant errors: 0", "M = 4, S = 0, I = 0" (review 24: read as
# the score 0)
_COUNT_BEFORE = re.compile(r"(?:\b(?:errors?|findings?|omissions?|discrepanc\w*|mistakes?|matched|matches)|"
                           r"(?-i:\b[MSI]))[ \t*_)\]]*[:=][ \t*_]*$", re.I)
_WHOLE_NUMBER = re.compile(r"[-−]?\d+")
# ... a bare answer's whole number is its score after a score noun a few words before ("The score would be 1.", "The
# score for this report is 0.", "Score is: 1"; not "The score is high and the report is 1 the ...") or after an
# answer's label that opens the line ("Overall Accuracy: 1", "Final answer: 1", "Verdict: 0"), as after a scoring word
# (`_SCORE_GOVERNS`)
_BARE_SCORE_LEAD = re.compile(
    r"\b(?:score|rating|grade)(?:[ \t]+(?:for|of|to|here|now|given|assigned|this|that|the|a|an|candidate|generated|"
    r"report|reports|it))*[ \t*_]*(?:(?:is|was|would[ \t]+be|should[ \t]+be|will[ \t]+be)\b[ \t*_]*:?|[:=])[ \t*_]*$"
    r"|^[ \t>*_-]*(?:the\s+)?(?:(?:overall|final)\s+)*(?:accuracy|answer|verdict|result|assessment)[ \t*_]*(?:is\b|[:=])"
    r"[ \t*_]*$", re.I)
# a worked answer's result follows its last "=" or "≈" ("Score = 2/3 ≈ 0.67" is 0.67)
_RESULT_SIGN = re.compile(r"=|≈|→|->")
_SCORE_LABEL = re.compile(r"^(?:final\s+)?(?:overall\s+)?(?:accuracy\s+)?score\s*[:=]\s*", re.I)
_NOT_A_SCORE = re.compile(r"(?:n/?a\b|not\s+applicable|cannot|unable)", re.I)
# the rubric band a score falls in (App. D.4's five), named before the score: "High accuracy (0.75–0.89)",
# "0.75-0.89: High accuracy", "Rubric band: Moderate accuracy (0.50-0.74)"; a band needs its name, a bare "0.75–0.89"
# is a range (review 24: the band's numbers were read as the score). Matched on a line's first `_BAND_CHARS`
# characters (bounded: linear time)
_BAND_NAME = r"(?:near[- ]?perfect|very[ \t]+poor|high|moderate|low|poor)[ \t]+(?:accuracy|agreement)"
_BAND_FIRST = re.compile(
    rf"(?:(?:rubric[ \t]+)?(?:band|range|category|level)[ \t*_]*[:\-–—]?[ \t*_]*)?"
    rf"(?:(?P<name>{_BAND_NAME})[ \t*_]*(?:[:\-–—(][ \t*_(]*)?)?\(?(?P<low>\d*[.,]\d+|\d)[ \t]*(?:-|–|—|to)[ \t]*"
    rf"(?P<high>\d*[.,]\d+|\d)(?![\d.,]*\d)\)?(?:[ \t*_]*(?:[:\-–—(][ \t*_]*)?(?P<named_after>{_BAND_NAME}))?"
    rf"[ \t*_).:]*(?(name)|(?(named_after)|(?!)))", re.I)
_BAND_CHARS = 120
# ... and named as the band the score is not in: "Moderate accuracy (0.50–0.74) rather than High accuracy (0.75–0.89)"
# (review 24: a second score)
_BAND_SET_ASIDE = re.compile(rf"\b(?:instead[ \t]+of|rather[ \t]+than|not)[ \t]+(?:(?:the|a|an|in|within|into)[ \t]+)*"
                             rf"(?:{_BAND_NAME})?[ \t*_]*(?:[:\-–—(][ \t*_(]*)?$", re.I)
# a measurement, not a score: a size with its unit ("0.5 cm", "1.5-cm"), a pair or triple whose unit follows the last
# number ("1.5 vs 1.6 cm", "1.5 x 1.2 x 0.8 cm", "1.5-1.6 cm"; not "0.6 - 5 mm nodule missed", nor "0.6 and 5 mm", where
# 0.6 may be a revised score), or a clinical ratio named before it ("cardiothoracic ratio of 0.6")
# (review 24: "(nodule 1.5 vs 1.6 cm)" and "cardiothoracic ratio of 0.6" were second scores, "0.6 cm" the score)
_MEASURE_UNIT = r"(?:[ \t]*-)?[ \t]*(?:cm|mm|ml|cc|mg|kg|HU|years?|yrs?)\b"
_MEASURE_AFTER = re.compile(rf"{_MEASURE_UNIT}|(?:(?:[ \t]*(?:vs\.?|versus|to|by|x|×)[ \t]*|[-–—])"
                            rf"(?:\d+(?:[.,]\d+)?|[.,]\d+)){{1,2}}{_MEASURE_UNIT}", re.I)
_MEASURED_BEFORE = re.compile(r"\b(?:(?:cardio-?thoracic|cardiac|C/?T)[ \t]+ratio|CTR|(?:LV)?EF|(?:left[ \t]+"
                              r"ventricular[ \t]+)?ejection[ \t]+fraction|SUV[ \t]*(?:max)?)\b[ \t]*(?:(?:of|is|was|"
                              r"=|:|at|about|around|approx\w*\.?|~|≈|measur\w*)[ \t]*)*$", re.I)
#: a score section whose first line starts with a number ("80%", "8/10", "~0.8", "Score: 1.4"), not an echoed
#: template's placeholder ("<Overall accuracy score between 0 and 1 ...>") nor a sentence
_NUMBER_LED = re.compile(r"[\s>*_`~≈]*(?:(?:final[ \t]+)?score[ \t]*[:=][ \t*_`~≈]*)?[-−]?[.,]?\d", re.I)
#: a score line that is a percentage or x/10 and nothing else: "80%", "**8/10**", "8 out of 10."
_RESTATED = re.compile(r"[\s>*_`]*(\d{1,3}(?:\.\d+)?)[ \t]*(%|/[ \t]*10|out[ \t]+of[ \t]+10)[ \t*_`.]*$", re.I)
#: how far around a later number `_is_explanation` reads (review 23, M2: bounded, so parsing stays linear)
_LOOK_BACK, _LOOK_AHEAD = 80, 200
# a list item's number: "1) The effusion ...", "1. The effusion ..."
_NUMBERED_ITEM = re.compile(r"(\d{1,2})([.)])[ \t]+[*_]*[^\W\d_]")
# a result sign that leads to a number: "= 0.85", "= **0.85**"
_LEADS_TO_NUMBER = re.compile(r"\s*(?:\*+\s*)?[-−]?[.,]?\d")
# the text up to and including its last digit (greedy: one pass, linear)
_THROUGH_LAST_DIGIT = re.compile(r"(?s).*\d")
# a worked answer's arithmetic: numbers, the four operations (in signs or words) and parentheses
_ARITH_TOKEN = re.compile(r"[ \t]*(?:(?P<num>\d+(?:[.,]\d+)?|[.,]\d+)|(?P<op>minus|plus|times|divided[ \t]+by|"
                          r"[-−–+*/×x·÷()])(?![a-z])|(?P<other>[a-z]+|\S))", re.I)
_OPERATION = {"minus": "-", "−": "-", "–": "-", "plus": "+", "times": "*", "×": "*", "x": "*", "·": "*", "÷": "/"}


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


def read_score_text(answer: str, bare: bool = False) -> tuple[float, str]:
    """The score in the text after the header (or a bare answer, ``bare``: no header says a score follows): (value,
    how it was written)."""
    head = next((line.strip(" *`_\t") for line in answer.splitlines() if line.strip(" *`_\t")), "")
    if _NOT_A_SCORE.match(re.sub(_SCORE_LABEL, "", head).strip(" *`_")):
        # "N/A (cannot be assessed)" then a note with a number: no score, not the note's number (review 24: "...
        # the score would default to 0." was read as 0)
        raise VertParseError(f"[Overall Accuracy Score] gives no score: {head[:60]!r}")
    lines = [line.strip() for line in answer.splitlines() if re.search(r"\d", line)]
    if not lines:
        raise VertParseError("[Overall Accuracy Score] has no readable number")
    if _is_green_item(lines[0]):
        # "1. False report of a finding in the candidate: 0.", "**(b)** Missing ...: 1. Left pleural effusion.": the
        # item's number or count is no score (review 21, H4: read as 1.0)
        raise VertParseError(f"the answer lists GREEN's error items with counts, not a score: {lines[0][:60]!r}")
    line = _unlabelled(lines[0])
    if _NOT_A_SCORE.match(line):
        raise VertParseError(f"[Overall Accuracy Score] gives no score: {line[:60]!r}")
    band, stated = _BAND_FIRST.match(line[:_BAND_CHARS]), False
    if band and (re.search(r"\d", line[band.end():]) or len(lines) > 1):
        # the rubric band the score falls in, named before it: "High accuracy (0.75–0.89)\n0.85",
        # "High accuracy (0.75-0.89): 0.85" (review 24: unscored, "no single number")
        rest = line[band.end():]
        lines = [rest, *lines[1:]] if re.search(r"\d", rest) else lines[1:]
        line, stated = _unlabelled(lines[0]), True
    while len(lines) > 1 and _only_measurements(line):
        # an explanation line of sizes before the score line: "The nodule measures 1.5 vs 1.6 cm.\nScore: 0.8"
        # (review 24: "no single number"); the score must then be stated as one (a score line, or after a scoring word),
        # as after a band
        lines = lines[1:]
        line, stated = _unlabelled(lines[0]), True
    value, form = _read_score_line(line, lines[1:], stated, bare)
    if band and not _band_holds(value, band):
        raise VertParseError(f"[Overall Accuracy Score] gives {value:g} outside the band it names "
                             f"({band.group(0).strip()[:40]!r}): no single reading")
    return value, form


def _unlabelled(line: str) -> str:
    """The line without markdown and a leading score label ("**Score:** 0.8" is "0.8")."""
    return re.sub(_SCORE_LABEL, "", line.strip(" *`_")).strip(" *`_")


def _read_score_line(line: str, later: list[str], stated: bool, bare: bool = False) -> tuple[float, str]:
    """The score on its line (first line with a number, after any band or measurements), checked against the rest."""
    if _RESULT_SIGN.search(line):  # a worked answer: the result is the number after the last "=" (or "≈")
        first, after = _worked_result(line)
        form = "worked"
    else:
        first = re.match(rf"({_NUMBER})(?!\d)", line)
        form = "plain"
        if first and _is_numbered_item(line, later, stated):
            raise VertParseError(f"[Overall Accuracy Score] gives a numbered list, not a score: {line[:60]!r}")
        if first and _opens_like_first_item(line):
            # "1. The effusion is missed.": a list's first item or a score of 1 then a sentence; the sentence often
            # names an error, so reading 1.0 could be the wrong number (session 22; "1.0. ..." and "1" alone are read)
            raise VertParseError(f"[Overall Accuracy Score] '1.' then a sentence is a list item or a score of 1: "
                                 f"no single reading: {line[:60]!r}")
        if not first:  # "I would rate it 0.85." - one number in a sentence; several have no single reading
            first, form = _number_in_sentence(line, later, stated), "in-sentence"
            lead = _lead(line[:first.start()])
            if bare and _WHOLE_NUMBER.fullmatch(first.group(1)) and not (_SCORE_GOVERNS.search(lead)
                                                                         or _BARE_SCORE_LEAD.search(lead)):
                # a bare answer's lone 0 or 1 inside a sentence, no scoring word before it ("The candidate report is 1
                # the effusion"): a small judge's garbled text, not its score (review 39b: 2 of 20 such answers read
                # as 0.0 or 1.0). A decimal ("deserves 0.6 since") or "the score is 1." is read
                raise VertParseError(f"the answer has a whole number inside a sentence and no scoring word before it: "
                                     f"{line[:60]!r}, no single reading")
        after = line[first.end():]
        scale = _SCALE_AFTER.match(after)
        if scale and _to_float(scale.group(1)) == _SCALE_TOP:  # "0.7/1", "0.8 out of 1.0": VERT's own scale
            after = after[scale.end():]
        elif scale:  # "1 (out of 5)", "**1** out of 5": another scale
            raise VertParseError(f"[Overall Accuracy Score] has no readable number (a fraction, range, hedge or "
                                 f"percentage on another scale): {line[:60]!r}")
        if re.match(_OPERATOR, after) or re.match(r"\s*%", after):
            raise VertParseError(f"[Overall Accuracy Score] has no readable number (a fraction, range, hedge or "
                                 f"percentage): {line[:60]!r}")
    if _COUNT_WORD.match(after):
        raise VertParseError(f"[Overall Accuracy Score] gives a count, not a score: {line[:60]!r}")
    if _is_measurement(first.string, first.start(1), first.end(1)):  # "0.6 cm", "The effusion is 0.5 cm." (review 24)
        raise VertParseError(f"[Overall Accuracy Score] gives a measurement, not a score: {line[:60]!r}")
    token = first.group(1)
    _check_no_other_score(_to_float(token), after, later)
    if form == "worked":
        pass
    elif "," in token:
        form = "decimal-comma"
    elif re.match(r"[-−]?[.]", token):
        form = "leading-point"
    return _to_float(token), form


def _is_numbered_item(line: str, later: list[str], stated: bool) -> bool:
    """Whether the line opens a numbered list ("1) The effusion is missed.", "1. The effusion ..." then "2. ..."), or,
    after a band or sizes, is an item at all: its number is no score (review 24: "Near-perfect agreement
    (0.90–1.00)\n1. The effusion is missed." would be 1.0)."""
    item = _NUMBERED_ITEM.match(line)
    if not item:
        return False
    following = f"{int(item.group(1)) + 1}"
    return (item.group(2) == ")" or stated
            or bool(later and re.match(rf"[ \t>*_-]*{following}[.)][ \t]", later[0])))


def _opens_like_first_item(line: str) -> bool:
    """"1. The effusion ..." / "1. **No** errors": written as a numbered list's first item ("1.0. ..." and "0. ..."
    are not how lists start)."""
    item = _NUMBERED_ITEM.match(line)
    return bool(item and item.group(1) == "1" and item.group(2) == ".")


def _worked_result(line: str) -> tuple[re.Match[str], str]:
    """A worked answer's result (the number after the last "=" that leads to a number; "= 0.85 → High accuracy" is
    0.85: review 24, M3) and the text after it. Its arithmetic must check out ("1 minus 0.2 = 0.7" has no single
    reading: review 24)."""
    signs = list(_RESULT_SIGN.finditer(line))
    # each sign reads a bounded slice after it: a looping "= = = ..." stays linear
    sign = next((m for m in reversed(signs) if _LEADS_TO_NUMBER.match(line[m.end():m.end() + 40])), signs[-1])
    result = _RESULT_SIGN.split(line[sign.end():])[0]
    last = re.match(rf"\s*(?:\*+\s*)?({_NUMBER})(?![\d.,]*\d)(?!{_OPERATOR})", result)
    if not last:
        raise VertParseError(f"worked score {line[:60]!r} does not end in a number")
    if _COUNT_BEFORE.search(line[:sign.end()]):  # "M = 4, S = 0, I = 0"
        raise VertParseError(f"[Overall Accuracy Score] gives a count, not a score: {line[:60]!r}")
    if sign.group() in "=≈" and 0 <= _to_float(last.group(1)) <= 1:  # out of range is unscored for that
        chain = line[max(0, sign.start() - _LOOK_AHEAD):sign.start()]
        if _arithmetic(chain, last.group(1))[0] is False:
            raise VertParseError(f"worked score {line[:60]!r}: its arithmetic does not check out, no single reading")
    return last, last.string[last.end():]


def _number_in_sentence(line: str, later: list[str], stated: bool) -> re.Match[str]:
    """The one number in a sentence that gives the score ("I would rate it 0.85."); sizes beside it are explanation
    where a scoring word governs it ("I would rate it 0.8 given the 1.5 vs 1.6 cm nodule.": review 24)."""
    numbers = list(re.finditer(rf"(?<![\w.,])({_NUMBER})(?![\d.,]*\d)", line))
    if len(numbers) != 1 or stated:
        numbers = [m for m in numbers if not _is_measurement(line, m.start(1), m.end(1))]
        if len(numbers) != 1 or not _SCORE_GOVERNS.search(_lead(line[:numbers[0].start()])):
            if stated:  # "The nodule is 1.5 cm.\nThe report is good, 0.8.": no score stated as one
                raise VertParseError(f"[Overall Accuracy Score] states no score (on its own line or after a scoring "
                                     f"word) after the band or sizes before it: {line[:60]!r}")
            raise VertParseError(f"[Overall Accuracy Score] has no single number: {line[:60]!r}")
    first = numbers[0]
    if _COUNT_BEFORE.search(line, 0, first.start()):  # "Clinically significant errors: 0"
        raise VertParseError(f"[Overall Accuracy Score] gives a count, not a score: {line[:60]!r}")
    if any(_is_green_item(text) for text in later):
        # "(e) Mentioning ...: 0." then "(c) ...: 1.": GREEN's error counts, whose first was read as the score
        # (review 19: a GREEN analysis answering the vert_ft prompt scored 0 or 1). A later line counts only in
        # GREEN's shape, the count right after the item's colon: a numbered reason that mentions a number ("1) It
        # omits the 5 mm nodule.") leaves the score as written (review 20, F1)
        raise VertParseError(f"the answer lists GREEN's error items with counts, not a score: {line[:60]!r}")
    return first


def _band_holds(value: float, band: re.Match[str]) -> bool:
    low, high = sorted((_to_float(band.group("low")), _to_float(band.group("high"))))
    return low <= value <= high


def _is_measurement(text: str, start: int, end: int) -> bool:
    """Whether the number at text[start:end] is a size or a clinical ratio (bounded windows: linear time)."""
    return bool(_MEASURE_AFTER.match(text, end) or _MEASURED_BEFORE.search(text[max(0, start - 40):start]))


def _only_measurements(line: str) -> bool:
    """Whether every number on the line is a measurement ("The nodule measures 1.5 vs 1.6 cm.")."""
    numbers = list(re.finditer(rf"(?<![\w.,])({_NUMBER})(?![\d.,]*\d)", line))
    return bool(numbers) and all(_is_measurement(line, m.start(1), m.end(1)) for m in numbers)


def _lead(before: str) -> str:
    """The words before a number, back to the number before it, at most `_LOOK_BACK` characters (linear time)."""
    before = before[-_LOOK_BACK:]
    through_digit = _THROUGH_LAST_DIGIT.match(before)
    return before[through_digit.end():] if through_digit else before


def _arithmetic(chain: str, result: str) -> tuple[bool | None, list[tuple[int, int]]]:
    """Whether a worked answer's steps ``chain`` (up to its last "=" or "≈") lead to ``result``: True where each step
    that is plain arithmetic checks out (to the rounding of the number written), False where one does not, None
    where no step is plain arithmetic ("Score = M/(M+2S) = 0.6", "max(0, 1 − 0.3) = 0.7"); and where the numbers of
    the checked steps stand in ``chain``. "Final score: 1 minus 0.2 = 0.8" checks out, "1 minus 0.2 = 0.7" does not."""
    bounds = [-1, *(m.start() for m in re.finditer(r"[=≈]", chain)), len(chain)]
    sides = [_arithmetic_side(chain, bounds[k] + 1, bounds[k + 1], whole=k > 0) for k in range(len(bounds) - 1)]
    try:
        sides.append((_to_float(result), [], _decimals(result)))
    except (VertParseError, ValueError):
        return None, []
    # each "=" says its sides are equal: each plain side is checked against the plain side before it, across a side that
    # is not plain arithmetic ("3/5 = M/(M+2S) = 0.6")
    sides = [side for side in sides if side is not None]
    for left, right in zip(sides, sides[1:]):
        if not (_written_as(left[0], right[0], right[2]) if right[2] is not None
                else _written_as(right[0], left[0], left[2])):
            return False, []
    if len(sides) < 2:
        return None, []
    return True, [span for side in sides for span in side[1]]


def _decimals(literal: str) -> int:
    return len(re.split(r"[.,]", literal, maxsplit=1)[1]) if re.search(r"[.,]", literal) else 0


def _written_as(computed: float, written: float, decimals: int | None) -> bool:
    """Whether ``written`` (with that many decimals; None: computed too) is ``computed``, rounded or cut to its
    decimals ("2/3 = 0.67", "2/3 = 0.666"); a whole number is never a rounding ("3/4 = 1" does not check out)."""
    if not decimals:
        return abs(computed - written) <= 1e-6
    unit = 10.0 ** -decimals
    return (abs(computed - written) <= unit / 2 + 1e-9
            or abs(math.trunc(computed / unit + math.copysign(1e-9, computed)) * unit - written) <= 1e-9)


def _arithmetic_side(chain: str, start: int, end: int, whole: bool):
    """One side of a worked step, chain[start:end]: (value, spans of its numbers, rounding when it is one written
    number) where it is plain arithmetic; the first side is the arithmetic it ends in ("Final score: 1 minus 0.2")."""
    tokens = [(m.lastgroup, m.group(m.lastgroup), m.start(m.lastgroup), m.end(m.lastgroup))
              for m in _ARITH_TOKEN.finditer(chain, start, end)]
    if not whole:  # the arithmetic after a label's colon, and it must compute something; not "Score (0-1) = 0.8"
        cut = max((k for k, token in enumerate(tokens) if token[0] == "other"), default=-1)
        if cut >= 0 and tokens[cut][1] != ":":
            return None
        tokens = tokens[cut + 1:]
        if not any(kind == "op" for kind, *_ in tokens):
            return None
    if not tokens or any(kind == "other" for kind, *_ in tokens):
        return None
    value = _evaluate(tokens)
    if value is None:
        return None
    decimals = _decimals(tokens[0][1]) if len(tokens) == 1 else None  # one written number
    return value, [(s, e) for kind, _, s, e in tokens if kind == "num"], decimals


def _evaluate(tokens: list) -> float | None:
    """The value of plain arithmetic (numbers, + - * /, parentheses), or None where it is not that."""
    try:
        ops = [_OPERATION.get(text.lower(), "/" if text.lower().startswith("divided") else text) if kind == "op"
               else _to_float(text) for kind, text, *_ in tokens]
    except (VertParseError, ValueError):  # "1,000": no single reading
        return None
    position = 0

    def take(*wanted):
        nonlocal position
        if position < len(ops) and ops[position] in wanted and isinstance(ops[position], str):
            position += 1
            return ops[position - 1]
        return None

    def factor():
        nonlocal position
        if take("-"):
            return -factor()
        if take("("):
            inner = expression()
            if not take(")"):
                raise ValueError
            return inner
        if position < len(ops) and isinstance(ops[position], float):
            position += 1
            return ops[position - 1]
        raise ValueError

    def term():
        value = factor()
        while operation := take("*", "/"):
            right = factor()
            value = value * right if operation == "*" else value / right
        return value

    def expression():
        value = term()
        while operation := take("+", "-"):
            right = term()
            value = value + right if operation == "+" else value - right
        return value

    try:
        value = expression()
    except (ValueError, ZeroDivisionError, RecursionError):
        return None
    return value if position == len(ops) else None


def _worked_operands(text: str, value: float) -> set[tuple[int, int]]:
    """The numbers of a worked line after the score that works it out ("0.8" then "Final score: 1 minus 0.2 = 0.8"):
    explanation where its arithmetic checks out; no single reading where it does not (review 24: unscored, 0.2
    read as a second score). Each line reads a bounded window before its result: linear time."""
    spans, offset = set(), 0
    for line in text.split("\n"):
        if "=" in line or "≈" in line:
            spans |= {(offset + s, offset + e) for s, e in _worked_line_operands(line, value)}
        offset += len(line) + 1
    return spans


def _worked_line_operands(line: str, value: float) -> list[tuple[int, int]]:
    sign = next((m for m in reversed(list(_RESULT_SIGN.finditer(line)))
                 if _LEADS_TO_NUMBER.match(line[m.end():m.end() + 40])), None)
    if sign is None or sign.group() not in "=≈":
        return []
    result = re.match(rf"\s*(?:\*+\s*)?({_NUMBER})(?![\d.,]*\d)", line[sign.end():sign.end() + 40])
    try:
        if not result or abs(_to_float(result.group(1)) - value) > _SAME_SCORE:
            return []
    except (VertParseError, ValueError):
        return []
    start = max(0, sign.start() - _LOOK_AHEAD)
    checked, spans = _arithmetic(line[start:sign.start()], result.group(1))
    if checked is False:
        raise VertParseError(f"[Overall Accuracy Score] {value:g} is worked out as {line.strip()[:60]!r}, whose "
                             f"arithmetic does not check out: no single reading")
    return [(start + s, start + e) for s, e in spans]


# GREEN's error items (App. A.1: "(a) <Error Type>: <The number of errors>. <Error 1>; ..."), marked as judges mark
# them: "(b)", "b)", "b.", "1." (numbered instead of lettered), "**(b)**", "- (b)" (review 21, H4)
_GREEN_MARKER = r"[ \t>`*_-]*(?:\(?[a-fA-F1-6]\)|[a-fA-F1-6]\.)[*_]*[ \t]"
# a count: a whole number ("1", "**2**"), not a size or a score ("5 mm", "0.8")
_GREEN_COUNT = r"[ \t*_]*\d+(?![\d.,]*\d)"
# an item: the count is all it says ("(a) 1."), or comes right after its colon and closes it or is followed by the
# finding ("(b) Missing ...: 1. Left pleural effusion.", "(a) False report ...: 1 (effusion)"); an item that names
# GREEN's error type gives its count after a colon or dash, with or without a marker ("Missing a finding present in
# the reference: 1."). A numbered reason that mentions a number ("1) It omits the 5 mm nodule.", "a) Missed finding:
# pleural effusion (1 error).") is no item (review 20, F1)
_GREEN_TYPE = (r"(?:false\s+report\s+of|missing\s+a\s+finding|misidentification\s+of|misassessment\s+of|"
               r"mentioning\s+a\s+comparison|omitting\s+a\s+comparison)")
_GREEN_ITEM_LINE = re.compile(
    rf"{_GREEN_MARKER}(?:{_GREEN_COUNT}[ \t*_]*(?:\.[ \t*_]*)?$|[^\n]*?:{_GREEN_COUNT}[ \t*_]*(?:$|[.,;:(\-–—]))"
    rf"|[ \t>`*_-]*(?:(?:\(?[a-fA-F1-6]\)|[a-fA-F1-6]\.)[*_]*[ \t]+[*_]*)?{_GREEN_TYPE}[^\n]*?[:=\-–—]{_GREEN_COUNT}",
    re.I)
# the names of GREEN's sections
_GREEN_SECTION_NAME = r"(?:clinically[ \t]+(?:in)?significant[ \t]+errors|matched[ \t]+findings)"
# GREEN's section headers ("[Clinically Significant Errors]:", "**Matched Findings:**" on its own line)
_GREEN_SECTION = re.compile(rf"(?im)^[ \t>#*_`-]*(?:\[[ \t]*{_GREEN_SECTION_NAME}[ \t]*\]|{_GREEN_SECTION_NAME}"
                            r"[ \t*_]*(?::[ \t*_]*)?$)")


# GREEN's own words anywhere in an answer: its section names in brackets (also mid-line, where a small judge glues
# them to the text before: "... upper[Matched Findings]:") and the labels of its error items, phrases of GREEN's
# prompt (radmetrics/green/prompt.py, from Stanford-AIMI/GREEN) that a bare VERT score never carries
_GREEN_WORDS = re.compile(rf"(?i)\[[ \t]*{_GREEN_SECTION_NAME}[ \t]*\]"
                          r"|anatomic[ \t]+location/position|comparison[ \t]+that[ \t]+isn['’]t[ \t]+in[ \t]+the[ \t]+"
                          r"reference|comparison[ \t]+detailing[ \t]+a[ \t]+change|misassessment[ \t]+of[ \t]+the[ \t]+"
                          r"severity")


def _is_green_item(line: str) -> bool:
    return bool(_GREEN_ITEM_LINE.match(line))


# a number that could be a score: written with decimals ("0.6", ".6", "0,6", "1.0"); 0 / 1 alone on a line
_DECIMAL = re.compile(r"(?<![\w.,/])[-−]?(?:\d+[.,]\d+|[.,]\d+)(?![\d.,]*\d)")
_ZERO_ONE_LINE = re.compile(r"^\s*(?:\*+\s*)?(?:(?:(?:final|overall|accuracy|revised|corrected|updated|adjusted|my)\s+)*"
                            r"(?:score|answer|rating|grade|result)\s*[:=]\s*)?(?:\*+\s*)?([01])\s*(?:\*+\s*)?(?:\.\s*)?$", re.I)
# what a number in the score's explanation can be that is no other score (review 16, 17):
_UNIT_AFTER = re.compile(r"\s*(?:cm|mm|ml|cc|mg|kg|%|percent|years?|yrs?|x\b|times\b)", re.I)  # a size, a share
# "0.9 would need no errors"; not a proposal: "0.6 would better reflect ...", "0.7 could also be justified", "0.6 would
# be closer/fairer/more accurate" offer another score (review 24, H1)
_PROPOSAL = (r"\s+(?:(?:also|arguably|perhaps|equally|even|still)\s+)*(?:be\s+(?:(?:a|an|the|my|also|equally|more|even|"
             r"much|far)\s+)*(?:better|fairer|fair|closer|more|justif\w*|reasonable|defensible|appropriate|accurate|"
             r"correct|right|final|valid|acceptable|warranted|preferable)\b|better\b|more\b|suffice|fit\b|suit)")
# ... a proposal with a condition stays hypothetical: "0.9 would be appropriate if the size were right"
_CONDITION = r"[^\n.;!?]{0,60}\b(?:if|unless|without|provided)\b"
_HYPOTHETICAL_AFTER = re.compile(rf"\s*(?:\)\s*)?(?:(?:would|could)(?!{_PROPOSAL}(?!{_CONDITION}))|if\b|requires?|"
                                 r"needs?|is\s+reserved|for\s+a\s+perfect)", re.I)
# named beside the score, never a second score: the scale's end or a rejected alternative ("a perfect report would
# score about 1.0", "instead of 1.0", "Confidence: 0.9") ...
_CLAUSE_CHAR = r"(?:[^\d\n.;:!?]|[.:](?!\s|$))"
# "not" right before the number ("0.7, not 1.0"), not "It's not great, 0.6"; the window stops at the clause's end
# (review 24, H2: "This is not a perfect report. I give it 0.6." kept the score it revises)
_BESIDE_BEFORE = re.compile(r"\b(?:confidence|certainty|probability)[^\d\n.;!?]{0,30}$|\b(?:instead\s+of|"
                            r"rather\s+than)[^\d\n]{0,12}$|\bnot\s+(?:(?:a|an|quite|yet|even|the|full|perfect)\s+)*$",
                            re.I)
# the scale's end, named beside the score: only 1.0 ("a perfect report would score about 1.0", "max 1.0"), not
# "far from perfect, so I'd give 0.6" (review 24, H2)
_SCALE_END_BEFORE = re.compile(rf"\b(?:perfect|ideal|maximum|max|highest|full\s+marks|start\w*\s+(?:at|from|with))\b{_CLAUSE_CHAR}{{0,30}}$", re.I)
_SCALE_TOP = 1.0
# ... or where the score was deducted from: "1.0 minus 0.25", "1.0 − 0.25 = 0.75" (review 24, M4: unscored)
_FROM_TOP_AFTER = re.compile(r"\s*(?:minus\b|[−–-])\s*[.\d]", re.I)
# ... or what the score is compared with or was deducted from, or by ("reduced from 1.0", "rated below 1.0", "lower
# than 1.0", "reduces the score by about 0.15", "otherwise approximately 1.0"): beside the score unless the
# sentence says it revises the score ("More accurately, it is below 0.5") or a revising verb leads to it ("I lower it
# to below 0.5") (review 22, M1: parser 7 read these as revisions)
# Whole words only ("overall", "overlooked", "underestimates" are none), within the number's clause (the window stops
# at ". ", "; ", ":"), and "by" only for a deduction ("reduced by", "by about"), not "judged by the rubric" (review
# 23, H1: these let a revision after the score keep the score it revises)
# The comparison word governs the number, with only a qualifier between ("from a perfect 1.0", "by about 0.15"): not
# "Given the above, I would assign 0.6", "worse than I thought, so 0.6", "I lowered it by a lot, to 0.6" (review 24,
# H2: a 25-character window let these revisions keep the score they revise)
_QUALIFIERS = (r"(?:\s*(?:(?:a|an|the|its|perfect|full|maximum|max|ideal|possible|top|highest|score|mark|rating|of|"
               r"about|approx\w*|around|roughly|nearly|almost|just|another|further|additional|total|only|it|"
               r"report|candidate)\b\.?|~|≈))*\s*")
_COMPARED_BEFORE = re.compile(
    rf"\b(?:than|from|between|above|below|over|under|otherwise)\b{_QUALIFIERS}$"
    rf"|\b(?:reduc\w*|lower\w*|decreas\w*|deduct\w*|drop\w*|dock\w*|cut|penali[sz]\w*|subtract\w*)\b{_CLAUSE_CHAR}{{0,25}}"
    rf"\bby\b{_QUALIFIERS}$"
    rf"|\bby\s+(?:about|approx\w*\.?|around|roughly|~|≈)\s*$", re.I)
# a deduction amount named before the number, in its clause: "I deducted about 0.3", "a deduction of about 0.3",
# "a penalty of 0.3", "1.0 minus 0.25" (review 23, M1), "each worth 0.2": the deduction word governs the number (review
# 24, H2: "After applying the penalty, the score is 0.6", "the report is only worth 0.6" kept the first score)
_DEDUCTION_BEFORE = re.compile(rf"\b(?:deduct\w*|penalt\w*|minus|subtract\w*|costs?|(?:each|every)\s+worth)\b"
                               rf"[ \t]*[:=]?{_QUALIFIERS}$|(?<![\d.,])1(?:[.,]0+)?\s*[−–-]\s*$", re.I)  # "1.0 − 0.25"
# a deduction: "(approximately 0.25 deduction)", "0.15 per significant error", "0.25 off" (review 22, M1)
# "0.3 was deducted" (review 23, M1); "per" only before an error or finding ("0.15 per significant error"), not "0.6
# per the rubric", a score (review 23, H2)
_DEDUCTION_AFTER = re.compile(r"\s*(?:\)\s*)?(?:points?\s+)?(?:(?:was|were|is|are|been|has\s+been|have\s+been|being)\s+)?"
                              r"(?:deduct\w*|penalt\w*|subtract\w*|reduction|off\b|less\b|"
                              r"per\s+(?:[\w-]+\s+){0,3}?(?:errors?|findings?|omissions?|mistakes?|discrepanc\w*|miss\w*)\b|"
                              r"for\s+each\b|each\b)", re.I)
# a rounding of the score ("Rounded: 0.8" after 0.75, "0.67 (about 0.7)", "0.6667 rounded"): only a number within
# a rounding to one decimal of the score (review 21, H4: "0.75 (about 0.5 after the missed effusion)")
_ROUNDING_BEFORE = re.compile(r"(?:round\w*|approx\w*|about|around|roughly|~|≈)[^\d\n]{0,12}$", re.I)
_ROUNDING_AFTER = re.compile(r"\s*(?:\)\s*)?(?:rounded|approx)", re.I)
_ROUNDING = 0.05 + 1e-9
# the same score written to another precision: "0.666 ... Rounded: 0.67", "0.625 ... 0.63" (half a hundredth; the
# margin keeps 0.63 - 0.625, a hair above 0.005 in floating point, the same: review 22)
_SAME_SCORE = 0.005 + 1e-9
# a revising verb whose object is the score and that leads to the number, with only a qualifier between: "I lower
# it to about 0.5", "I revise it down to about 0.7", "I would lower it to 0.5 approximately", "I lower it to below
# 0.5", "the score is reduced to 0.6", "I settle on 0.7" (review 21, H4). Word stems anywhere in the line ("correctly",
# "interval change", "increased opacity", "final impression", "reduced from 1.0") are no revision (review 22, M1);
# "rounded down to 0.5" is a rounding, a revision when further than a rounding from the score
_REVISING_VERB_TO = re.compile(
    r"\b(?:lower|rais|revis|adjust|reduc|increas|decreas|chang|updat|correct|downgrad|upgrad|bump|drop|settl|amend|"
    r"modif|mov|bring|brought|put|set|go|went)\w*\s+(?:(?:it|this|that|the|my|our|its|score|rating|grade|overall|"
    r"accuracy|final)\s+)*(?:(?:down|up|back)\s+)?(?:to|at|on|with)\s+(?:(?:about|approx\w*\.?|around|roughly|just|"
    r"below|under|above|over|nearly|a\s+score\s+of|~|≈)\s*)*$"
    # "I lower it by 0.25" revises the score now; "I lowered it by 0.25", "each error reduces the score by 0.15" tell
    # how it was reached from 1.0
    r"|\bI(?:['’](?:d|ll)|\s+(?:would|will|now|shall|should))?\s+(?:lower|reduce|raise|increase|decrease|drop|dock|bump|revise|adjust|cut|"
    r"deduct|take)\s+(?:(?:it|this|that|the|my|score|rating|grade|overall|accuracy)\s+)+(?:(?:down|up)\s+)?by\s+"
    r"(?:(?:about|approx\w*\.?|around|roughly|~|≈|another|a\s+further)\s*)*$", re.I)
# words that say the sentence revises the score, wherever the number is in it: "On second thought, about 0.7 is
# fairer.", "More accurately ~0.8.", "0.8 (more accurately 0.6)", "the final score is about 0.7" (review 22, L4: a
# revision within 0.05 was read as the score it revises); not "more accurately describes the effusion"
_REVISING_WORDS = re.compile(
    r"\b(?:on\s+(?:second\s+thought|reflection|further\s+(?:review|reflection|consideration)|reconsideration)|"
    r"second\s+thoughts|(?:after|upon)\s+(?:further\s+)?(?:review|reflection|reconsider\w*)|reconsider\w*|"
    r"re-?evaluat\w*|re-?assess\w*|more\s+(?:accurately|precisely|fairly|appropriately|realistically)(?=\s*(?:[,:~≈(]"
    r"|$|[\d.]|about|approx|around|roughly|it\b|the\s+score|I\b|a\b|an\b))|fairer|actually\b|"
    r"(?:would|should|might|could|is|seems?)\s+(?:be\s+)?more\s+(?:appropriate|accurate|fair|reasonable|realistic|"
    r"fitting)\b|more\s+(?:fair|appropriate|accurate|"
    r"reasonable|realistic)\s+(?:score|rating|grade)|better\s+(?:score|rating|grade)|(?:revised|corrected|updated|"
    r"adjusted|amended|new|final)\s+(?:score|rating|grade)\s*(?:is\b|=|:|of\b|would\s+be|should\s+be))", re.I)
_SENTENCE_END = re.compile(r"[.!?;](?!\d)|\n")
_FROM_BEFORE = re.compile(r"\bfrom\s*$", re.I)
_RANGE = re.compile(r"(?<![\w.,])(\d*[.,]\d+|\d+)\s*(?:-|–|—|to)\s*(\d*[.,]\d+|\d+)(?![\d.,]*\d)")
# a score written as a whole number, a percentage or on a scale of 10 ("1", "60%", "6/10", "6 out of 10"): another
# score only where a revising or scoring word governs it, since such numbers are common in the explanation ("1
# finding", "1. The effusion ...", "T12", "scale of 0-1", "80% of findings"); the same score restated ("0.8 (80%)",
# "8/10") is no other score (review 24, left unfixed: "0.9" then "I'd give it a 1.", "The revised score is 1.", "60%
# is fairer.", "Final score: 6/10" kept the first score)
# A whole number other than 0 or 1 ("I'd give it a 7") is a score on a scale the judge does not state; "3 out of 5"
# states its scale (review 24, left unfixed: both kept the first score). A fraction that is worked on ("4/7 = 0.57")
# is arithmetic, not a score.
_WHOLE = (r"(?<![\w.,/\-−–—])(?:(?P<percent>\d{1,3}(?:[.,]\d+)?)[ \t]*(?:%|percent\b)"
                    r"|(?P<numerator>\d{1,2}(?:[.,]\d+)?)[ \t]*(?:/|out[ \t]+of\b)[ \t]*(?P<denominator>\d{1,3})"
                    r"(?!\w|[.,]\d|[ \t]*(?:[=≈→*/×+]|->))"
                    r"|(?P<whole>\d{1,3})(?!\w|[.,]\d|[ \t]*(?:%|percent\b|[/*×+]|[-−–—][ \t]*[\d(.]|"
                    r"(?:to|or|and|of|out[ \t]+of|minus|times|x)[ \t]+[\d(.])))")
# ... governed by a score label or a scoring verb before it: "Final score: 6/10", "The revised score is 1", "a score
# of 1", "I'd give it a 1", "it deserves 60%"
_SCORE_STATEMENT_BEFORE = re.compile(
    r"(?:\b(?:final|revised|corrected|updated|adjusted|amended|new|better|fairer)\s+(?:overall\s+)?(?:accuracy\s+)?"
    r"(?:score|rating|grade)|\bscore\s+of|^[ \t>*_-]*(?:(?:overall|accuracy)\s+)*(?:score|rating|grade))[ \t*_]*"
    r"(?:(?:is|=|:|of|would\s+be|should\s+be|becomes)[ \t*_]*)?(?:(?:about|approx\w*\.?|around|roughly|~|≈)\s*)*$"
    r"|\b(?:give|assign|rate|award|score|deserves?|merits?|warrants?|earns?)\s+(?:(?:it|this|that|the|report|"
    r"candidate|a|an|as|only|just|perfect|full|score|rating|grade|of)\s+)*"
    r"(?:(?:about|approx\w*\.?|around|roughly|~|≈)\s*)*$", re.I)
# ... and "Score: 0.8" inside a sentence: the score among sizes on one line ("The nodule is 1.5 vs 1.6 cm; score: 0.8")
_SCORE_GOVERNS = re.compile(rf"{_SCORE_STATEMENT_BEFORE.pattern}|\b(?:score|rating|grade)[ \t*_]*(?:is\b|=|:)"
                            rf"[ \t*_]*$", re.I)
# ... or by a revising word right before it ("On second thought, 7/10.", "Actually, 1.") that it closes the clause of
_REVISING_LEAD = re.compile(rf"(?:{_REVISING_WORDS.pattern})[ \t,:;~≈*_(-]*(?:(?:about|approx\w*\.?|around|"
                            r"roughly|~|≈)\s*)*$", re.I)
_CLAUSE_END_AFTER = re.compile(r"[ \t*_)]*(?:[.;!?,](?!\d)|$|\s+(?:is|seems?|would|should|fits?|feels?|looks?)\b)",
                               re.I | re.M)
# ... or by a revising word after it: "60% is fairer", "1 is more appropriate", "7/10 would better reflect ..." (not
# "1 would be appropriate if ...", hypothetical)
_REVISING_AFTER = re.compile(
    rf"[ \t*_)]*(?:(?:is|seems?|feels?|looks?|sounds?)\s+(?:(?:a|an|the|much|far|even|more|also)\s+)*(?:fairer|better|"
    rf"closer|more\s+(?:appropriate|accurate|fair|reasonable|realistic|fitting))|(?:would|could|should|might)"
    rf"{_PROPOSAL}(?!{_CONDITION}))", re.I)
# ... but not where the scoring word is negated ("I would not give it a 1 because ...") or the number is the rubric's
# ("A score of 1 means a perfect match")
_NEGATED_BEFORE = re.compile(r"(?:\b(?:not|never)|n['’]t)\s+(?:\w+\s+)?$", re.I)
_DEFINITION_AFTER = re.compile(r"[ \t*_)]*(?:means|indicates|denotes|represents|corresponds|stands\s+for|is\s+(?:given|"
                               r"for|only|defined|assigned)\b|=\s*[a-z])", re.I)
# Only such a number with a word that could govern it is looked at: a letter between it and the number before it on
# its line (the last letter or digit before it is a letter, at most `_LOOK_BACK` characters back), or right after it. Found in one pass of the pattern, a looping "1 1
# 1 ..." costs no work per number (review 24: 20x slower than before parser 9)
_WHOLE_NEAR_WORDS = re.compile(rf"(?P<lead>[^\W\d_](?:[^\w\n]|_){{0,{_LOOK_BACK - 1}}}?)?(?P<number>{_WHOLE})"
                               rf"(?(lead)|(?=[ \t*_)]*[^\W\d_]))", re.I)
# ... but a finding's grade or stage is none: "Grade 2 effusion", "BI-RADS 4 lesion", "stage 3 disease" ("Grade: 1" and
# a bare "Grade 1" may restate the score)
_CLINICAL_GRADE_BEFORE = re.compile(r"\b(?:grade|stage|type|class|level|[A-Z-]*RADS)[ \t]+$", re.I)
_WORD_AFTER = re.compile(r"[ \t]+(?:\([^()\n]{0,30}\)[ \t]+)?[^\W\d_]")
# ... or it is where the score goes to: "I lower it from 80% to 60%", "the score drops from 0.8 to 60%" (the number
# before "to" restates the score)
_FROM_SCORE_TO_BEFORE = re.compile(
    r"\bfrom\s+(?:(?:a|an|the|its|my|score\s+of)\s+)*(?:\*+\s*)?([-−]?(?:\d+(?:[.,]\d+)?|[.,]\d+))[ \t*_]*"
    r"(%|percent\b|/[ \t]*10\b|out[ \t]+of[ \t]+10\b)?[ \t*_]*(?:(?:down|up|back)\s+)?to\s+"
    r"(?:(?:about|approx\w*\.?|around|roughly|~|≈)\s*)*$", re.I)
# ... a revising verb leads to a percentage or x/10 only where its object is the score ("I lower it to 60%", not "the
# stenosis increased to 70%")
_SCORE_OBJECT = re.compile(r"\b(?:I|it|this|score|rating|grade)\b", re.I)


def _check_no_other_score(value: float, after: str, later: list[str]) -> None:
    """Raise when the rest of the score's text gives another score (review 15: the first was read): "0.8, revised
    to 0.6", "0.7 (or 0.8)", "0.6, 0.7", a later line "Upon review, I revise the score to 0.6." or "1". A number
    there is no other score when it restates the score (to rounding), sits in a range that holds the score (the
    rubric band it falls in), has a unit or a count after it, is hypothetical ("0.9 would need no errors"), or is
    named beside the score ("a perfect report would score 1.0", "instead of 1.0") (review 16)."""
    text = "\n".join([after, *later])
    # a band that holds the score; not "from 0.8 to 0.6", which goes from the score to another (review 23, H2: "I
    # reduce it from 0.8 to 0.6" kept 0.8)
    bands = {(m.start(g), m.end(g)) for m in _RANGE.finditer(text)
             if (_in_range(value, m) or _BAND_SET_ASIDE.search(text, max(0, m.start() - 50), m.start()))
             and not (_FROM_BEFORE.search(text, max(0, m.start() - 8), m.start())
                      and abs(_to_float(m.group(1)) - value) <= _SAME_SCORE)
             and not _COUNT_WORD.match(text, m.end())  # "0.6 – 1 significant error" is no band (review 24)
             and not _UNIT_AFTER.match(text, m.end())  # nor "0.6 - 5 mm nodule missed" (a size: review 24)
             for g in (1, 2)}
    bands |= _worked_operands(text, value)  # "Final score: 1 minus 0.2 = 0.8" works out the score (review 24)
    candidates = [(m.group(0), m.start(), m.end()) for m in _DECIMAL.finditer(text)]
    candidates += [(m.group(1), 0, 0) for line in later if (m := _ZERO_ONE_LINE.match(line))]
    for token, start, end in candidates:
        try:
            other = _to_float(token)
        except (VertParseError, ValueError):
            continue
        if abs(other - value) <= _SAME_SCORE or (end and _restated_on_its_scale(text, end, other, value)):
            continue
        if end and _is_explanation(text, start, end, value, other, bands):
            continue
        raise VertParseError(f"[Overall Accuracy Score] gives more than one score ({value:g}, then "
                             f"{token!r}): no single reading")
    for m in _WHOLE_NEAR_WORDS.finditer(text):
        try:
            other = (_to_float(m["percent"]) / 100 if m["percent"] else float(m["whole"]) if m["whole"]
                     else _to_float(m["numerator"]) / int(m["denominator"]))
        except (VertParseError, ValueError, ZeroDivisionError):
            continue
        zero_one = m["whole"] is not None and other <= 1
        if (m["whole"] and _CLINICAL_GRADE_BEFORE.search(text, max(0, m.start("number") - 20), m.start("number"))
                and _WORD_AFTER.match(text, m.end("number"))):
            continue  # "Grade 2 effusion", "BI-RADS 4 lesion": a finding's grade, not a score
        if abs(other - value) > _SAME_SCORE and _is_whole_revision(text, m.start("number"), m.end("number"), value,
                                                                   other, bands, whole=zero_one):
            unstated = ", a whole number not on VERT's 0-1 scale" if m["whole"] and not zero_one else ""
            raise VertParseError(f"[Overall Accuracy Score] gives more than one score ({value:g}, then "
                                 f"{m['number']!r}{unstated}): no single reading")




def _is_explanation(text: str, start: int, end: int, value: float, other: float, bands: set[tuple[int, int]]) -> bool:
    """Whether the number other at text[start:end], after the score value, is explanation, not another score. Only a
    bounded window around the number is read, so that a long (looping) answer parses in linear time (review 23, M2)."""
    if ((start, end) in bands or (start + 1, end) in bands or _UNIT_AFTER.match(text, end)
            or (_COUNT_WORD.match(text, end) and not _SAME_SCALE_AFTER.match(text, end))):
        return True
    window = max(0, start - _LOOK_BACK)
    before = text[max(0, start - 40):start]
    line_before = _line_before(text, start)
    # a revision first: "I lower it to 0.6 per the rubric", "On second thought, 0.6 would be fairer" (review 23, H2)
    if _REVISING_VERB_TO.search(line_before):  # "I lower it to about 0.5", "I lower it to below 0.5"
        return False
    # the number's sentence: review 22 (L4) "On second thought, about 0.7 is fairer."
    sentence_start = max((m.end() for m in _SENTENCE_END.finditer(text, window, start)), default=window)
    sentence_end = next((m.start() for m in _SENTENCE_END.finditer(text, end, end + _LOOK_AHEAD)),
                        min(len(text), end + _LOOK_AHEAD))
    if _REVISING_WORDS.search(text, sentence_start, sentence_end):
        return False
    if (_HYPOTHETICAL_AFTER.match(text, end) or _DEDUCTION_AFTER.match(text, end)
            or _DEDUCTION_BEFORE.search(line_before) or _is_measurement(text, start, end)):
        return True
    if _BESIDE_BEFORE.search(before):  # "0.7 instead of 1.0", "Confidence: 0.9"
        return True
    if other == _SCALE_TOP and (_SCALE_END_BEFORE.search(before) or _FROM_TOP_AFTER.match(text, end)):
        # "a perfect report would score about 1.0", "1.0 minus 0.25", "Starting at 1.0, I deducted 0.25"
        return True
    if _COMPARED_BEFORE.search(before):  # "reduced from 1.0", "rated below 1.0", "by about 0.15" (review 22, M1)
        return True
    if _ROUNDING_BEFORE.search(before) or _ROUNDING_AFTER.match(text, end):
        return abs(other - value) <= _ROUNDING
    return False


def _line_before(text: str, start: int) -> str:
    """The line up to ``start``, at most `_LOOK_BACK` characters of it (bounded: linear time)."""
    window = max(0, start - _LOOK_BACK)
    return text[max(window, text.rfind("\n", window, start) + 1):start]


def _is_whole_revision(text: str, start: int, end: int, value: float, other: float, bands: set[tuple[int, int]],
                       whole: bool) -> bool:
    """Whether a whole number, percentage or x/10 after the score (other, at text[start:end]) is another score: only
    where a revising or scoring word governs it, and it is no explanation (bounded window: linear time)."""
    line_before = _line_before(text, start)
    # the governing words come after the last number before this one (none of these patterns reads a digit): a
    # looping "1 1 1 ..." is then read in constant time per number
    lead = _lead(line_before)

    def measured() -> bool:  # a band's end, a count or a size: what the revising verb leads to is no score
        return bool((start, end) in bands or _COUNT_WORD.match(text, end) or _UNIT_AFTER.match(text, end)
                    or _is_measurement(text, start, end))

    if "from" in line_before and (moved := _FROM_SCORE_TO_BEFORE.search(line_before)):
        scale = (moved.group(2) or "").lower()
        try:
            earlier = _to_float(moved.group(1)) / (1 if not scale else 100 if scale[0] in "%p" else 10)
        except (VertParseError, ValueError):
            earlier = None
        if earlier is not None and abs(earlier - value) <= _SAME_SCORE:  # "from 0.8 to 60%": the score, revised
            return not measured()
    if _REVISING_VERB_TO.search(lead) and (whole or _SCORE_OBJECT.search(line_before)):
        return not measured()
    statement = _SCORE_STATEMENT_BEFORE.search(lead)
    if statement and _NEGATED_BEFORE.search(lead, 0, statement.start()):  # "I would not give it a 1"
        statement = None
    governed = (statement or _REVISING_AFTER.match(text, end)
                or (_REVISING_LEAD.search(lead) and _CLAUSE_END_AFTER.match(text, end)))
    return (bool(governed) and not _DEFINITION_AFTER.match(text, end)
            and not _is_explanation(text, start, end, value, other, bands))


def _restated_on_its_scale(text: str, end: int, other: float, value: float) -> bool:
    """Whether a number with its scale written after it is the score restated: "7.5/10" after 0.75."""
    scale = _SCALE_AFTER.match(text, end)
    return bool(scale) and _to_float(scale.group(1)) > 0 and abs(other / _to_float(scale.group(1)) - value) <= _SAME_SCORE


def _in_range(value: float, match: re.Match[str]) -> bool:
    try:
        low, high = sorted((_to_float(match.group(1)), _to_float(match.group(2))))
    except (VertParseError, ValueError):
        return False
    return low <= value <= high


def read_overall_score(text: str) -> float:
    return read_overall_score_with_form(text)[0]


def _answer_after_reasoning(text: str) -> str:
    """The text outside a reasoning model's "<think>...</think>": its draft "[Overall Accuracy Score]: 0.6" is no
    score (review 29b: it was read when the answer after it gave none, or the output was cut while thinking)."""
    from radmetrics.json_answer import AnswerError, without_reasoning

    try:
        return without_reasoning(text)
    except AnswerError as error:
        raise VertParseError(str(error)) from None


_DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
#: a score on VERT's scale spelled out: "zero point six", "one point zero" (not "at one point two findings differ")
_SPELLED_SCORE = re.compile(rf"\b(?:zero[ \t]+point(?:[ \t]+(?:{'|'.join(_DIGIT_WORDS)}))+|one[ \t]+point(?:[ \t]+zero)+)"
                            r"\b(?![ \t]+(?:point|hundred|thousand)\b)", re.I)


def _spelled_in_digits(text: str) -> str:
    """A score spelled out ("zero point six") in digits ("0.6"), so that it is read where a score written in digits
    is, and a revision written so is seen (review 31: "0.8" then "Actually, I'd say zero point five." was 0.8)."""
    def digits(match: re.Match[str]) -> str:
        whole, *decimals = [word for word in match.group().lower().split() if word != "point"]
        return f"{_DIGIT_WORDS.index(whole)}.{''.join(str(_DIGIT_WORDS.index(word)) for word in decimals)}"

    return _SPELLED_SCORE.sub(digits, text)


def read_overall_score_with_form(text: str) -> tuple[float, str]:
    if not isinstance(text, str) or not text.strip():
        raise VertParseError("empty judge output")
    text = _spelled_in_digits(_answer_after_reasoning(text))
    headers = list(_HEADER.finditer(text))
    if not headers:
        raise VertParseError("no [Overall Accuracy Score] in the output (truncated or another format)")
    # every header's section up to the next "[Section]" line; a judge may restate the template (no number)
    # before answering, but two sections that give different scores have no single reading
    readings, errors, unreadable = [], [], []
    trailing = ""
    for k, header in enumerate(headers):
        # up to the next header of any form, or the next "[Section]" line (review 17: a later "**Overall Accuracy
        # Score:** 0.6" was read inside the first section, which then failed and was dropped)
        end = headers[k + 1].start() if k + 1 < len(headers) else len(text)
        answer = re.split(r"\n[ \t]*\[[A-Za-z][^\]\n]*\]", text[header.end():end])[0]
        if k == len(headers) - 1:
            trailing = text[header.end() + len(answer):]
        try:
            value, form = read_score_text(answer)
            check_range(value, form)
            readings.append((value, form))
        except VertParseError as error:
            if "more than one score" in str(error):  # a section that gives two scores: no single reading
                raise
            errors.append(error)
            if _NUMBER_LED.match(answer):
                unreadable.append((answer.strip().split("\n", 1)[0], error))
    if not readings:
        raise errors[-1]
    unreadable = [(line, error) for line, error in unreadable if not _restates(line, readings[0][0])]
    if unreadable:
        # a score we cannot read ("80%", "8/10", "1.4", "0.75-0.89") beside one we can is a second score, not an
        # echoed template ("<Overall accuracy score between 0 and 1 ...>", no number first): review 29b, the
        # readable one was taken ("0.6" then "[Overall Accuracy Score]: 80%" was 0.6)
        line, error = unreadable[0]
        raise VertParseError(f"[Overall Accuracy Score] is given {len(readings) + len(unreadable)} times, once as "
                             f"{line[:40]!r}, which cannot be read ({error}): no single reading")
    if len({value for value, _ in readings}) > 1:
        shown = ", ".join(f"{value:g}" for value, _ in readings)
        raise VertParseError(f"[Overall Accuracy Score] is given {len(readings)} times with different scores ({shown})")
    _check_sections_after(readings[-1][0], trailing)
    return readings[-1]


#: a section's bracketed label at the start of a line ("[Final Score]:"), read as the label it names ("Final Score:")
_SECTION_LABEL = re.compile(r"^[ \t>*_]*\[[ \t]*([^\]\n]*?)[ \t]*\]")


def _check_sections_after(value: float, trailing: str) -> None:
    """The "[Section]"s after the last score section (App. D puts the score last) are read as the score's explanation
    is: another score there ("[Revised Score]: 0.6", "[Final Overall Accuracy Score]: 0.6", "[Explanation]: I would give
    it 0.6.") has no single reading (parser 15: they were never read, and the score they revise was taken)."""
    later = [_SECTION_LABEL.sub(r"\1", line.strip()) for line in trailing.splitlines() if re.search(r"\d", line)]
    if later:
        _check_no_other_score(value, "", later)


def _restates(line: str, value: float) -> bool:
    """Whether an unreadable score line is the score restated as a percentage or on a scale of 10 ("80%", "8/10"
    beside 0.8): one score, written twice."""
    written = _RESTATED.match(line)
    if not written:
        return False
    return abs(_to_float(written[1]) / (100 if written[2] == "%" else 10) - value) <= _SAME_SCORE


def check_range(value: float, written: str) -> None:
    if not 0.0 <= value <= 1.0:  # App. D.2: "a continuous number in [0.00, 1.00]" - not clamped
        how = "" if written == "plain" else f" ({written})"
        raise VertParseError(f"overall score {value:g} outside [0, 1]{how}")


def read_bare_score(text: str) -> tuple[float, str]:
    """A fine-tuned VERT judge's answer (vert_ft): "0.7", "0,7", ".7", "Score: 0.7", "**0.70**"."""
    if not isinstance(text, str) or not text.strip():
        raise VertParseError("empty judge output")
    text = _spelled_in_digits(_answer_after_reasoning(text))
    if not text.strip():
        raise VertParseError("no answer after the <think> block")
    head = text.strip().split("\n", 1)[0]
    if _HEADER.match(head):
        return read_overall_score_with_form(text)
    if _GREEN_SECTION.search(text) or _GREEN_WORDS.search(text):
        # GREEN's analysis, which reads as a score only where it ends in VERT's score block (a whole VERT answer):
        # its first number is in the explanation or a count (review 21, H3: read as 1.0). Its words count too, where
        # its sections are not on lines of their own (review 39b: a small judge's "...anatomic location/position:
        # 1.\n(f) ... upper[Matched Findings]:" was read as 1.0)
        if _HEADER.search(text):
            return read_overall_score_with_form(text)
        raise VertParseError("the answer is GREEN's analysis (its sections for GREEN's error items and matched "
                              "findings), not a score")
    value, form = read_score_text(text.strip(), bare=True)  # the first line with a number; a later score is refused
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
