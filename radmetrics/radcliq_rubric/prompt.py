"""The RadCliQ rubric's judging prompt: ER²Score App. A.2's "error counting rule" for one pair.

A.2 wrote the rule for generating training data (three reports and their scores); this prompt asks it of one
given (reference, candidate) pair and asks for both counts per category. Its error list is the one in
radmetrics.taxonomy, shared with ER²Score's teacher prompt (radmetrics/er2score/data.py).
"""
from __future__ import annotations

from radmetrics.taxonomy import radcliq_error_list

PROMPT_VERSION = "radcliq-er2score-A2-1"

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


def build_radcliq_rubric_prompt(reference: str, candidate: str) -> str:
    return PROMPT.format(reference=reference, candidate=candidate)
