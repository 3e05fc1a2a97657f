"""The RadCliQ rubric as a scoring system: ER²Score's RadCliQ-criteria error counts judged by an LLM.

Not RadCliQ-v1 (Yu et al. 2023's composite of BLEU, BERTScore, CheXbert and RadGraph): this room counts
errors in RadCliQ's six categories with ER²Score's App. A.2 rule (see README.md). Registered as
`radcliq_rubric`; the old name `radcliq` still works, with a DeprecationWarning.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from radmetrics.radcliq_rubric.parse import PARSER_VERSION, RubricJudgment, parse_radcliq
from radmetrics.radcliq_rubric.prompt import PROMPT_VERSION, build_radcliq_rubric_prompt
from radmetrics.scoring import ScoringSystem, word_comparison
from radmetrics.taxonomy import RADCLIQ_KEYS
from radmetrics.types import Judgment


class RadCliQRubricSystem(ScoringSystem):
    """Total error count in RadCliQ's six categories (lower is better), significant and insignificant."""

    higher_is_better = False
    name = "radcliq_rubric"
    score_key = "radcliq_rubric_errors"
    prompt_version = PROMPT_VERSION
    parser_version = PARSER_VERSION
    evaluate_module = str(Path(__file__).with_name("radcliq_rubric.py"))

    def build_prompt(self, reference: str, candidate: str) -> str:
        return build_radcliq_rubric_prompt(reference, candidate)

    def sample_answer(self, reference: str, candidate: str) -> str:
        """Every reference word the candidate lacks counted as a significant omission."""
        missing = len(word_comparison(reference, candidate)[2])
        errors = {key: {"significant": missing if key == "omission" else 0, "insignificant": 0} for key in RADCLIQ_KEYS}
        return json.dumps({"errors": errors, "total_score": missing})

    def parse(self, text: str) -> Judgment:
        return parse_radcliq(text)

    row_mean_names = {"mean_significant": RADCLIQ_KEYS, "mean_insignificant": RADCLIQ_KEYS}

    def row_means(self, judgment: Judgment) -> dict[str, Any] | None:
        if not isinstance(judgment, RubricJudgment) or judgment.score is None:
            return None
        return {"mean_significant": judgment.significant, "mean_insignificant": judgment.insignificant}
