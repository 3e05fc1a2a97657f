"""Base class for scoring systems: prompt in, Judgment out, and the corpus aggregate.

Subclasses implement `build_prompt` and `parse` as pure functions of strings. Nothing here calls a model.
"""
from __future__ import annotations

import copy
import math
import re
from collections.abc import Sequence
from typing import Any

from radmetrics.types import Judgment


class ScoringSystem:
    name: str = ""
    #: bumped whenever the prompt text changes; travels in every result fingerprint
    prompt_version: str = "1"
    #: bumped whenever parsing changes what a given text scores
    parser_version: str = "1"
    #: the key under which `compute()` / the CLI report the corpus score
    score_key: str = "score"
    #: path of the room's evaluate module file (e.g. radmetrics/green/green.py), if it has one
    evaluate_module: str | None = None
    #: the judge model used when the user names none
    default_judge: str | None = None
    #: direction of `score`: meta-evaluation orients correlations so that positive means agreement
    higher_is_better: bool = True

    def build_prompt(self, reference: str, candidate: str) -> str:
        raise NotImplementedError

    def parse(self, text: str) -> Judgment:
        raise NotImplementedError

    def configure(self, **options: Any) -> ScoringSystem:
        """A copy with options set as attributes; unknown options are an error naming the valid ones."""
        clone = copy.copy(self)
        for key, value in options.items():
            if not hasattr(clone, key) or key.startswith("_"):
                from radmetrics.errors import RadmetricsError

                raise RadmetricsError(f"Scoring system '{self.name}' has no option '{key}'.")
            setattr(clone, key, value)
        return clone

    def fingerprint(self) -> dict[str, str]:
        return {"scoring_system": self.name, "prompt_version": self.prompt_version,
                "parser_version": self.parser_version}

    def aggregate(self, judgments: Sequence[Judgment]) -> dict[str, Any]:
        """Corpus summary: mean and population std (ddof=0, as GREEN's np.std) over scored rows."""
        return mean_std_summary(self.score_key, judgments)


def mean_std_summary(key: str, judgments: Sequence[Judgment]) -> dict[str, Any]:
    scores = [j.score for j in judgments if j.score is not None]
    n = len(scores)
    mean = sum(scores) / n if n else None
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / n) if n else None
    return {
        key: mean,
        f"{key}_std": std,
        "num_scored": n,
        "num_unscored": len(judgments) - n,
        "unscored_reasons": count_reasons(judgments),
    }


def count_reasons(judgments: Sequence[Judgment]) -> dict[str, int]:
    """How many rows went unscored for each reason (row numbers dropped so that reasons group)."""
    reasons: dict[str, int] = {}
    for j in judgments:
        if j.score is None:
            reason = re.sub(r"^row \d+: ", "", j.reason or "unknown")
            reasons[reason] = reasons.get(reason, 0) + 1
    return reasons
