"""Synthetic ER²Score training data through the shared judge, with the paper's App. A.2 RadCliQ prompt:
for each ground-truth report the teacher writes three reports at three error levels and scores each
category; reports of one reference become accepted/rejected pairs (pairs.build_pairs)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from radmetrics.er2score.pairs import ScoredReport, build_pairs, higher_is_better, radcliq_sub_scores
from radmetrics.json_answer import AnswerError, load_json_tolerant
from radmetrics.taxonomy import (RADCLIQ_KEYS, ErrorCounts, radcliq_error_list, read_radcliq_errors, whole_count,
                                 written_key)
from radmetrics.types import GenerationConfig, answer_problem

# ER²Score App. A.2 "Prompt for RadCliQ Scoring System" (its error list restored to all six categories
# that its JSON format names).
RADCLIQ_GENERATION_PROMPT = """Given a ground truth diagnostic report, generate three similar predicted reports. These predicted reports should be rated based on the following error-counting rules. The reports should have three levels of errors: 1st level has 0 or 1 errors
2nd level has 2, 3 or 4 errors,
3rd level has 5 or 6 errors.

Error counting rule: Given a ground truth diagnostic report and a predicted report score the predicted report based on these error categories, each with significant and non-significant errors:
""" + radcliq_error_list() + """

For each error category, assign 1 point for significant errors and 1 point for non significant errors.
The find score is the sum of these points.
Please generate three predicted reports for the given ground truth report. After that, score these three pairs (each predicted report with the ground truth) based on the error categories mentioned.

ground_truth_report: {reference}
Output format:
```json
{{"ground truth report": "your ground truth report here",
"predicted reports": [
{{"predicted_report": "your_predicted_report_1",
"errors": {{"false_prediction": "your_score", "omission": "your_score", "incorrect_location": "your_score", "incorrect_severity": "your_score", "comparison_not_present": "your_score", "omission_of_comparison": "your_score"}},
"total_score": "your_total_score_1"}},
{{"predicted_report": "your_predicted_report_2", "errors": {{...}}, "total_score": "your_total_score_2"}},
{{"predicted_report": "your_predicted_report_3", "errors": {{...}}, "total_score": "your_total_score_3"}}
]}}
```
Please directly output the json file, no other contents"""


def parse_generation(text: str, convention: str = "paper") -> list[ScoredReport]:
    data = load_json_tolerant(text)
    reports = data.get("predicted reports") if isinstance(data, dict) else None
    if not isinstance(reports, list) or not reports:
        raise AnswerError("no 'predicted reports' list", retryable=True)
    out = []
    for item in reports:
        errors = item.get("errors") if isinstance(item, dict) else None
        if not isinstance(errors, dict) or not isinstance(item.get("predicted_report"), str):
            raise AnswerError("a predicted report lacks text or errors", retryable=True)
        try:
            # A.2's format elides the categories of reports 2 and 3 ("{...}"): a category left out counts 0.
            counts = read_radcliq_errors(errors, missing_as_zero=True)
        except ValueError as e:
            raise AnswerError(f"unreadable error score ({e})", retryable=True) from e
        _check_left_out_categories(errors, item, counts)
        out.append(ScoredReport(item["predicted_report"], radcliq_sub_scores(counts, convention)))
    return out


def _check_left_out_categories(errors: dict, item: dict, counts: ErrorCounts) -> None:
    """A category left out counts 0 only where the report's own total_score says so: "errors": {} with
    "total_score": 5 was read as 0 errors (its pairs dropped as ties, or ordered and margined by the categories
    given), where the teacher meant 5. A total that is not the sum of the categories given, or that cannot be read,
    leaves the left-out ones unknown: no single reading."""
    left_out = [key for key in RADCLIQ_KEYS if key not in {written_key(name) for name in errors}]
    totals = [value for name, value in item.items() if written_key(name) == "total_score"]
    if not left_out or not totals:
        return
    given = sum(counts.significant.values()) + sum((counts.insignificant or {}).values())
    try:
        stated = whole_count(totals[0], "total_score")
    except ValueError as e:
        raise AnswerError(f"a predicted report leaves out {', '.join(left_out)} and its total cannot say they are 0 "
                          f"({e})", retryable=True) from None
    if stated != given:
        raise AnswerError(f"a predicted report leaves out {', '.join(left_out)} and its total_score {stated} is not "
                          f"the {given} of the categories given: the left-out ones are not 0", retryable=True)


def generate_pairs(judge, references: Sequence[str], config: GenerationConfig | None = None,
                   convention: str = "paper") -> tuple[list[dict[str, Any]], list[str]]:
    """Pairs for every reference whose teacher answer could be read; the others are reported.
    convention: RadCliQ's pair direction (radmetrics.er2score.pairs): "paper" or "quality"."""
    answers = judge.generate([RADCLIQ_GENERATION_PROMPT.format(reference=r) for r in references],
                             config or GenerationConfig(), progress=False)
    pairs, problems = [], []
    direction = higher_is_better("radcliq", convention)  # what the sub-scores mean travels with each pair
    for i, (reference, answer) in enumerate(zip(references, answers)):
        if why := answer_problem(answer):
            problems.append(f"row {i + 1}: {why}")
            continue
        try:
            pairs.extend({**pair, "higher_is_better": direction}
                         for pair in build_pairs(reference, parse_generation(answer, convention)))
        except AnswerError as e:
            problems.append(f"row {i + 1}: {e}")
    return pairs, problems
