"""MRScore (Liu et al. 2024; ER²Score Sec. 2.1 and App. A.2): seven yes/no error items with weights
30/20/20/10/10/5/5; Total = 100 - sum_i S_i * W_i."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import radmetrics
from radmetrics.json_answer import AnswerError, load_json_object, written_pairs
from radmetrics.scoring import ScoringSystem, mean_std_summary
from radmetrics.taxonomy import MRSCORE_ITEMS

#: (JSON key, item, what the judge checks, weight) - ER²Score App. A.2, defined once in radmetrics.taxonomy
ITEMS = MRSCORE_ITEMS

PROMPT = """You are a skilled radiologist. Evaluate a predicted radiology report against a ground truth report.
Compare the predicted report with the ground truth report to identify discrepancies between them. These discrepancies are defined according to the error items in the table below, each with a weight. Upon the detection of an error, its weight is deducted from the total score of 100.
The scoring rule is:
- Check the predicted report for the presence of each error item listed in the table below. Each item needs to be checked; mark 1 if the error is present and 0 if not.
- Final Score = 100 - sum(weight of each error present).
- For the first error item, 'impression consistency', if there is no impression section in the ground truth, this item does not count towards the score: mark it 0.

Error item | Description | Weight
{table}

The ground truth report is:
{reference}

The predicted report is:
{candidate}

Please format the result in a JSON format, with the analysis and the score separately:
{{"Scoring": {{{keys}}}, "Analysis": {{"<item key>": "<why>"}}, "Final Score": <number>}}
Please directly output the json, no other contents"""


def mrscore_total(errors: dict[str, int]) -> float:
    """100 - sum_i S_i W_i (S_i in {0, 1})."""
    return 100.0 - sum(errors[key] * weight for key, _, _, weight in ITEMS)


def _flag(value: Any, key: str, weight: int) -> int:
    """1 if the item is marked as an error. Accepts 0/1, yes/no, true/false, or the item's weight (A.2's
    example marks 'the corresponding score')."""
    if isinstance(value, bool):
        return int(value)
    text = "" if value is None else str(value).strip().lower()
    if text in {"", "none", "null", "n/a"}:  # left blank: not "no error" (its weight would come back unearned)
        raise ValueError(f"item '{key}' is left blank ({value!r}): expected 0/1 (or its weight {weight})")
    if text in {"0", "0.0", "no", "false"}:
        return 0
    if text in {"1", "1.0", "yes", "true", str(weight), f"{weight}.0", f"-{weight}"}:
        return 1
    raise ValueError(f"item '{key}' = {value!r}: expected 0/1 (or its weight {weight})")


class MRScoreSystem(ScoringSystem):
    name = "mrscore"
    score_key = "mrscore"
    prompt_version = "mrscore-er2score-A2-1"
    parser_version = "5"  # 3: an empty {} after an object is no single answer (radmetrics.json_answer); 4: a <think>
    # block is drafting, one left open unscored (json_answer; review 29b); 5: an item or 'Scoring' repeated with
    # another mark is no single answer (review 29b: read with its last mark)
    evaluate_module = str(Path(__file__).with_name("mrscore.py"))

    def build_prompt(self, reference: str, candidate: str) -> str:
        table = "\n".join(f"{name} ({key}) | {desc} | {weight}" for key, name, desc, weight in ITEMS)
        keys = ", ".join(f'"{key}": 0 or 1' for key, _, _, _ in ITEMS)
        return PROMPT.format(table=table, reference=reference, candidate=candidate, keys=keys)

    def sample_answer(self, reference: str, candidate: str) -> str:
        """Completeness marked when the candidate lacks a word of the reference; nothing else."""
        incomplete = int(bool(set(reference.lower().split()) - set(candidate.lower().split())))
        scoring = {key: (incomplete if key == "completeness" else 0) for key, *_ in ITEMS}
        return json.dumps({"Scoring": scoring, "Final Score": mrscore_total(scoring)})

    def parse(self, text: str) -> radmetrics.Judgment:
        body = text if isinstance(text, str) else ""
        try:
            data = load_json_object(body)
        except AnswerError as e:
            return radmetrics.Judgment.unscored(str(e), raw=body, retryable=e.retryable)
        scoring = data.get("Scoring")
        if not isinstance(scoring, dict):
            return radmetrics.Judgment.unscored("no 'Scoring' object in the output", raw=body)
        if len({json.dumps(value, sort_keys=True, default=repr) for key, value in written_pairs(data) if key == "Scoring"}) > 1:
            return radmetrics.Judgment.unscored("'Scoring' is given more than once with different marks: no single "
                                                "answer", raw=body, retryable=True)
        try:
            missing = [key for key, *_ in ITEMS if key not in scoring]
            if missing:
                raise ValueError(f"items missing: {', '.join(missing)}")
            errors = {key: _flag(scoring[key], key, weight) for key, _, _, weight in ITEMS}
            # a dict keeps a repeated item's last mark: an item marked twice, once 0 and once 1, has no single reading
            # (review 29b: read with its last mark)
            for key, value in written_pairs(scoring):
                weight = next((w for k, _, _, w in ITEMS if k == key), None)
                if weight is not None and _flag(value, key, weight) != errors[key]:
                    raise ValueError(f"item '{key}' is marked more than once, differently: no single answer")
        except ValueError as e:
            return radmetrics.Judgment.unscored(str(e), raw=body)
        details: dict[str, Any] = {"errors": errors, "analysis": data.get("Analysis")}
        total = mrscore_total(errors)
        try:
            judge_total = float(data.get("Final Score"))
            if judge_total != total:
                details["warnings"] = [f"judge Final Score {judge_total:g} != 100 - sum S_i W_i = {total:g}"]
        except (TypeError, ValueError):
            pass
        return radmetrics.Judgment(score=total, parsed=True, raw=body, details=details)

    def aggregate(self, judgments, **kwargs):
        result = mean_std_summary(self.score_key, judgments)
        scored = [j for j in judgments if j.score is not None]
        result["error_rate"] = {key: (sum(j.details["errors"][key] for j in scored) / len(scored) if scored else None)
                                for key, *_ in ITEMS}
        return result
