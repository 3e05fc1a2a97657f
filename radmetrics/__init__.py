"""radmetrics: LLM-judge metrics for radiology report generation on one shared judge backend.

Importing radmetrics imports no torch, transformers or evaluate; models load on first use.
"""
from radmetrics.errors import InputError, JudgeError, RadmetricsError, UnknownNameError
from radmetrics.hookspecs import hookimpl
from radmetrics.judge import get_judge
from radmetrics.plugins import get_scoring_system, list_judge_backends, list_scoring_systems, register_plugin
from radmetrics.runner import ScoreResult, judge_pairs, score
from radmetrics.scoring import ScoringSystem
from radmetrics.taxonomy import ErrorCounts
from radmetrics.types import GenerationConfig, GreenJudgment, Judgment

__version__ = "0.1.0"

__all__ = [
    "ErrorCounts", "GenerationConfig", "GreenJudgment", "InputError", "JudgeError", "Judgment", "RadmetricsError",
    "ScoreResult", "ScoringSystem", "UnknownNameError", "__version__", "get_judge", "get_scoring_system", "hookimpl",
    "judge_pairs", "list_judge_backends", "list_scoring_systems", "register_plugin", "score",
]
