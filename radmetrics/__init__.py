"""radmetrics: LLM-judge metrics for radiology report generation on one shared judge backend.

Importing radmetrics imports no torch, transformers or evaluate; models load on first use.
"""
from radmetrics.errors import InputError, JudgeError, MissingExtraError, RadmetricsError, UnknownNameError
from radmetrics.hookspecs import hookimpl
from radmetrics.hub_cards import sample_path
from radmetrics.judge import get_judge
from radmetrics.plugins import get_scoring_system, list_judge_backends, list_scoring_systems, register_plugin
from radmetrics.runner import ScoreResult, judge_pairs, score
from radmetrics.scoring import ScoringSystem
from radmetrics.taxonomy import ErrorCounts
from radmetrics.types import GenerationConfig, GreenJudgment, Judgment

__version__ = "0.1.0"


def compare(systems, references, metrics, ids=None, **kwargs):
    """Compare report generators on the same references (see radmetrics.meta.compare.compare)."""
    from radmetrics.meta.compare import compare as _compare

    return _compare(systems, references, metrics, ids, **kwargs)


def evaluate_module_path(name: str) -> str:
    """The file of radmetrics' evaluate module ``name`` (e.g. "green"), for ``evaluate.load(path)``: the module
    this installed radmetrics ships, whatever the Hub holds under "radmetrics/<name>"."""
    from radmetrics.evaluate_modules import all_evaluate_modules
    from radmetrics.plugins import plugin_install_hint

    modules = all_evaluate_modules()
    if name not in modules:
        raise UnknownNameError("evaluate module", name, modules, plugin_install_hint(name))
    return str(modules[name])


__all__ = [
    "ErrorCounts", "GenerationConfig", "GreenJudgment", "InputError", "JudgeError", "Judgment", "MissingExtraError",
    "RadmetricsError", "ScoreResult", "ScoringSystem", "UnknownNameError", "__version__", "compare",
    "evaluate_module_path", "get_judge",
    "get_scoring_system", "hookimpl",
    "judge_pairs", "list_judge_backends", "list_scoring_systems", "register_plugin", "sample_path", "score",
]
