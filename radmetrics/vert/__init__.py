"""VERT: an LLM judge asked directly for an overall accuracy score (plus Formula and Rubric prompts)."""
from radmetrics.vert.parse import read_overall_score
from radmetrics.vert.prompt import build_vert_prompt
from radmetrics.vert.system import VertSystem, load_shots

__all__ = ["VertSystem", "build_vert_prompt", "load_shots", "read_overall_score"]
