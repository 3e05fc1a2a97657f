"""FineRadScore as a scoring system: line-level corrections with clinical severity."""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from radmetrics.finerad_score.parse import (
    CATEGORIES,
    PARSER_VERSION,
    FineRadParseError,
    apply_corrections,
    read_corrections,
)
from radmetrics.finerad_score.prompt import (
    LAYOUTS,
    PROMPT_VERSION,
    build_finerad_prompt,
    retry_message,
    split_lines,
)
from radmetrics.scoring import ScoringSystem
from radmetrics.types import Judgment


@dataclass
class FineRadJudgment(Judgment):
    corrections: list[dict[str, Any]] = field(default_factory=list)
    severity_sum: int | None = None
    severity_max: int | None = None
    corrected_lines: int | None = None
    inserted_lines: int | None = None
    category_counts: dict[str, int] = field(default_factory=dict)
    corrected_report: str | None = None


class FineRadScoreSystem(ScoringSystem):
    higher_is_better = False
    name = "finerad_score"
    score_key = "finerad_score"
    parser_version = PARSER_VERSION
    evaluate_module = str(Path(__file__).with_name("finerad_score.py"))
    few_shot = True
    #: the official few-shot layout: "gpt4" (the instructions as a system message) or "claude3" (no system
    #: message; the instructions open the first user turn)
    layout = "gpt4"
    #: re-asks when the answer is not valid JSON (the paper re-prompted "up to a certain number")
    max_retries = 5
    #: "sum" (paper Sec. 7, the report-level FineRadScore), "max" (Sec. 6.4) or "lines": the number of lines
    #: needing a correction (ReXamine-Global Sec. 2.2, "the total number of problematic lines")
    report_score = "sum"
    option_choices = {"report_score": ("sum", "max", "lines"), "layout": LAYOUTS}

    @property
    def prompt_version(self) -> str:  # type: ignore[override]
        return f"{PROMPT_VERSION}-{f'fewshot-{self.layout}' if self.few_shot else 'zeroshot'}"

    def build_prompt(self, reference: str, candidate: str) -> str:
        return build_finerad_prompt(reference, candidate, self.few_shot, self.layout)

    def sample_answer(self, reference: str, candidate: str) -> str:
        """Corrections that delete every candidate line with a word the reference does not have, as an urgent
        false prediction (a fenced JSON object, as judges often write it)."""
        truth = " ".join(reference.split()).lower()
        corrections = {
            str(i): {"corrections": "[delete]", "clinical severity": "Urgent error", "comments": "not in reference",
                     "error category": [CATEGORIES[0]]}
            for i, line in enumerate(split_lines(candidate))
            if any(word not in truth for word in re.findall(r"[a-z0-9]+", line.lower()))
        }
        return "```json\n" + json.dumps(corrections) + "\n```"

    def pair_in_prompt(self, prompt: str) -> tuple[str, str] | None:
        """The pair of the query turn (the last "Generated Text:" one that rebuilds this prompt; a re-ask adds
        turns after it): the candidate from its numbered sentences, the reference after "Ground Truth Text: "."""
        from radmetrics.conversation import as_messages

        messages = as_messages(prompt)
        for message in reversed(messages):
            text = message["content"]
            start = text.rfind("Generated Text: ") if message["role"] == "user" else -1
            query = re.match(r"Generated Text: (.*?) \n \n Ground Truth Text: (.*)\Z", text[start:], re.S)
            if start < 0 or not query:
                continue
            lines = [line.strip() for line in re.split(r"(?:^| )\[\d+\] ", query.group(1)) if line.strip()]
            pair = query.group(2), " ".join(lines)
            built = as_messages(self.build_prompt(*pair))
            if messages[: len(built)] == built:
                return pair
        return None

    def retry_prompt(self, prompt: str, judgment: Judgment, attempt: int) -> str:
        """The conversation so far, the unreadable answer as the judge's turn and a request for valid JSON."""
        from radmetrics.conversation import continue_chat

        return continue_chat(prompt, judgment.raw, retry_message(judgment.reason or "unreadable"))

    def parse(self, text: str) -> Judgment:
        try:
            corrections, repairs = read_corrections(text)
        except FineRadParseError as e:
            judgment = Judgment.unscored(str(e), raw=text if isinstance(text, str) else "")
            judgment.details["retryable"] = e.retryable
            return judgment
        categories = dict.fromkeys(CATEGORIES, 0)
        for c in corrections:
            for name in c.categories:
                categories[name] = categories.get(name, 0) + 1
        severities = [c.severity for c in corrections]
        total, worst = sum(severities), max(severities, default=0)
        score = {"sum": total, "max": worst, "lines": len(corrections)}[self.report_score]
        return FineRadJudgment(
            score=float(score), parsed=True, raw=text,
            corrections=[asdict(c) for c in corrections], severity_sum=total, severity_max=worst,
            corrected_lines=sum(1 for c in corrections if c.line is not None),
            inserted_lines=sum(1 for c in corrections if c.line is None), category_counts=categories,
            details={"repairs": repairs} if repairs else {},
        )

    def finalize(self, judgment: Judgment, reference: str, candidate: str) -> Judgment:
        """Apply the corrections to the candidate's numbered lines; a correction for a line the candidate
        does not have makes the judgment unscored (the judge answered about another report)."""
        lines = split_lines(candidate)
        from radmetrics.finerad_score.parse import Correction

        corrections = [Correction(**c) for c in judgment.corrections]  # type: ignore[attr-defined]
        beyond = sorted(c.line for c in corrections if c.line is not None and c.line >= len(lines))
        if beyond:
            return Judgment.unscored(f"corrections for line(s) {beyond} but the candidate has {len(lines)} lines",
                                     raw=judgment.raw)
        try:
            judgment.corrected_report = apply_corrections(lines, corrections)  # type: ignore[attr-defined]
        except ValueError as e:  # scored (both errors count), but no single corrected report exists
            judgment.details["corrected_report_missing"] = str(e)
        return judgment

    row_mean_names = {"severity_max_mean": None, "share_without_corrections": None}

    def row_means(self, judgment: Judgment) -> dict[str, Any] | None:
        if not isinstance(judgment, FineRadJudgment) or judgment.score is None:
            return None
        return {"severity_max_mean": judgment.severity_max, "share_without_corrections": int(not judgment.corrections)}
