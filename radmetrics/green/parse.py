"""Reading a GREEN analysis as the judge meant it: pure functions over the judge's text.

On every output the official code reads correctly, the counts and the score equal the official
implementation's (Stanford-AIMI/GREEN green_score/green.py `clean_responses`, `parse_error_counts`,
`compute_green`; the same in jbdel/RadEval, radeval 2.2.1): "(a) ...: N." items, "(1)-(6)" markers when there
are no letters, a missing item counting 0, a section that starts with "No" counting 0, and
GREEN = matched / (matched + sum of significant errors), 0 when matched = 0 (GREEN paper, Sec. 3.2).
tests/fixtures/green_drift_cases.json (written by tests/fixtures/generate_green_cases.py, which runs the
official code) checks this case by case.

Where judges drift from the template, the official code silently returns a wrong number (a blank line between
items: only (a) is read; "1. x / 2. y / 3. z" as matched findings: 1; ...). This reader reads what the judge
meant instead, names every rule it needed in `GreenAnalysis.leniency` (see LENIENCY for the list and why), and
where no single reading exists (two different counts for one category, a count cut off at the end of the
output, a stated count that disagrees with the list under it) raises GreenParseError naming the line: the row
is unscored, never given a number.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from radmetrics.json_answer import AnswerError, without_reasoning
from radmetrics.taxonomy import GREEN_NAMES, LETTERS

# 12 (review 35): a [Matched Findings] text opening with a decimal ("0.5", "0.5 cm nodule ...") is no zero (was GREEN 0);
# an item letter given twice with the same count and other errors ("(b) ...: 1. x" and "(b) ...: 1. y") has no single
# reading (was 1); a numbered matched list ending the output at its next item's number ("1. x\n2.") is cut (the items
# before it were counted); an em dash, minus sign or other Unicode dash reads as "-" ("0 — none.": was unscored); a
# count read from a sentence is on one line with its words (a tally "Significant errors: 1\nMatched findings: 2" was
# unscored as "1 matched findings");
# 11: an error section ending the output out of order with all six items, or closed by its total, is whole; a count
# after a header on its line with no colon ("[Clinically Significant Errors] 0"); an analysis only inside a <think>
# block with nothing after it (review 31);
# 10: a closing or explanation sentence, or a dropped "**Matched Findings**:" section, that disagrees with the
# sections; matched findings numbered on one line; a total glued to an item (review 30c); 9: a "</think>" with no
# "<think>" ends drafting (json_answer.without_reasoning); 8: "__Header__:" and "_(b)_" read as the "**" forms;
# 7: items in any marker form split and continued; cut last sections; <think> (review 28)
PARSER_VERSION = "12"

SIGNIFICANT = "Clinically Significant Errors"
INSIGNIFICANT = "Clinically Insignificant Errors"
MATCHED = "Matched Findings"
CATEGORIES = (SIGNIFICANT, INSIGNIFICANT, MATCHED)
#: the six error categories (GREEN Sec. 3.1; upstream `self.sub_categories`), from radmetrics.taxonomy
SUB_CATEGORIES = GREEN_NAMES

#: Every rule by which this reader reads more than the official code, with the reason it is safe.
LENIENCY = {
    "reasoning-block": "a reasoning model's <think>...</think> block before the answer is not read (official: reads "
                       "the headers inside it unless an [Explanation]: follows)",
    "template-echo": "the prompt's template was repeated before the answer; the last filled analysis is read "
                     "(official: reads the template's placeholders as zero counts)",
    "header-form": "a section header without brackets or in Markdown (**Matched Findings**:, __...__:, ### ...)",
    "blank-line-in-section": "items continue after a blank line (official: stops at the first blank line, "
                             "so later items count 0)",
    "items-on-one-line": "several (a)-(f) items on one line (official: reads only the first)",
    "empty-section": "a header directly followed by the next header, read as none (official: reads the next "
                     "section's items as this one's)",
    "zero-section": "a whole section written as '0.', 'None.', 'No errors.', '(a)-(f): 0.'",
    "none-item": "one item written 'None.', 'N/A', 'No.'",
    "zero-sentence": "a sentence meaning zero ('There are no matched findings.')",
    "count-form": "a count written 'N -', 'N:', 'N (...)', 'N)', without its period, or in Markdown bold",
    "count-word": "a count written as a word ('two')",
    "count-after-sentence": "the count comes after an introducing sentence ('The matched findings are:')",
    "count-in-sentence": "the count is inside a sentence ('There are 2 matched findings')",
    "numbered-list": "matched findings as a numbered list 1..n, read as n (official: reads 1)",
    "enumerated-errors": "the errors of one item numbered 1..n, read as n (official: reads 1)",
    "item-marker-form": "an item marker written 'a)', 'a.', '(A)', '**(a)**' or '_(a)_' instead of '(a) '",
    "category-wording": "an item without its (a)-(f) marker, recognised by the category's wording",
}


class GreenParseError(ValueError):
    """Why an analysis cannot be scored; the message becomes the Judgment's reason."""


@dataclass
class SectionCounts:
    counts: dict[str, int]
    #: error explanations per letter ("<Error 1>; <Error 2>" split on ";")
    sentences: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class GreenAnalysis:
    significant: dict[str, int]
    insignificant: dict[str, int] | None
    matched_findings: int
    explanation: str
    significant_sentences: dict[str, list[str]]
    #: "official" when no leniency was needed, "tolerant" otherwise
    format: str
    #: names (keys of LENIENCY) of the rules this reading needed beyond the official code's, in order of use
    leniency: list[str] = field(default_factory=list)
    #: why the [Clinically Insignificant Errors] section has no single reading (insignificant is then None);
    #: GREEN itself does not use it, so the row keeps its GREEN score
    insignificant_unread: str | None = None

    @property
    def score(self) -> float:
        total = sum(self.significant.values())
        if self.matched_findings == 0:
            return 0.0
        return self.matched_findings / (self.matched_findings + total)


def clean_response(text: str) -> str:
    """Upstream `clean_responses`: keep what follows the last "<|assistant|>" and the "[Explanation]:"
    marker, drop "</s>" and "<unk>" (applied to the decoded model output before parsing)."""
    from radmetrics.green.official import official_clean

    return official_clean(text)


# -- headers and the analysis to read ----------------------------------------------------------------------
_NAMES = {
    "explanation": r"explanation",
    "significant": r"(?:clinically\s+)?significant\s+errors?",
    "insignificant": r"(?:clinically\s+)?insignificant\s+errors?",
    "matched": r"matched\s+findings?",
}
_KIND_NAME = {"significant": SIGNIFICANT, "insignificant": INSIGNIFICANT, "matched": MATCHED}
# A line form may give its count after the name with no colon ("[Clinically Significant Errors] 0", "### Matched
# Findings 2"): the header ends before the count, which opens the section as after "[Name]:" (review 31: no header,
# unscored). Only a whole count that ends the line, or is followed by "." or "errors"/"findings": "Matched findings
# 3 mm nodule" stays no header.
_COUNT_AFTER = r"(?=\**\d+\**[ \t]*(?:\.(?!\d)|(?:errors?|findings?)\b|\n|\Z))"
# The official form "[Name]:" anywhere; other forms only as a line of their own ("**Matched Findings**:",
# "### Matched findings", "Matched Findings:", "[Matched Findings]"), so that prose mentioning a category
# ("see the [Matched Findings] below") is no header.
_HEADER = re.compile(
    "|".join(
        rf"(?P<{kind}_b>\[\s*{name}\s*\]\s*:)"
        rf"|(?P<{kind}_l>^[ \t>#*\-]*(?:\[[ \t]*)?{name}(?:[ \t]*\])?[ \t]*(?:\*+[ \t]*)?(?::|(?=\n)|\Z|{_COUNT_AFTER})\**)"
        for kind, name in _NAMES.items()
    ),
    re.I | re.M,
)
# _HEADER defines what a header is; scanning every character with its 8 alternatives took half of GREEN's parse
# time. The same matches come from two scans: the bracket forms (one regex led by the literal "[") and the line
# forms tried only at line starts, merged as _HEADER's own scan would pick them (leftmost; at one position the
# alternative listed first in _HEADER; no overlaps). tests/test_green_parse.py checks they agree.
_KINDS = list(_NAMES)
_BRACKET = re.compile(r"\[\s*(?:" + "|".join(rf"(?P<{kind}>{name})" for kind, name in _NAMES.items())
                      + r")\s*\]\s*:", re.I)
# each blank loop stands alone (the same language as "[ \t>#*\-]*\**[ \t]*\[?[ \t]*" and "[ \t]*\]?[ \t]*\**[ \t]*"): those
# backtracked cubically over a line of blanks, 1,000 of which took 47 s (review 24, H6)
_LINE = re.compile(r"[ \t>#*\-]*(?:\[[ \t]*)?(?:" + "|".join(rf"(?P<{kind}>{name})" for kind, name in _NAMES.items())
                   + r")(?:[ \t]*\])?[ \t]*(?:\*+[ \t]*)?(?::|(?=\n)|\Z|" + _COUNT_AFTER + r")\**", re.I)
_TEMPLATE = re.compile(r"<\s*(?:the\s+number\s+of\s+(?:errors|matched\s+findings)|error\s+type)\s*>", re.I)


@dataclass(frozen=True)
class _Header:
    kind: str
    start: int
    end: int
    official: bool  # written exactly "[Name]:" as the template asks
    line_form: bool = False  # a line of its own ("Matched Findings:", "**Explanation**"), not "[Name]:"


@functools.lru_cache(maxsize=16)
def _header_scan(text: str) -> tuple[_Header, ...]:
    """_headers, remembered for the few texts a parse scans more than once (the analysis, its prose counts)."""
    return tuple(_headers(text))


def _headers(text: str) -> list[_Header]:
    found = []  # (start, rank in _HEADER's alternatives, end, kind, form)
    for m in _BRACKET.finditer(text):
        found.append((m.start(), 2 * _KINDS.index(m.lastgroup), m.end(), m.lastgroup, "b"))
    line_start = 0
    while line_start <= len(text):
        m = _LINE.match(text, line_start)
        if m:
            found.append((m.start(), 2 * _KINDS.index(m.lastgroup) + 1, m.end(), m.lastgroup, "l"))
        newline = text.find("\n", line_start)
        if newline < 0:
            break
        line_start = newline + 1
    out, taken_to = [], 0
    for start, _, end, kind, form in sorted(found):
        if start < taken_to:  # inside a header already taken
            continue
        # "    [Matched Findings]:" (indented) is the template's header too, found by the line form first
        exact = text[start:end].strip(" \t").startswith(f"[{_KIND_NAME.get(kind, 'Explanation')}]:")
        out.append(_Header(kind, start, end, exact, form == "l" and not exact))
        taken_to = end
    return out


def _analysis_headers(text: str) -> list[_Header]:
    """The headers an analysis is read by. "Explanation: ..." as a line of its own starts an analysis only where
    the next header is its significant errors; inside a section ("(a) ...: 1.\n  Explanation: not in the
    reference.") it is the judge's note, and taken for a header it cut the section there (1.0 for an answer with
    an error)."""
    out = _prose_headers_dropped(text, list(_header_scan(text)))
    return [h for i, h in enumerate(out) if not (h.kind == "explanation" and h.line_form and not (
        i + 1 < len(out) and out[i + 1].kind == "significant"))]


def _prose_headers_dropped(text: str, headers: list[_Header]) -> list[_Header]:
    """Where the answer has the template's "[Matched Findings]:", a line of the explanation that starts with the
    same words ("Matched findings: cardiomegaly, clear lungs.", "Significant errors: the effusion is missed.")
    is the judge's prose, not a second section (it was read as one: the row unscored where upstream reads it)."""
    exact = {h.kind for h in headers if h.official}
    kept = [h for h in headers if not (h.line_form and h.kind in exact and "[" not in text[h.start:h.end])]
    # a bare "Matched Findings" line (no colon) with nothing under it before the next header is a word in the
    # explanation, not an empty section (it was read as 0 matched findings: GREEN 0)
    return [h for i, h in enumerate(kept) if not (
        h.line_form and ":" not in text[h.start:h.end] and i + 1 < len(kept)
        and not text[h.end:kept[i + 1].start].strip())]


def _prose_counts(text: str, headers: list[_Header]) -> list[tuple[str, int, str]]:
    """Counts stated on the prose lines _prose_headers_dropped drops ("Matched findings: 3."): (kind, count,
    line), to be checked against the sections."""
    kept = {(h.start, h.kind) for h in headers}
    out = []
    for h in _header_scan(text):
        if h.line_form and (h.start, h.kind) not in kept and h.kind in _KIND_NAME:
            line = text[h.start:].split("\n", 1)[0]
            count = re.match(rf"[ \t*]*(\d+|{_WORD})\**[ \t]*(?:[.(]|(?:errors?|findings?)\b|$)", text[h.end:].split("\n", 1)[0],
                             re.I)
            if count:
                out.append((h.kind, _word_or_digits(count.group(1)), line.strip()))
    return out


def _check_shadowed_sections(text: str, headers: list[_Header], significant: dict[str, int], matched: int) -> None:
    """A line-form section ("**Matched Findings**:\n3. ...") beside the template's "[Matched Findings]:" is dropped
    as prose (_prose_headers_dropped); where it reads as a section of its own with other counts, the output has two
    answers (review 30c: the template's was scored, whichever the judge meant)."""
    kept = {(h.start, h.kind) for h in headers}
    scan = _header_scan(text)
    for i, h in enumerate(scan):
        if not h.line_form or (h.start, h.kind) in kept or h.kind not in ("significant", "matched"):
            continue
        body = text[h.end:scan[i + 1].start if i + 1 < len(scan) else len(text)]
        first, _, _ = _paragraphs(body, _CONTINUES_LIST if h.kind == "matched" else _CONTINUES_ITEMS)
        if not first.strip():  # a bare "Matched Findings" line in the explanation: a word, no section
            continue
        try:  # prose ("Matched findings: heart size, lungs.") reads as no section: it says no other count
            other = read_matched_findings(first) if h.kind == "matched" else read_error_section(
                first, _KIND_NAME[h.kind]).counts
        except GreenParseError as e:
            # a section that gives counts this reader cannot read ("Five. 5 mm nodule; ...", "(b) ...: 1-2.") may
            # say others than the template's section: no single reading (review 30c: the template's was scored)
            opens_with_count = re.match(rf"[\W_]*(?:\d|(?:{_WORD})\b)", first.strip(), re.I)
            if (opens_with_count if h.kind == "matched" else _LABELLED_COUNT.search(first)):
                raise GreenParseError(f"two [{_KIND_NAME[h.kind]}] sections, {text[h.start:h.end].strip()!r} "
                                      f"unreadable ({e})") from None
            continue
        if other != (matched if h.kind == "matched" else significant):
            raise GreenParseError(f"two [{_KIND_NAME[h.kind]}] sections with different counts: "
                                  f"{text[h.start:h.end].strip()!r} reads otherwise")


def _check_stated_counts(text: str, headers: list[_Header], sums: dict[str, int | None]) -> None:
    """A sentence in the explanation or after the last section ("The candidate shares 3 matched findings.", "In
    summary, 2 clinically significant errors and 3 matched findings.") that states other counts than the sections:
    no single reading (review 30c: such sentences were not read and the sections' numbers were scored)."""
    sections = [h for h in headers if h.kind in _KIND_NAME]
    if not sections:
        return
    last = sections[-1]
    continues = _CONTINUES_LIST if last.kind == "matched" else _CONTINUES_ITEMS
    kept, _, dropped = _paragraphs(text[last.end:], continues)
    # the last section's own lines after its first, other than items or list lines: a closing line with no blank
    # line before it
    closing = [line for line in kept.splitlines()[1:] if line.strip() and not continues.match(line.strip())
               and not _ITEM_START.match(line.strip()) and not _NUMBERED_LINE.match(line.strip())]
    explanation_end = [h.end for h in headers if h.kind == "explanation" and h.start < sections[0].start]
    explanation = text[explanation_end[-1] if explanation_end else 0:sections[0].start]
    where = {"the explanation": explanation, "the text after the analysis": "\n".join(closing + dropped)}
    significant = re.compile(_STATED_SIGNIFICANT, re.I)
    for place, prose in where.items():
        for kind, pattern in (("matched", _SENTENCE_COUNT), ("significant", significant)):
            for m in pattern.finditer(prose):
                if kind == "significant" and _PART_OF_COUNT.match(prose[m.end():]):
                    continue
                if _word_or_digits(m.group(1)) != sums[kind]:
                    raise GreenParseError(f"[{_KIND_NAME[kind]}] counts {sums[kind]} but {place} says "
                                          f"{m.group(0)!r}")


def _strip_chat(text: str) -> str:
    # As upstream: the answer follows the last "<|assistant|>"; "</s>" and "<unk>" are decoding debris.
    if "<|assistant|>" in text:
        text = text.split("<|assistant|>")[-1]
    return text.replace("</s>", "").replace("<unk>", "")


def _choose_analysis(text: str, leniency: list[str]) -> tuple[str, list[_Header]]:
    """The last filled analysis: outputs that repeat the prompt's template first are read at the answer."""
    headers = _analysis_headers(text)
    starts = [h for h in headers if h.kind == "explanation"] or [h for h in headers if h.kind == "significant"]
    if len(starts) <= 1:
        return text, headers
    bounds = [0] + [h.start for h in starts[1:]] + [len(text)]
    segments = [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    with_sections = [i for i, s in enumerate(segments)
                     if any(h.kind in _KIND_NAME for h in _analysis_headers(s))]
    filled = [i for i in with_sections if not _TEMPLATE.search(segments[i])]
    if not filled:
        if with_sections:
            raise GreenParseError("the output only repeats the template's placeholders, with no filled analysis")
        return text, headers
    chosen = filled[-1]
    if len(filled) > 1:
        _check_repeated_analysis(segments[filled[-2]], segments[chosen])
    if any(_TEMPLATE.search(segments[i]) for i in with_sections if i != chosen):
        leniency.append("template-echo")
    return segments[chosen], _analysis_headers(segments[chosen])


_REVISION = re.compile(r"\b(?:correct\w*|revis\w*|re-?check\w*|re-?evaluat\w*|re-?assess\w*|re-?examin\w*|"
                       r"actually|wait|mistake|update\w*|final|instead|on second thought|let me)\b", re.I)


def _check_repeated_analysis(earlier: str, last: str) -> None:
    """Two complete analyses: the last is read (as upstream) when they agree or when the judge says it revises
    the first ("Corrected analysis:", "Let me re-check."); two that disagree with nothing between them have no
    single reading (upstream silently reads the last)."""
    try:
        second = parse_green(last)
    except GreenParseError:
        return  # the last one is read after this and says why it cannot be
    try:
        first = parse_green(earlier)
    except GreenParseError as e:
        if not {"significant", "matched"} <= {h.kind for h in _analysis_headers(earlier)}:
            return  # the earlier one is incomplete: not a second answer
        # a complete earlier analysis this reader cannot read may say other counts (review 30c: the last was
        # scored whatever the first said)
        if not _says_revised(earlier):
            raise GreenParseError(f"two complete analyses, the first unreadable ({e}), and nothing saying which one "
                                  "is meant") from None
        return
    if (first.significant, first.matched_findings) == (second.significant, second.matched_findings):
        return
    if not _says_revised(earlier):
        raise GreenParseError("two complete analyses with different counts and nothing saying which one is meant")


def _says_revised(earlier: str) -> bool:
    """Whether what follows the earlier analysis's last section (its paragraphs after the section's own text) says
    the judge revises it ("Corrected analysis:", "Let me re-check.")."""
    headers = _analysis_headers(earlier)
    body = earlier[headers[-1].end:] if headers else ""
    continues = _CONTINUES_LIST if headers and headers[-1].kind == "matched" else _CONTINUES_ITEMS
    tail = " ".join(p for p in re.split(r"\n[ \t]*\n", body.strip())[1:] if not continues.match(p.strip()))
    return bool(_REVISION.search(tail))


def _sections(text: str, headers: list[_Header], kind: str) -> list[tuple[str, _Header, bool]]:
    """Every section of a kind: (body up to the next header, header, is the last thing in the output)."""
    out = []
    for i, h in enumerate(headers):
        if h.kind != kind:
            continue
        end = headers[i + 1].start if i + 1 < len(headers) else len(text)
        out.append((text[h.end:end], h, i + 1 == len(headers)))
    return out


def _paragraphs(body: str, continues: re.Pattern[str]) -> tuple[str, bool, list[str]]:
    """The section's text: its first paragraph, plus later paragraphs that go on with items or a list
    (official: the first paragraph only). Returns (text, a later paragraph was kept, the paragraphs dropped)."""
    parts = re.split(r"\n[ \t]*\n", body.strip())
    kept = [parts[0]]
    for part in parts[1:]:
        if not continues.match(part.strip()):
            break
        kept.append(part)
    return "\n".join(kept), len(kept) > 1, parts[len(kept):]


# -- counts --------------------------------------------------------------------------------------------------
_WORDS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
          "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
_WORD = "|".join(_WORDS)
#: a none-word standing alone ("None.", "No errors.", "N/A"); "No mention of the effusion: 1." is a count of 1
_NONE_ITEM = re.compile(r"(?:none|no(?:\s+errors?)?|nil|n/?a|not applicable|nothing)\s*(?:[.;,!]|[-–](?:\s|$)|$)", re.I)
#: a whole section that says it has nothing: "0.", "None.", "No errors.", "(a)-(f): 0.", "N/A"
#: an item's sentence meaning zero ("There are no such errors.", "No errors found."): the official code reads the
#: missing count as 0, rightly; it was unscored (review 28)
_NONE_SENTENCE = re.compile(r"(?:there (?:are|is|were) no\b|no (?:such |other |additional )?(?:errors?|mistakes?|"
                            r"discrepanc\w*)\b|none (?:found|identified|noted|present|seen)\b)[^\d\n]*$", re.I)
_ZERO_SECTION = re.compile(
    r"^[\W_]*(?:0\b|zero\b|none\b|nil\b|n/?a\b|not applicable|nothing\b|no\b|there (?:are|were|is) no\b"
    r"|\(?a\)?\s*(?:-|–|to|through)\s*\(?f\)?\s*:\s*(?:0|none|zero)\b"
    r"|all(?: six)?(?: categories| items)?\s*:\s*(?:0|none|zero)\b)", re.I)
_RANGE_ZERO = re.compile(r"^[\W_]*\(?a\)?\s*(?:-|–|to|through)\s*\(?f\)?\s*:\s*(?:0|none|zero)\b\.?\s*$", re.I)
#: a [Matched Findings] text meaning zero; unlike errors, "No pneumothorax." is a finding, not zero; nor is "0.5" or
#: "0.5 cm nodule in the right upper lobe." (a decimal, or a finding listed without its count: read as 0 matched, GREEN 0)
_ZERO_MATCHED = re.compile(
    r"^[\W_]*(?:0(?![.,]\d)\b|zero\b|none\b|nil\b|n/?a\b|nothing\b"
    r"|(?:there (?:are|were|is) )?no (?:matched|matching|common|shared) findings?\b"
    r"|(?:there (?:are|were|is) )?no (?:findings? )?(?:match|matches|matched|in common)\b"
    r"|no findings? (?:are|were|is) (?:matched|shared|common|in common)\b"
    r"|(?:the )?(?:candidate(?: report)?|reports?) (?:does not|do not|doesn't|don't) (?:match|share) any\b"
    r"|none of the findings\b)", re.I)
# a count and its words on one line ([ \t], not \s): in a tally "Significant errors: 1\nMatched findings: 2" the "1" is no
# "1 matched findings" (review 35: unscored, where the official code reads the answer)
_SENTENCE_COUNT = re.compile(
    rf"\b(\d+|{_WORD})[ \t]+(?:matched[ \t]+findings?|matching[ \t]+findings?|matches|findings?[ \t]+(?:that[ \t]+)?"
    rf"(?:match|matched|are[ \t]+matched|were[ \t]+matched|in[ \t]+common))\b", re.I)
#: "2 clinically significant errors", not "1 significant error in the location" (a part of the count)
_STATED_SIGNIFICANT = rf"\b(\d+|{_WORD})[ \t]+(?:clinically[ \t]+)?significant[ \t]+(?:errors?|mistakes?)\b"
_PART_OF_COUNT = re.compile(r"\s*(?:\(|(?:of|in|for|regarding|related|concerning|involving|about|due|from|with|"
                            r"each|per|among|within|at|on|as)\b)", re.I)


#: words that take something back from "none" / "no matched findings"
_EXCEPT = re.compile(r"\b(?:except|apart from|other than|besides|aside from|but|however|save for|misses|missing)\b",
                     re.I)


def _word_or_digits(token: str) -> int:
    return int(token) if token[0].isdigit() else _WORDS[token.lower()]


# "1." / "1 -" / "1:" / "1)" / "(1)" / "1 (" at the start of a line or after ";"; "1.5" and a time such as
# "3:05" are no markers (a finding may start with a number: "2. 3:05 pm film; 3 mm nodule")
_LIST_MARK = r"\**(?:\.(?!\d)|\)|:(?!\d)|\s+[-–]\s|\s+\()"
_ENUM = r"\(?(\d+)\)?" + _LIST_MARK
#: a line stating a total ("Total: 3", "Total clinically significant errors: 3.")
_TOTAL = re.compile(r"[\W_]*total\b[^:\n]*:\s*\**(\d+)\b", re.I)


#: after a count, what makes it no single count: a range or alternative ("1-2", "1 or 2", "1/2", "1, 2", "1 of 2",
#: "1 (possibly 2)") or a hedge ("1?", "2+")
_RANGE_AFTER = re.compile(rf"\s*(?:(?:-|–|/|,|\bor\b|\bto\b|\band\b|\bof\b|\bout of\b|\(\s*(?:or|possibly|maybe|perhaps|up to)\b"
                          rf"|\bmaybe\b|\bpossibly\b|\()\s*(?:\d|(?:{_WORD})\b)|[?+])", re.I)
#: what may follow a count: the end, the template's ".", ":", ";", ",", "(", ")", "*", a spaced dash, "errors", or
#: a capitalised error text ("1 Small left effusion"); not a lower-case word or a unit ("3 cm mass", "12 rib
#: fractures", "Two-sided effusion", "Two small nodules"), which is the finding itself, its count not given
_COUNT_END = re.compile(r"\s*(?:$|[.:;,()*]|[-–](?:\s|$)|(?i:errors?|mistakes?|findings?)\b)|\s+(?=[A-Z])")


def _check_one_count(text: str, after: str, where: str) -> None:
    """A count (digits or a word) that opens ``text`` is one count of errors only if ``after`` it comes no range
    or hedge ("1-2", "1 or 2", "1?") and no more of the finding itself ("3 cm mass", "Two-sided effusion")."""
    if _RANGE_AFTER.match(after):
        raise GreenParseError(f"{where}: {text[:20].strip()!r} is not one count")
    if not _COUNT_END.match(after):
        raise GreenParseError(f"{where}: {text[:30].strip()!r} starts with a number that is not a count")


def _same_style_numbers(first_marker: str, text: str) -> list[int]:
    """The list numbers in ``text`` written like ``first_marker`` ("1)", "(1)", "1."), after a space or comma."""
    if first_marker.startswith("("):
        pattern = r"(?<=[\s,])\((\d+)\)"
    elif first_marker.endswith(")"):
        pattern = r"(?<=[\s,])(\d+)\)"
    elif first_marker.endswith("."):
        pattern = r"(?<=[\s,])(\d+)\.(?!\d)"
    else:
        return []
    return [int(n) for n in re.findall(pattern, text)]


def _read_count(rest: str, where: str, at_end: bool, official_value: int | None,
                leniency: list[str]) -> int:
    """The count that opens an item's text (after its label): "2.", "2 -", "two", "None.", "1. x; 2. y"."""
    r = rest.lstrip(" \t*_`")
    if not r.strip():
        if official_value is not None:
            return official_value
        raise GreenParseError(f"{where} has no count" + (" (cut off?)" if at_end else ""))
    digits = re.match(r"\d+", r)
    if digits:
        after = r[digits.end():]
        if re.match(r"\.0+(?![\d.,]\d)", after):  # "1.0." is the whole number 1, as upstream reads it
            after = re.sub(r"^\.0+", "", after)
        if re.match(r"[.,]\d", after):
            raise GreenParseError(f"{where}: count {r.split()[0]!r} is not a whole number")
        if re.match(r"\w", after):
            raise GreenParseError(f"{where}: {r.split()[0]!r} is not a count")
        _check_one_count(r, after, where)
        if not after.strip() and at_end:
            raise GreenParseError(f"{where}: the count {digits.group(0)} ends the output (cut off?)")
        value = int(digits.group(0))
        # the count's own marker ("2." / "2)") off, then the errors' numbers: "2. 1. x; 2. y" lists 1..2
        errors = re.sub(r"^\**(?:\.(?!\d)|\))?\s*", "", after)
        first_error = re.match(rf"\s*{_ENUM}", errors)  # a list starts at 1; "1. (2) left effusion" is one error
        listed = [value] + ([1] if first_error and first_error.group(1) == "1" else []) \
            + [int(n) for n in re.findall(rf";\s*{_ENUM}", errors)]
        if first_error and first_error.group(1) == "1" and len(listed) == 2:
            # "2. 1) x 2) y", "2. (1) x (2) y", "2. 1. x, 2. y": later numbers marked as the first one is
            listed += _same_style_numbers(first_error.group(0).strip(), errors[first_error.end():])
        if len(listed) >= 2:
            # a list marks its numbers ("1. x; 2. y"); "1; 2." is two counts
            if listed == list(range(1, len(listed) + 1)) and re.match(_LIST_MARK, after):
                leniency.append("enumerated-errors")
                return len(listed)
            if listed[1:] != list(range(1, value + 1)):
                raise GreenParseError(f"{where}: numbers {', '.join(map(str, listed))} are neither one count "
                                      f"nor a list 1..n")
        if not re.match(r" \d+\.", rest):  # upstream reads only ": N."
            leniency.append("count-form")
        return value
    if re.match(r"-\s*\d", r):
        raise GreenParseError(f"{where}: negative count {r.split()[0]!r}")
    word = re.match(rf"({_WORD})\b", r, re.I)
    if word:
        _check_one_count(r, r[word.end():], where)
        leniency.append("count-word")
        return _WORDS[word.group(1).lower()]
    if _NONE_ITEM.match(r) and re.search(r"\b(?:except|apart from|other than|besides|aside from|but|however|save "
                                         r"for)\b", re.split(r"[.!](?:\s|$)", r, maxsplit=1)[0], re.I):
        # "None, but the effusion is missed.": none and then an error in one sentence (review 30c: read as 0)
        raise GreenParseError(f"{where} says none and then names an error: {r[:60].strip()!r}")
    if _NONE_ITEM.match(r) or (_NONE_SENTENCE.match(r) and not _EXCEPT.search(r)
                               and not re.search(rf"\d|\b(?:{_WORD})\b", r, re.I)):
        leniency.append("none-item")
        return 0
    if official_value is not None:  # e.g. "(b) Missing ...: see below: 2. x" - read as upstream does
        return official_value
    raise GreenParseError(f"{where} has no readable count")


# -- error sections ------------------------------------------------------------------------------------------
_WORDING = {letter: re.escape(text.split(" ", 3)[0] + " " + text.split(" ", 3)[1] + " " + text.split(" ", 3)[2])
            for letter, text in SUB_CATEGORIES.items()}  # "False report of", "Missing a finding", ...
_BY_WORDING = re.compile(r"^[ \t>*\-•]*\**\s*(?:" + "|".join(f"(?P<{k}>{v})" for k, v in _WORDING.items()) + ")",
                         re.I)
# "(a) " as upstream; tolerant: "a)", "a.", "(A)", "**(a)**" at the start of a line
_OFFICIAL_MARK = re.compile(r"\(([a-f])\) ")
_LOOSE_MARK = re.compile(r"^[ \t>*\-•]*\**\s*\(?([a-fA-F])[.)]\**\s*\**(?=\s*\S)")
#: "[a] ..." and "( a ) ...": the letter is plain, only the brackets drift
_BRACKETED_MARK = re.compile(r"^[ \t>*\-•]*\**\s*(?:\[\s*([a-fA-F])\s*\]|\(\s+([a-fA-F])\s*\)|\(\s*([a-fA-F])\s+\))\**:?\s*\**"
                             r"(?=\s*\S)")
#: a line that reads like an item ("label: count") with a marker that is no (a)-(f): "(а)" in Cyrillic, "1. False
#: report of ...: 1.", "<a> ..."; its count belongs to no category, and dropping it would count that category 0
_CATEGORY_WORD = (r"(?=[^:\n]*\b(?:false|miss\w*|omit\w*|omission|comparison|locat\w*|position|severity|misidentif\w*|"
                  r"misassess\w*|report\w*|hallucinat\w*|fabricat\w*|incorrect\w*|wrong\w*|errors?|mistakes?)\b)")
_OTHER_MARK = re.compile(r"^[ \t>*\-•]*\**\s*(?:[\[(<{]\s*\S{1,2}\s*[\])>}]|\d\s*[.)]|\S[.)])\**\s*" + _CATEGORY_WORD
                         + r"[^:\n]{3,120}:\s*\**\s*(?:\d|none\b|zero\b)", re.I)
#: "label: count." on a line of its own at the margin whose label reads like a category's, reworded ("False finding
#: reported: 1."); "Size of effusion: 2." is a detail
_BARE_COUNT_LINE = re.compile(r"^" + _CATEGORY_WORD + r"[A-Za-z*][^:\n]{3,120}:\s*\**\s*\d+\**"
                              r"(?:\.(?:\s|$)|\s*$|\s*\(|\s+(?:errors?|findings?|mistakes?)\b)", re.I)
_NUMBER_MARK = re.compile(r"\(([1-6])\) ")
_LATER_LOOSE_MARK = re.compile(r"(?<=\s)[-•*]*\s*\**\(?([a-fA-F])[.)]\**[ \t]*\**")
#: a "(1)-(6)" item that gives a count ("(3) Misidentification ...: 1."), not an error's own number "(1) x"
_COUNTED_NUMBER_ITEM = re.compile(r"^[ \t>*\-•]*\**\s*\([1-6]\) [^:\n]{3,120}:\s*\**\s*(?:\d|none\b|zero\b|n/?a\b)", re.I)
#: an item's marker in any form read above: "(a)", "( a )", "[a]", "a)", "a.", "(a).", "**b)**", "(1)"
_ANY_MARK = r"(?:\(\s*[a-fA-F1-6]\s*\)\.?|\[\s*[a-fA-F1-6]\s*\]|(?<!\w)[a-fA-F1-6][.)])"
#: where a paragraph goes on with items: a marker in any form, or a category's wording after one or none ("[b] ..."
#: after a blank line ended the section: its items counted 0, review 28)
_ITEM_START = re.compile(r"^[ \t>*\-•]*\**\s*(?:\(\s*[a-fA-F1-6]\s*\)|\[\s*[a-fA-F1-6]\s*\]|[a-fA-F][.)]\**\s)"
                         r"|^[ \t>*\-•]*\**\s*(?:" + _ANY_MARK + r"\**\s*)?\**\s*(?:"
                         + "|".join(_WORDING.values()) + ")", re.I)
#: a category's wording with a count after its colon ("Missing a finding present in the reference: 2."): where a line
#: holds two or more, each starts an item, whatever its marker
_LABELLED_COUNT = re.compile(r"(?:" + "|".join(_WORDING.values()) + r")[^:\n]{0,120}?:\s*[*_]*\s*(?:\d|none\b|zero\b"
                             r"|no\b|n/?a\b|(?:" + _WORD + r")\b)", re.I)
_MARK_BEFORE = re.compile(r"[-*•]?\s*\**\s*" + _ANY_MARK + r"?\**\s*\Z")


def _split_labelled(line: str) -> list[str]:
    """A line holding several labelled counts ("[a] False report ...: 0.  [b] Missing a finding ...: 2. x; y"), cut
    before each later one's marker; a line with one is returned whole. Review 28: only the template's "(a) " and
    loose "a)" markers were split, so "[b]", "(2)", "(b)." or unmarked items later on a line were dropped (0)."""
    starts = [m.start() for m in _LABELLED_COUNT.finditer(line)]
    if len(starts) < 2:
        return [line]
    cuts = [0]
    for start in starts[1:]:
        cut = cuts[-1] + _MARK_BEFORE.search(line[cuts[-1]:start]).start()
        if cut > cuts[-1] and line[cuts[-1]:cut].strip():
            cuts.append(cut)
    return [line[a:b] for a, b in zip(cuts, cuts[1:] + [len(line)], strict=True)]


@dataclass
class _Item:
    key: str  # letter a-f, or digit 1-6 for "(1)-(6)" markers
    text: str  # from the marker to the end of the item
    leniency: str | None
    #: the line held several items, cut by _split_labelled
    split: bool = False


def _loose_items(line: str, first: re.Match[str]) -> list[_Item]:
    """A line of loose-marker items ("- **(a)** False report ...: 1. x - **(b)** Missing ...: 0."): split where a
    later marker, of a later letter, is followed by its category's wording or directly by ": count" (the first
    item's text had swallowed the others: their counts were lost)."""
    cuts = [(first.group(1).lower(), first.end(), first.end())]
    for m in _LATER_LOOSE_MARK.finditer(line, first.end()):
        letter = m.group(1).lower()
        if letter > cuts[-1][0] and re.match(r"\s*(?::|" + _WORDING[letter] + ")", line[m.end():], re.I):
            cuts.append((letter, m.start(), m.end()))
    form = "item-marker-form"
    return [_Item(letter, line[text_start:cuts[i + 1][1] if i + 1 < len(cuts) else len(line)], form)
            for i, (letter, _, text_start) in enumerate(cuts)]


def _items(section: str) -> list[_Item]:
    """The (a)-(f) items of a section; several on one line are split at their markers. A line that reads like an
    item but whose marker or wording is none of them is no single reading (its count would be lost)."""
    items: list[_Item] = []
    others: list[str] = []  # lines that gave no item
    splits = [_split_labelled(raw) for raw in section.splitlines()]
    pieces = [(piece, len(split) > 1) for split in splits for piece in split]
    for line, was_split in pieces:
        before = len(items)
        _line_items(line, items, others)
        for item in items[before:]:
            item.split = was_split
    lines = [piece for piece, _ in pieces]
    _check_unread_items(others, items)
    if any(i.leniency in (None, "items-on-one-line") for i in items):
        # beside the template's "(a) " items, a loose "c) ..." / "A. ..." line is one item's detail ("c) Effusion:
        # 2 (moderate) vs 1 (small)"), not another category, unless it names its category's wording or gives its
        # count straight after the marker ("(b): 1.")
        items = [i for i in items if i.leniency != "item-marker-form"
                 or re.match(r"\s*(?::|" + _WORDING[i.key] + ")", i.text, re.I)]
    if any(i.leniency != "category-wording" for i in items):
        # beside marked items, a line that opens with a category's wording is a comment ("Missing a finding
        # present in the reference is the main error.") unless a count follows its colon
        items = [i for i in items if i.leniency != "category-wording" or re.match(
            r"[^:\n]*?(?::|\s[-–=])\s*\**\s*(?:\d|none\b|zero\b|n/?a\b|no\b|(?:" + _WORD + r")\b)", i.text, re.I)]
    if any(i.key in LETTERS for i in items) and any(_COUNTED_NUMBER_ITEM.match(line) for line in lines):
        raise GreenParseError("items are marked both (a)-(f) and (1)-(6), each with counts: no single reading")
    if not any(i.key in LETTERS for i in items):
        numbered = []
        for line, was_split in pieces:
            numbered += [_Item(m.group(1), line[m.start():], None, was_split)
                         for m in _NUMBER_MARK.finditer(line)][:1]
        if numbered:
            return numbered
    return [i for i in items if i.key in LETTERS]


def _line_items(line: str, items: list[_Item], others: list[str]) -> None:
    """The items of one line, appended to ``items``; a line that gives none goes to ``others``."""
    marks = [m for m in _OFFICIAL_MARK.finditer(line)
             if m.start() == 0 or line[m.start() - 1] in " \t*->•"]
    # a marker later in the line starts another item only if an item's "label: count" follows it; so does a
    # first marker inside a sentence ("Note: (a) could also apply." is no item)
    labelled = [m for m in marks if re.match(r"\([a-f]\) [^:\n]{3,120}:", line[m.start():])]
    at_start = marks and re.fullmatch(r"[ \t>*\-•]*\**\s*", line[:marks[0].start()])
    cuts = [marks[0]] + [m for m in labelled if m is not marks[0]] if at_start else labelled
    if cuts:
        for i, m in enumerate(cuts):
            end = cuts[i + 1].start() if i + 1 < len(cuts) else len(line)
            items.append(_Item(m.group(1), line[m.start():end], "items-on-one-line" if len(cuts) > 1 else None))
        return
    if marks:
        return
    loose = _LOOSE_MARK.match(line)
    if loose:
        items += _loose_items(line, loose)
        return
    bracketed = _BRACKETED_MARK.match(line)
    if bracketed:
        letter = next(g for g in bracketed.groups() if g).lower()
        items.append(_Item(letter, line[bracketed.end():], "item-marker-form"))
        return
    worded = _BY_WORDING.match(line)
    if worded:
        items.append(_Item(worded.lastgroup or "", line[worded.start(worded.lastgroup):], "category-wording"))
        return
    others.append(line)


def _check_unread_items(lines: list[str], items: list[_Item]) -> None:
    """When a category has no item: raise for a line that gave none but reads like one, with a count above 0 in
    GREEN's form: a marker that is no (a)-(f) or (1)-(6) in front of "label: count", a category's wording with a
    count after it, or "label: count." alone at the margin. Review 15: "[a] False report ...: 1." was dropped and
    (a) counted 0. With every category read, such a line is a detail (review 16), as the official code reads it."""
    letters = {i.key for i in items}
    if set(LETTERS) <= letters:
        return  # every category has its item: another "label: number" line is a detail ("1. Nodule size: 8 mm")
    for line in lines:
        # a count as GREEN's items give it (": 1.", ": 1", ": 1 (effusion)", ": 2 errors"), not "8 mm" or "10:30"
        count = re.search(r":\s*\**\s*(\d+)\**\s*(?:\.(?!\d)|$|\(|[-–;,]|(?:errors?|findings?|mistakes?)\b)", line,
                          re.I)
        if not count or not int(count.group(1)):
            continue  # a line that counts nothing loses nothing: "All categories: 0."
        wording = next((k for k, w in _WORDING.items() if re.search(w + r"[^:\n]*:\s*\**\s*\d", line, re.I)), None)
        if _COUNTED_NUMBER_ITEM.match(line):
            continue  # "(3) Misidentification ...: 1.": the (1)-(6) form, read by the caller
        if _OTHER_MARK.match(line) or wording or (_BARE_COUNT_LINE.match(line) and not _TOTAL.match(line)):
            raise GreenParseError(f"line {line.strip()[:80]!r} reads like an item with a count, but not as one of "
                                  "(a)-(f): which category it counts is unknown")


def _error_sentences(line: str) -> list[str]:
    # Upstream `parse_error_sentences`: text after the last ":" and the count's ".", split on ";".
    parts = line.rsplit(":", 1)[-1].split(".", 1)[-1].split(";")
    return [p.strip() for p in parts if p.strip()]


def read_error_section(section: str, name: str, at_end: bool = False,
                       leniency: list[str] | None = None, ends_output: bool = False) -> SectionCounts:
    """Counts (a)-(f) of one error section. Raises GreenParseError where no single reading exists. ``at_end``: the
    section's text ends the output (not even a newline after it); ``ends_output``: nothing but blanks follows it."""
    leniency = [] if leniency is None else leniency
    counts = dict.fromkeys(LETTERS, 0)
    sentences: dict[str, list[str]] = {letter: [] for letter in LETTERS}
    text = section.strip()
    if not text:
        if at_end:
            raise GreenParseError(f"[{name}] is empty at the end of the output (cut off?)")
        leniency.append("empty-section")
        return SectionCounts(counts, sentences)
    if _RANGE_ZERO.match(text):  # "(a)-(f): 0." is no item (a)
        leniency.append("zero-section")
        return SectionCounts(counts, sentences)
    zero_range = re.match(r"[\W_]*\(?([a-f])\)?\s*(?:-|–|to|through)\s*\(?([a-f])\)?\s*:\s*(?:0|none|zero)\b\.?[ \t]*\n",
                          text, re.I)
    if zero_range:
        # "(a)-(e): 0." then "(f) Omitting ...: 1." on lines of their own: the range is zero, the items count
        low, high = zero_range.group(1).lower(), zero_range.group(2).lower()
        later = _items(text[zero_range.end():])
        if later and all(not low <= i.key <= high for i in later):
            leniency.append("zero-section")
            text = text[zero_range.end():].strip()
    if re.match(r"[\W_]*\(?[a-f]\)?\s*(?:-|–|to|through)\s*\(?[a-f]\)?", text, re.I):
        # "(a)-(e): 0. (f): 1.", "(a) to (f): 0, but 1 missed effusion": a range of categories, then others
        raise GreenParseError(f"[{name}] gives a range of categories and other counts: {text[:80]!r}")
    # "[Clinically Significant Errors]: 3 a) False report ...: 2.": the judge's total glued to a first item in another
    # marker form than "(a) " hid that item (review 30c: "3 a. False report: 2 errors." counted (a) as 0)
    glued = re.match(r"\**[ \t]*(\d+)\**[ \t]*(?:errors?)?[ \t]*(?=(?:[-*•][ \t]*)?\**[ \t]*" + _ANY_MARK
                     + r"[ \t*]*[A-Za-z])", text, re.I)
    if glued and not re.match(r"\([a-f]\) ", text[glued.end():]):
        text = text[glued.end():]
    else:
        glued = None
    try:
        items = _items(text)
    except GreenParseError as e:
        raise GreenParseError(f"[{name}]: {e}") from None
    if not items:
        if _EXCEPT.search(text) or re.search(r"[1-9]", text):
            # "None, except that the candidate misses the effusion", "0 false findings; 2 missing findings":
            # it says none and then names errors (official: 0 for the section; no single count here)
            raise GreenParseError(f"[{name}] says none and goes on to name errors: {text[:80]!r}")
        if text.startswith("No"):  # upstream: "No clinically significant errors." counts zero
            return SectionCounts(counts, sentences)
        if _ZERO_SECTION.match(text):
            leniency.append("zero-section")
            return SectionCounts(counts, sentences)
        raise GreenParseError(f"[{name}] has no (a)-(f) items and does not say there are none: {text[:80]!r}")
    # "[Clinically Significant Errors]: 2" above the items, or "1 (a) False report ...": the judge's own total
    stated = re.match(r"\**[ \t]*(\d+)\**[ \t]*(?:errors?)?[ \t]*(?:\.[ \t]*(?=\n)|(?=\n)|(?=\([a-f]\) ))", text, re.I)
    keys = LETTERS if items[0].key in LETTERS else tuple("123456")
    seen: dict[str, tuple[int, str]] = {}
    for item in items:
        line = item.text.strip()
        where = f"[{name}] item ({item.key})"
        index = keys.index(item.key)
        letter = LETTERS[index]
        label_end = re.search(r":", line)
        if label_end:
            rest = line[label_end.end():]
        else:  # "(b) Missing a finding present in the reference - 1. x": the count follows the wording
            wording = re.search(re.escape(SUB_CATEGORIES[letter]), line, re.I)
            rest = " " + re.sub(r"^[\s\-–=]+", "", line[wording.end():]) if wording else ""
        official = re.findall(r"(?<=: )\b\d+\b(?=\.)", line)
        last_line = text.splitlines()[-1].strip()
        try:
            value = _read_count(rest, where, at_end and item is items[-1] and last_line.endswith(line),
                                int(official[0]) if official else None, leniency)
        except GreenParseError as e:  # the reason names the line
            raise GreenParseError(f"{e} in line {line[:80]!r}") from None
        if item.leniency:
            leniency.append(item.leniency)
        if item.split:
            leniency.append("items-on-one-line")
        if letter in seen and seen[letter][0] != value:
            raise GreenParseError(f"[{name}] gives two counts for ({item.key}): {seen[letter][1]!r} and "
                                  f"{line[:60]!r}")
        if letter in seen and value and _error_sentences(line) != sentences[letter]:
            # "(b) ...: 1. Left effusion." and "(b) ...: 1. Right nodule.": one line per error (2) or one count
            # given twice (1)? Review 35: read as 1, as upstream (its last line wins); the same line twice is one
            raise GreenParseError(f"[{name}] gives ({item.key}) twice with other errors, {seen[letter][1]!r} and "
                                  f"{line[:60]!r}: one count or two?")
        seen[letter] = (value, line[:60])
        counts[letter] = value
        sentences[letter] = _error_sentences(line) if value else []
    if ends_output and keys.index(items[-1].key) < len(keys) - 1 and not _provably_whole(text, items, keys, at_end):
        # the template lists (a)-(f): a section that ends the output before (f) may have been cut at the token
        # limit, its later items lost (counted 0). Review 28: sections out of order, the significant one last.
        raise GreenParseError(f"[{name}] ends the output at item ({items[-1].key}), before ({keys[-1]}) (cut off?)")
    if text.startswith("No") and sum(counts.values()):
        raise GreenParseError(f"[{name}] starts with {text.split(chr(10))[0][:60]!r} but its items count errors")
    for line in text.splitlines():  # "Total: 3" under items that count 1
        total = _TOTAL.match(line)
        if total and int(total.group(1)) != sum(counts.values()):
            raise GreenParseError(f"[{name}] items count {sum(counts.values())} but it says {line.strip()[:40]!r}")
    stated = stated or glued
    if stated and int(stated.group(1)) != sum(counts.values()):
        raise GreenParseError(f"[{name}] says {stated.group(1)} but its items count {sum(counts.values())}")
    return SectionCounts(counts, sentences)



def _provably_whole(text: str, items: list[_Item], keys: tuple[str, ...], at_end: bool) -> bool:
    """Whether an error section that ends the output at an item before (f) shows that no item was cut off (review
    31): every category has its item, in another order ("(f) ... (a)"), or the judge closes its items with a total
    ("Total: 2.") that is not itself at the cut (the totals that disagree are refused by the caller). The official
    code reads items in any order and a missing one as 0 (green.py:322-333), as the judge meant here."""
    if set(keys) <= {i.key for i in items}:
        return True
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    last_item = max((i for i, line in enumerate(lines) if items[-1].text.strip() in line), default=len(lines))
    totals = [line for line in lines[last_item + 1:] if _TOTAL.match(line)]
    return bool(totals) and (not at_end or not lines[-1].endswith(totals[-1]) or _CLOSED.search(totals[-1]) is not None)


# -- matched findings ----------------------------------------------------------------------------------------
_NUMBERED_LINE = re.compile(rf"^(?:[-*•>]\s+)?\**{_ENUM}")


def _cut_item(paragraph: str) -> bool:
    """What is left of an item where the output was cut: a piece of a marker ("-", "(c", "* c)", "- **("), or a marker
    and the start of a category's wording ("E. Mentioning a compariso")."""
    marker = re.match(r"[\W_]*(?:[a-fA-F1-6](?![A-Za-z])[\W_]*)?", paragraph.strip())
    start = " ".join(paragraph.strip()[marker.end():].lower().split())
    return not start or any(name.lower().startswith(start) for name in SUB_CATEGORIES.values())


def read_matched_findings(section: str, at_end: bool = False, leniency: list[str] | None = None,
                          mid_line: bool = False) -> int:
    """The matched count. ``at_end``: the text ends the output (not even a newline after it); ``mid_line``: the
    output ends in its last line (blanks may follow), where a list may have been cut."""
    leniency = [] if leniency is None else leniency
    text = section.strip()
    where = f"[{MATCHED}]"
    if not text:
        if at_end:
            raise GreenParseError(f"{where} is empty at the end of the output (cut off?)")
        leniency.append("empty-section")
        return 0
    # "2.0. Cardiomegaly; ..." is the whole number 2, as upstream reads it
    lines = [re.sub(r"^(\**\d+)\.0+(?=[.\s*]|$)", r"\1", line.strip()) for line in text.splitlines() if line.strip()]
    numbered = [(i, int(m.group(1)), m.group(0)) for i, line in enumerate(lines)
                if (m := _NUMBERED_LINE.match(line))]
    first = lines[0]
    if not numbered:
        if text.startswith("No") or _ZERO_MATCHED.match(first):
            if not _ZERO_MATCHED.match(first):
                raise GreenParseError(f"{where} lists findings without a count: {first[:80]!r}")
            if _EXCEPT.search(first):  # "No matched findings other than normal heart size"
                raise GreenParseError(f"{where} says none and then names one: {first[:80]!r}")
            if not text.startswith("No"):
                leniency.append("zero-sentence")
            return 0
        bare = re.fullmatch(r"\**(\d+)\**", first)
        if bare:
            if at_end and len(lines) == 1:
                raise GreenParseError(f"{where}: the count {bare.group(1)} ends the output (cut off?)")
            leniency.append("count-form")
            return int(bare.group(1))
        counted = re.match(r"^\**(\d+)\s+(?:matched|findings?|of|in)\b", first, re.I)
        word = None if counted else re.match(rf"^[\W_]*({_WORD})\b", first, re.I)
        lead = counted or word
        if lead and re.search(rf"\d|\b(?:{_WORD})\b", first[lead.end():], re.I):
            # "3 findings in the reference, 2 of them matched", "Three findings were reported; one matched"
            raise GreenParseError(f"{where}: {first[:60]!r} gives more than one number")
        if counted:
            leniency.append("count-form")
            return int(counted.group(1))
        if word:
            if _RANGE_AFTER.match(first[word.end():]):  # "Two or three. ..."
                raise GreenParseError(f"{where}: {first[:30]!r} is not one count")
            leniency.append("count-word")
            return _WORDS[word.group(1).lower()]
        sentence = _SENTENCE_COUNT.search(first)
        if sentence:
            if re.search(rf"(?:\d+|\b(?:{_WORD}))\s*(?:-|–|/|\bor\b|\bto\b)\s*$", first[:sentence.start()], re.I):
                raise GreenParseError(f"{where}: {first[:40]!r} is not one count")  # "2 or 3 matched findings"
            leniency.append("count-in-sentence")
            return _word_or_digits(sentence.group(1))
        if re.match(r"^[\W_]*\d", first):
            raise GreenParseError(f"{where}: {first[:40]!r} is not a whole count")
        raise GreenParseError(f"{where} has no readable count: {first[:80]!r}")
    index, value, marker = numbered[0]
    if index > 0:
        intro = " ".join(lines[:index])
        if _ZERO_MATCHED.match(intro) or text.startswith("No"):
            raise GreenParseError(f"{where} says {lines[0][:60]!r} and then lists {lines[index][:40]!r}")
        stated = _SENTENCE_COUNT.search(intro) or re.fullmatch(  # "3 matched findings:", or "3", "Total: 3"
            rf"[\W_]*(?:total(?:\s+matched\s+findings?)?\s*:?\s*)?(\d+|{_WORD})[\W_]*", intro, re.I)
        leniency.append("count-after-sentence")
    else:
        stated = None
    numbers = [n for _, n, _ in numbered]
    bare_number = re.fullmatch(r"\**\(?(\d+)\)?\**[.):]?\**", lines[-1])
    if mid_line and bare_number and (
            # "1. Left pleural effusion.\n2.": the list's last item is only its number, ending the output
            (len(numbers) >= 2 and numbered[-1][0] == len(lines) - 1 and numbers == list(range(1, len(numbers) + 1)))
            # "1. Left pleural effusion.\n2": the list's next number alone (not a list line without its mark)
            or (numbered[-1][0] == len(lines) - 2 and int(bare_number.group(1)) == numbers[-1] + 1)):
        # cut at the token limit after the number of its next item (review 35: the items before it were counted)
        raise GreenParseError(f"{where}: the list ends the output at {lines[-1][:10]!r}, a number without its finding "
                              "(cut off?)")
    if len(numbers) >= 2:
        if numbers == list(range(1, len(numbers) + 1)):
            listed = [lines[i] for i, _, _ in numbered]
            if mid_line and not stated and lines[-1] == listed[-1] and all(
                    line.rstrip("* ").endswith(".") for line in listed[:-1]) and not _CLOSED.search(listed[-1]):
                # the list is the count, every item but the last closed with ".", the last ending the output without
                # one: cut at the token limit, items lost (review 28: 3 read for 5)
                raise GreenParseError(f"{where}: the list ends the output mid-line at {lines[-1][:40]!r} (cut off?)")
            count = len(numbers)
            leniency.append("numbered-list")
        elif numbers[1:] == list(range(1, value + 1)):
            count = value
        elif numbers[1:] == list(range(1, len(numbers))):
            raise GreenParseError(f"{where} says {value} but lists {len(numbers) - 1}: {lines[index][:40]!r}")
        else:
            listed = ", ".join(f"{lines[i][:20]!r}" for i, _, _ in numbered[:4])
            raise GreenParseError(f"{where}: numbered lines {listed} are neither one count nor a list 1..n")
    else:
        count = value
        line = lines[index]
        rest = line[len(marker):]
        if re.search(r"[-–(]\s*$", marker) and re.match(
                rf"\s*(?:(?:or|possibly|maybe|perhaps|up to)\s+)?(?:\d|(?:{_WORD})\b)", rest, re.I):
            raise GreenParseError(f"{where}: {line[:30]!r} is not one count")  # "2 - 3. ...", "2 (or 3) ..."
        if at_end and len(lines) == index + 1 and not rest.strip() and not marker.rstrip().endswith("."):
            raise GreenParseError(f"{where}: the count {value} ends the output (cut off?)")
        later = _same_style_numbers(marker.strip().lstrip("-*•> ").strip("*"), rest) if value == 1 else []
        if later and later == list(range(2, len(later) + 2)):
            # "1. Normal heart; 2. Clear lungs" or "(1) x (2) y" on one line: a numbered list of 2, as under an error
            # item ("enumerated-errors"); it read 1 (official: 1 or 0), a wrong score (review 30c)
            count = 1 + len(later)
            leniency.append("numbered-list")
        elif not re.match(r"^\d+\.", line):
            leniency.append("count-form")
    if stated and _word_or_digits(stated.group(1)) != count:
        raise GreenParseError(f"{where} says {stated.group(0).strip()!r} but lists {count}")
    for later in lines[index + 1:]:  # "Total matched findings: 3" under a list of 2
        total = _TOTAL.match(later)
        if total and int(total.group(1)) != count:
            raise GreenParseError(f"{where} lists {count} but says {later[:40]!r}")
    return count


#: a line that ends as a complete item or sentence ends ("."), or a closing code fence
_CLOSED = re.compile(r"[.!?)\]*\"'»`]\s*$")


# -- the analysis --------------------------------------------------------------------------------------------
_CONTINUES_ITEMS = re.compile(_ITEM_START.pattern, re.I)
_CONTINUES_LIST = re.compile(_NUMBERED_LINE.pattern)


def _check_later_total(rest: str, kind: str, name: str, value: int) -> None:
    """A "Total: 2" after a blank line below the section's text (the section itself stops at the blank line)
    that disagrees with it. A total of another kind ("Total matched findings", "Total errors (2 significant, 1
    insignificant)") is not this section's."""
    for line in rest.splitlines():
        total = _TOTAL.match(line)
        if not total:
            continue
        words = line.lower()
        mine = ("match" in words) if kind == "matched" else (
            "match" not in words and ("insignificant" in words) == (kind == "insignificant")
            or not re.search(r"significant", words))
        if kind != "matched" and "insignificant" in words and re.search(r"(?<!in)significant", words):
            mine = False
        if mine and int(total.group(1)) != value:
            raise GreenParseError(f"[{name}] counts {value} but a line below it says {line.strip()[:40]!r}")


def _one_section(text: str, headers: list[_Header], kind: str, leniency: list[str]):
    """Read every section of a kind; several that read differently are ambiguous."""
    name = _KIND_NAME[kind]
    readings = []
    for body, header, last in _sections(text, headers, kind):
        if _TEMPLATE.search(body):  # the prompt's template repeated: not the judge's answer
            leniency.append("template-echo")
            continue
        if last and not body.strip():
            raise GreenParseError(f"[{name}] is empty at the end of the output (cut off?)")
        local: list[str] = []
        if not header.official:
            local.append("header-form")
        continues = _CONTINUES_LIST if kind == "matched" else _CONTINUES_ITEMS
        body_text, extended, dropped = _paragraphs(body, continues)
        if extended:
            local.append("blank-line-in-section")
        # nothing after the section's text, not even a newline: a count there may have been cut off
        at_end = last and not dropped and body == body.rstrip()
        # the output may have been cut inside this section (review 28): it ends here, or only a piece of a marker
        # ("-", "(c", "E. Mentioning a compariso") follows after a blank line
        ends_output = last and (not dropped or (len(dropped) == 1 and _cut_item(dropped[0])))
        if kind == "matched":
            mid_line = last and not dropped and "\n" not in body[len(body.rstrip()):]
            value = read_matched_findings(body_text, at_end, local, mid_line)
            readings.append((value, value, local))
        else:
            section = read_error_section(body_text, name, at_end, local, ends_output)
            readings.append((tuple(section.counts.values()), section, local))
            value = sum(section.counts.values())
        if dropped:
            _check_later_total(body[len(body) - len(body.lstrip()) + len(body_text):], kind, name, value)
    if not readings:
        return None
    if len({key for key, _, _ in readings}) > 1:
        raise GreenParseError(f"two [{name}] sections with different counts")
    leniency.extend(readings[0][2])
    return readings[0][1]


#: format characters that show as nothing: soft hyphen, zero-width and joiner characters, direction marks and
#: embeddings, word joiner and invisible operators, BOM
_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
#: full-width ASCII as ASCII; no-break and other fixed spaces as the space they show as
_FULL_WIDTH = {**{c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}, **{c: 0x20 for c in range(0x2000, 0x200B)},
               0x3000: 0x20, 0xA0: 0x20, 0x202F: 0x20}


#: dashes the readers take as "-" and "–" in counts, ranges and bullets: an em dash, a minus sign, figure and
#: non-breaking hyphens. Review 35: "(a) ...: 0 — none." and "(b) ...: 1 — Left pleural effusion." (em dashes, as chat
#: models write them) were unscored, the first where the official code reads 0; "1 – x" with an en dash was read
_DASHES = str.maketrans(dict.fromkeys("\u2010\u2011\u2012\u2014\u2015\u2212", "-"))


#: Markdown underscore emphasis around a header or an item marker ("__Matched Findings__:", "_(b)_"), the same
#: emphasis as the "**" forms the readers take (review 28: unscored, official 0s); rewritten as those, one "*" for
#: one "_", so every position in the text stays where it was
_UNDERSCORE_HEADER = re.compile(r"^([ \t>#\-]*)(_{1,3})([ \t]*(?:\[[ \t]*)?(?:" + "|".join(_NAMES.values())
                                + r")(?:[ \t]*\])?[ \t]*(?::(?=\2)|(?=\2[ \t]*(?::|$))))\2", re.I | re.M)
_UNDERSCORE_MARK = re.compile(r"(?<!\S)(_{1,3})([ \t]*(?:\([ \t]*[a-fA-F1-6][ \t]*\)|\[[ \t]*[a-fA-F1-6][ \t]*\]"
                              r"|[a-fA-F][.)])[ \t]*:?)\1(?=[ \t]|$)", re.M)


def _asterisk_emphasis(text: str) -> str:
    text = _UNDERSCORE_HEADER.sub(lambda m: m[1] + "*" * len(m[2]) + m[3] + "*" * len(m[2]), text)
    return _UNDERSCORE_MARK.sub(lambda m: "*" * len(m[1]) + m[2] + "*" * len(m[1]), text)


def _without_reasoning(text: str, leniency: list[str]) -> str:
    """A reasoning model's "<think>...</think>" is its drafting, not its answer: its draft counts ("[Matched
    Findings]: 5.") made two sections that disagree (review 28). One left open is an answer cut while thinking. The
    JSON judges' reader (`json_answer.without_reasoning`), so a "</think>" with no "<think>" (drafting a chat
    template opened in the prompt) drops the draft before it too; the official code reads the draft's first
    section there."""
    try:
        answer = without_reasoning(text)
    except AnswerError as e:
        raise GreenParseError(str(e)) from None
    if answer != text:
        leniency.append("reasoning-block")
        only = _ONLY_THINK_BLOCK.fullmatch(text)
        if only and not answer.strip():
            return _analysis_only_in_reasoning(only[1].rstrip())
    return answer


#: the whole output one "<think>...</think>" block, nothing but blanks around it
_ONLY_THINK_BLOCK = re.compile(r"\s*<think>((?:(?!</?think>).)*)</think>\s*", re.I | re.S)


def _analysis_only_in_reasoning(block: str) -> str:
    """An output that is one "<think>" block with nothing after it, the analysis written inside (review 31: no
    sections, unscored). The official code reads the block's sections (clean_responses keeps the text after
    "[Explanation]:", green.py:302 finds them), the judge's only analysis: read it, where the block has both sections
    and nothing after its first section takes it back ("Wait, let me re-check", "Corrected:"); a draft followed by an
    answer after the block is still read at the answer. The block's end is read as the output's end (the caller
    strips the blanks before "</think>"), so that an analysis that stops mid-list or mid-item there is unscored as
    cut, never read short."""
    sections = [h for h in _analysis_headers(block) if h.kind in _KIND_NAME]
    if not {"significant", "matched"} <= {h.kind for h in sections}:
        raise GreenParseError("nothing follows the <think> block, and it holds no complete analysis (cut off?)")
    last_line = block.rstrip().rsplit("\n", 1)[-1]
    if not _CLOSED.search(last_line):
        # a token limit cannot cut inside a closed block, but a draft can stop there mid-item ("3. Pleural eff"):
        # stricter than at the output's end, as nothing after the block says the analysis was finished
        raise GreenParseError(f"the analysis is only inside the <think> block and stops at {last_line[-40:]!r} "
                              "without closing it (cut off?)")
    revision = _REVISION.search(block, sections[0].start)
    if revision:
        raise GreenParseError(f"the analysis is only inside the <think> block, which goes on to revise it "
                              f"({revision.group(0)!r}): no single reading")
    return block


def parse_green(text: str) -> GreenAnalysis:
    """Parse one GREEN analysis; raises GreenParseError with the reason when it cannot be scored."""
    if not isinstance(text, str):
        raise GreenParseError(f"judge output is {type(text).__name__}, not text")
    # CR LF / CR line ends read as LF: blank lines and header lines are found by "\n" (a CRLF answer once had
    # its insignificant items counted as significant)
    cleaned = _strip_chat(text).replace("\r\n", "\n").replace("\r", "\n")
    # characters that show as nothing (a BOM, zero-width spaces) and full-width ASCII ("（a）") mean what they look
    # like: read as such (a BOM before "(a)" hid the item, and its category counted 0)
    shown = _INVISIBLE.sub("", cleaned).translate(_FULL_WIDTH)
    if not shown.strip():
        raise GreenParseError("empty judge output")
    leniency: list[str] = ["invisible-or-full-width"] if shown != cleaned else []  # where the official may differ
    cleaned = _without_reasoning(_asterisk_emphasis(shown.translate(_DASHES)), leniency)
    analysis, headers = _choose_analysis(cleaned, leniency)
    kinds = {h.kind for h in headers}
    missing = [f"[{_KIND_NAME[k]}] section" for k in ("significant", "matched") if k not in kinds]
    if missing:
        raise GreenParseError("no " + " and no ".join(missing) + " (truncated or not GREEN format)")
    significant = _one_section(analysis, headers, "significant", leniency)
    insignificant_unread = None
    try:
        insignificant = _one_section(analysis, headers, "insignificant", leniency)
    except GreenParseError as e:  # GREEN = matched / (matched + significant) is still read as upstream reads it
        insignificant, insignificant_unread = None, str(e)
    matched = _one_section(analysis, headers, "matched", leniency)
    if significant is None or matched is None:
        raise GreenParseError("the output only repeats the template's placeholders, with no filled analysis")
    sums = {"significant": sum(significant.counts.values()), "matched": matched,
            "insignificant": None if insignificant is None else sum(insignificant.counts.values())}
    for kind, count, line in _prose_counts(analysis, headers):  # "Matched findings: 3." in the explanation
        if sums[kind] is not None and count != sums[kind]:
            raise GreenParseError(f"[{_KIND_NAME[kind]}] counts {sums[kind]} but the text also says {line[:50]!r}")
    _check_shadowed_sections(analysis, headers, significant.counts, matched)
    _check_stated_counts(analysis, headers, sums)
    first_section = min(h.start for h in headers if h.kind in _KIND_NAME)
    explanation_end = [h.end for h in headers if h.kind == "explanation" and h.start < first_section]
    explanation = analysis[explanation_end[-1] if explanation_end else 0:first_section].strip()
    ordered = list(dict.fromkeys(leniency))
    return GreenAnalysis(
        significant=significant.counts,
        insignificant=insignificant.counts if insignificant else None,
        matched_findings=matched,
        explanation=explanation,
        significant_sentences=significant.sentences,
        format="tolerant" if ordered else "official",
        leniency=ordered,
        insignificant_unread=insignificant_unread,
    )
