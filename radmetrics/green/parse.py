"""Reading a GREEN analysis: pure functions over the judge's text.

On official-format outputs the counts, and so the score, equal the official implementation's
(Stanford-AIMI/GREEN green_score/green.py `clean_responses`, `parse_error_counts`, `compute_green`): the
same section regex, the same "(a) ...: N." reading, "(1)-(6)" markers as a fallback, a section that
starts with "No" counting zero, and GREEN = matched / (matched + sum of significant errors), 0 when
matched = 0 (GREEN paper, Sec. 3.2).

Where upstream silently returns numbers for text it could not read, we do not:
- a missing [Clinically Significant Errors] or [Matched Findings] section (e.g. a truncated output) is
  unscored with a reason (upstream: matched 0 -> score 0, or significant errors 0 -> score 1);
- an (a)-(f) line whose count cannot be read at all is unscored (upstream counts it 0).
We also read what upstream misses: headers without brackets or in Markdown bold/headings, bullets,
counts without the trailing period ("(a) ...: 2"), and chatter around the analysis.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from radmetrics.taxonomy import GREEN_NAMES, LETTERS

PARSER_VERSION = "2"

SIGNIFICANT = "Clinically Significant Errors"
INSIGNIFICANT = "Clinically Insignificant Errors"
MATCHED = "Matched Findings"
CATEGORIES = (SIGNIFICANT, INSIGNIFICANT, MATCHED)
#: the six error categories (GREEN Sec. 3.1; upstream `self.sub_categories`), from radmetrics.taxonomy
SUB_CATEGORIES = GREEN_NAMES


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
    #: "official" when upstream's regexes read every section, "tolerant" when our fallbacks were needed
    format: str

    @property
    def score(self) -> float:
        total = sum(self.significant.values())
        if self.matched_findings == 0:
            return 0.0
        return self.matched_findings / (self.matched_findings + total)


def clean_response(text: str) -> str:
    """Upstream `clean_responses`: keep what follows the last "<|assistant|>" and the "[Explanation]:"
    marker, drop "</s>" and "<unk>" (applied to the decoded model output before parsing)."""
    if "[Explanation]:" in text:
        if "<|assistant|>" in text:
            text = text.split("<|assistant|>")[-1]
        # Upstream's `("A" or "B") in text` tests only "A": the echoed template's placeholder.
        if "[Explanation]:\n    <Explanation>\n" in text:
            text = text.split("[Explanation]:")[1]
        else:
            text = text.split("[Explanation]:")[-1]
    if "<|assistant|>" in text:
        text = text.split("<|assistant|>")[-1]
    return text.replace("</s>", "").replace("<unk>", "")


def _official_section(text: str, category: str) -> str | None:
    # Upstream: up to the first blank line after the header, or the end of the text.
    match = re.search(rf"\[{re.escape(category)}\]:\s*(.*?)(?:\n\s*\n|\Z)", text, re.DOTALL)
    return match.group(1) if match else None


_ANY_HEADER = "|".join(re.escape(c) for c in CATEGORIES) + "|Explanation"


def _tolerant_section(text: str, category: str) -> str | None:
    """A header written as "**Matched Findings**:", "### Matched findings", "Matched Findings:" ... up
    to the next known header."""
    header = re.compile(
        rf"^[ \t>#*\-]*[\[(]?\**\s*{re.escape(category)}\s*\**[\])]?\s*\**\s*:?\**[ \t]*", re.I | re.M
    )
    match = header.search(text)
    if not match:
        return None
    rest = text[match.end():]
    nxt = re.search(rf"^[ \t>#*\-]*[\[(]?\**\s*(?:{_ANY_HEADER})\s*\**[\])]?\s*\**\s*:", rest, re.I | re.M)
    return (rest[: nxt.start()] if nxt else rest).strip()


def _item_lines(section: str) -> tuple[list[str], list[str]]:
    """Upstream reads "(a) ..." items; if there are none, "(1) ..." items. Returns lines and keys."""
    lines = sorted(re.findall(r"\([a-f]\) .*", section))
    if lines:
        return lines, [f"({letter}) " for letter in LETTERS]
    lines = sorted(re.findall(r"\([1-6]\) .*", section))
    return lines, [f"({i}) " for i in range(1, 7)]


def _read_count(line: str, strict: bool) -> int | None:
    count = re.findall(r"(?<=: )\b\d+\b(?=\.)", line)  # upstream: ": N."
    if count:
        return int(count[0])
    if strict:
        return None
    # Tolerant: the first number right after the colon, with or without a period or bold marks.
    loose = re.search(r":\s*\**\s*(\d+)\b", line)
    return int(loose.group(1)) if loose else None


def _error_sentences(line: str) -> list[str]:
    # Upstream `parse_error_sentences`: text after the last ":" and the count's ".", split on ";".
    parts = line.rsplit(":", 1)[-1].split(".", 1)[-1].split(";")
    return [p.strip() for p in parts if p.strip()]


_NONE_WORDS = re.compile(r"^\W*(no|none|nil|n/a|zero)\b", re.I)


def read_error_section(section: str, name: str) -> SectionCounts:
    """Counts (a)-(f) of one error section; a line present but with no readable count is an error."""
    counts = dict.fromkeys(LETTERS, 0)
    sentences: dict[str, list[str]] = {letter: [] for letter in LETTERS}
    if section.startswith("No"):  # upstream: "No clinically significant errors." counts zero
        return SectionCounts(counts, sentences)
    lines, keys = _item_lines(section)
    if not lines:
        if _NONE_WORDS.search(section) or not section.strip():
            return SectionCounts(counts, sentences)
        raise GreenParseError(f"[{name}] has no (a)-(f) items and does not say there are none")
    for position, key in enumerate(keys):
        for line in lines:  # upstream: a later line for the same letter overrides an earlier one
            if line.startswith(key):
                value = _read_count(line, strict=False)
                if value is None:
                    raise GreenParseError(f"[{name}] item {key.strip()} has no readable count: {line[:80]!r}")
                counts[LETTERS[position]] = value
                sentences[LETTERS[position]] = _error_sentences(line) if value else []
    return SectionCounts(counts, sentences)


def read_matched_findings(section: str) -> int:
    if section.startswith("No"):
        return 0
    official = re.findall(r"^\b\d+\b(?=\.)", section)  # upstream: "N." at the very start
    if official:
        return int(official[0])
    loose = re.match(r"^\W*(\d+)\b", section)
    if loose:
        return int(loose.group(1))
    if _NONE_WORDS.search(section):
        return 0
    raise GreenParseError(f"[{MATCHED}] has no readable count: {section[:80]!r}")


def _find_section(text: str, category: str) -> tuple[str | None, bool]:
    section = _official_section(text, category)
    if section is not None:
        return section, True
    return _tolerant_section(text, category), False


def parse_green(text: str) -> GreenAnalysis:
    """Parse one GREEN analysis; raises GreenParseError with the reason when it cannot be scored."""
    if not isinstance(text, str):
        raise GreenParseError(f"judge output is {type(text).__name__}, not text")
    cleaned = clean_response(text)
    if not cleaned.strip():
        raise GreenParseError("empty judge output")
    significant, sig_official = _find_section(cleaned, SIGNIFICANT)
    matched, matched_official = _find_section(cleaned, MATCHED)
    missing = [name for name, sec in ((SIGNIFICANT, significant), (MATCHED, matched)) if sec is None]
    if missing:
        raise GreenParseError(
            "no " + " and no ".join(f"[{m}] section" for m in missing) + " (truncated or not GREEN format)"
        )
    sig = read_error_section(significant, SIGNIFICANT)
    insignificant_text, insig_official = _find_section(cleaned, INSIGNIFICANT)
    insig = read_error_section(insignificant_text, INSIGNIFICANT) if insignificant_text is not None else None
    matched_count = read_matched_findings(matched)
    header = re.search(r"^[ \t#*\[]*" + re.escape(SIGNIFICANT), cleaned, re.M | re.I)
    explanation = (cleaned[: header.start()] if header else "").strip()
    official = sig_official and matched_official and (insig_official or insignificant_text is None)
    return GreenAnalysis(
        significant=sig.counts,
        insignificant=insig.counts if insig else None,
        matched_findings=matched_count,
        explanation=explanation,
        significant_sentences=sig.sentences,
        format="official" if official else "tolerant",
    )
