"""Rubric scoring systems: an LLM judge fills a fixed rubric (RadCliQ error counts; MRScore is a plugin)."""
from radmetrics.radcliq_rubric.system import RADCLIQ_KEYS, RadCliQSystem, RubricJudgment, parse_radcliq

__all__ = ["RADCLIQ_KEYS", "RadCliQSystem", "RubricJudgment", "parse_radcliq"]
