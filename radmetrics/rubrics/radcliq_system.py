"""RadCliQ error-count rubric (Yu et al. 2023; the scoring system ER²Score trains on, ER²Score App. A.2).

Six error categories, each counted as clinically significant or insignificant; the total is the sum of
all counts (ER²Score Sec. 2.1: "The total score is the sum of the error counts"). The prompt turns A.2's
"error counting rule" (written there for generating training data) into a judging prompt for one pair.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from radmetrics.json_answer import AnswerError, load_json_tolerant
from radmetrics.scoring import ScoringSystem, mean_std_summary, word_comparison
from radmetrics.taxonomy import RADCLIQ_KEYS, radcliq_error_list, read_radcliq_errors
from radmetrics.types import Judgment

PROMPT_VERSION = "radcliq-er2score-A2-1"
PARSER_VERSION = "1"


PROMPT = """Given a ground truth diagnostic report and a predicted report, score the predicted report based on these error categories, each with significant and non-significant errors:
""" + radcliq_error_list() + """

For each error category, count the clinically significant errors and the clinically non-significant errors. The total score is the sum of these counts.

ground_truth_report: {reference}
predicted_report: {candidate}

Output format:
```json
{{
  "errors": {{
    "false_prediction": {{"significant": 0, "insignificant": 0}},
    "omission": {{"significant": 0, "insignificant": 0}},
    "incorrect_location": {{"significant": 0, "insignificant": 0}},
    "incorrect_severity": {{"significant": 0, "insignificant": 0}},
    "comparison_not_present": {{"significant": 0, "insignificant": 0}},
    "omission_of_comparison": {{"significant": 0, "insignificant": 0}}
  }},
  "total_score": 0
}}
```
Please directly output the json file, no other contents"""


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
    if not isinstance(data, dict) or not isinstance(data.get("errors"), dict):
        return RubricJudgment(score=None, parsed=False, reason="no 'errors' object in the output", raw=text or "")
    try:
        counts = read_radcliq_errors(data["errors"])
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


class RadCliQSystem(ScoringSystem):
    """Total RadCliQ error count (lower is better) with per-category significant/insignificant counts."""
    higher_is_better = False

    name = "radcliq"
    score_key = "radcliq_errors"
    prompt_version = PROMPT_VERSION
    parser_version = PARSER_VERSION
    evaluate_module = str(Path(__file__).with_name("radcliq.py"))

    def build_prompt(self, reference: str, candidate: str) -> str:
        return PROMPT.format(reference=reference, candidate=candidate)

    def sample_answer(self, reference: str, candidate: str) -> str:
        """Every reference word the candidate lacks counted as a significant omission."""
        missing = len(word_comparison(reference, candidate)[2])
        errors = {key: {"significant": missing if key == "omission" else 0, "insignificant": 0} for key in RADCLIQ_KEYS}
        return json.dumps({"errors": errors, "total_score": missing})

    def parse(self, text: str) -> Judgment:
        return parse_radcliq(text)

    def aggregate(self, judgments: Sequence[Judgment], **kwargs: Any) -> dict[str, Any]:
        result = mean_std_summary(self.score_key, judgments)
        scored = [j for j in judgments if isinstance(j, RubricJudgment) and j.score is not None]
        for kind in ("significant", "insignificant"):
            result[f"mean_{kind}"] = {k: (sum(getattr(j, kind)[k] for j in scored) / len(scored) if scored else None)
                                      for k in RADCLIQ_KEYS}
        return result
