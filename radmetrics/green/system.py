"""The GREEN scoring system: prompt, parse, per-sample judgment and corpus aggregate."""
from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from radmetrics.green.derived import derived_scores
from radmetrics.green.official import official_reading
from radmetrics.green.parse import LETTERS, PARSER_VERSION, SUB_CATEGORIES, GreenParseError, parse_green
from radmetrics.green.prompt import (
    MAX_WORDS,
    PROMPT_VERSION,
    build_green_prompt,
    cut_report_warnings,
    sample_green_analysis,
    truncate_words,
)
from radmetrics.scoring import ScoringSystem, mean_std_summary
from radmetrics.taxonomy import ErrorCounts
from radmetrics.types import GreenJudgment, Judgment

logger = logging.getLogger(__name__)


class GreenSystem(ScoringSystem):
    name = "green"
    score_key = "green"
    prompt_version = PROMPT_VERSION
    parser_version = PARSER_VERSION
    max_words = MAX_WORDS
    #: the judge GREEN's authors selected (GREEN Sec. 4); the default for `--judge` with this metric
    default_judge = "StanfordAIMI/GREEN-RadLlama2-7b"
    evaluate_module = str(Path(__file__).with_name("green.py"))
    aggregate_options = ("summary", "summary_model")

    def build_prompt(self, reference: str, candidate: str) -> str:
        return build_green_prompt(reference, candidate, self.max_words)

    def sample_answer(self, reference: str, candidate: str) -> str:
        """A GREEN analysis counting shared words as matched findings and candidate-only words as (a) errors."""
        return sample_green_analysis(truncate_words(reference, self.max_words), truncate_words(candidate, self.max_words))

    def input_warnings(self, reference: str, candidate: str) -> list[str]:
        return cut_report_warnings(reference, candidate, self.max_words, "GREEN")

    def parse(self, text: str) -> Judgment:
        try:
            analysis = parse_green(text)
        except GreenParseError as e:
            return GreenJudgment(score=None, parsed=False, reason=str(e), raw=text if isinstance(text, str) else "")
        return GreenJudgment(
            score=analysis.score,
            parsed=True,
            raw=text,
            significant=analysis.significant,
            insignificant=analysis.insignificant or {},
            matched_findings=analysis.matched_findings,
            explanation=analysis.explanation,
            error_counts=ErrorCounts.from_letters(analysis.significant, analysis.insignificant),
            details={"format": analysis.format, "leniency": analysis.leniency,
                     **_official_difference(text, analysis),
                     "error_sentences": analysis.significant_sentences,
                     "insignificant_section": analysis.insignificant is not None,
                     **({"insignificant_unread": analysis.insignificant_unread}
                        if analysis.insignificant_unread else {}),
                     "derived": derived_scores(
                         analysis.matched_findings, sum(analysis.significant.values()),
                         None if analysis.insignificant is None else sum(analysis.insignificant.values()))},
        )

    def aggregate(self, judgments: Sequence[Judgment], summary: bool = False,
                  summary_model: str | None = None, **options: Any) -> dict[str, Any]:
        """Mean, std (ddof=0 as upstream np.std), unscored count, and per category the share of scored
        reports with no clinically significant error of that category (upstream `compute_accuracy`).
        With summary=True, the GREEN summary (see radmetrics/green/summary.py)."""
        result = mean_std_summary(self.score_key, judgments)
        result.update(leniency_summary(self.name, judgments))
        scored = [j for j in judgments if j.score is not None and isinstance(j, GreenJudgment)]
        result["error_free_share"] = {
            f"({letter}) {SUB_CATEGORIES[letter]}": (
                sum(1 for j in scored if j.significant.get(letter, 0) == 0) / len(scored) if scored else None
            )
            for letter in LETTERS
        }
        result["derived"] = {name: _mean([j.details["derived"][name] for j in scored])
                             for name in ("green_ec", "green_total_errors", "green_f1", "green_formula")}
        if summary:
            from radmetrics.green.summary import green_summary

            result["summary"] = green_summary(scored, model_name=summary_model)
        return result


def leniency_summary(metric: str, judgments: Sequence[Judgment]) -> dict[str, Any]:
    """How many analyses needed each leniency (radmetrics/green/parse.py LENIENCY), and how many of those the
    official code would have read to other counts; logged as one warning per corpus so it is never silent."""
    counts: Counter[str] = Counter()
    differ = lenient = 0
    for j in judgments:
        names = j.details.get("leniency") or [] if j.score is not None else []
        counts.update(names)
        lenient += bool(names)
        differ += not j.details.get("official_reading", {}).get("same_counts", True) if names else 0
    if lenient:
        logger.warning("%s: %d of %d analyses read with leniency beyond the official GREEN parser (%s); the official "
                       "code would read %d of them to other counts (details['leniency'], details['official_reading'])",
                       metric, lenient, len(judgments), ", ".join(f"{k} {v}" for k, v in counts.most_common()), differ)
    return {"leniency": dict(counts.most_common()), "num_lenient": lenient, "num_official_would_differ": differ}


def _official_difference(text: str, analysis) -> dict[str, Any]:
    """Where this reading needed leniency, what the official code would have returned (for auditing)."""
    if not analysis.leniency:
        return {}
    official = official_reading(text)
    same = (list(official.significant) == list(analysis.significant.values())
            and official.matched_findings == analysis.matched_findings)
    return {"official_reading": {"significant": list(official.significant), "matched_findings":
                                 official.matched_findings, "score": official.score, "same_counts": same}}


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


class _DerivedSystem(GreenSystem):
    """A GREEN-derived score: GREEN's prompt (so GREEN's cached answers serve it), another formula."""

    derived_key = ""
    #: the derived score cannot be computed from this analysis (e.g. no insignificant section)
    missing_reason = ""

    def parse(self, text: str) -> Judgment:
        judgment = super().parse(text)
        if judgment.score is None:
            return judgment
        value = judgment.details["derived"][self.derived_key]
        if value is None:
            unread = judgment.details.get("insignificant_unread")
            judgment.score, judgment.parsed, judgment.reason = None, False, unread or self.missing_reason
        else:
            judgment.score = value
        return judgment

    aggregate_options = ()

    def aggregate(self, judgments: Sequence[Judgment], **options: Any) -> dict[str, Any]:
        return {**mean_std_summary(self.score_key, judgments), **leniency_summary(self.name, judgments)}


class GreenF1System(_DerivedSystem):
    name = score_key = derived_key = "green_f1"
    evaluate_module = None


class GreenECSystem(_DerivedSystem):
    """GREEN-EC as VERT prints it (Sec. 5.1, App. B): the number of clinically SIGNIFICANT errors (lower is
    better). For significant + insignificant see green_total_errors."""

    name = score_key = derived_key = "green_ec"
    evaluate_module = None
    higher_is_better = False


class GreenTotalErrorsSystem(_DerivedSystem):
    """GREEN's total error count (GREEN paper Sec. 4.3.1): clinically significant + insignificant errors, the
    quantity compared with radiologists' total error counts on ReXVal (lower is better). Unscored when the
    analysis has no [Clinically Insignificant Errors] section (I unknown, not 0)."""

    name = score_key = derived_key = "green_total_errors"
    evaluate_module = None
    higher_is_better = False
    missing_reason = "no [Clinically Insignificant Errors] section: the total error count needs I"


class GreenFormulaSystem(_DerivedSystem):
    name = score_key = derived_key = "green_formula"
    evaluate_module = None
    missing_reason = "no [Clinically Insignificant Errors] section: the Formula score needs I"
