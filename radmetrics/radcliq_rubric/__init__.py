"""The RadCliQ rubric (ER²Score's RadCliQ-criteria error counts by an LLM judge; not RadCliQ-v1)."""
from radmetrics.radcliq_rubric.parse import RubricJudgment, parse_radcliq
from radmetrics.radcliq_rubric.system import RadCliQRubricSystem

__all__ = ["RadCliQRubricSystem", "RubricJudgment", "parse_radcliq"]
