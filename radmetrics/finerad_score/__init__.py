"""FineRadScore: line-by-line corrections of a candidate report with clinical severity (1-4)."""
from radmetrics.finerad_score.parse import apply_corrections, parse_corrections
from radmetrics.finerad_score.prompt import build_finerad_prompt, split_lines
from radmetrics.finerad_score.system import FineRadJudgment, FineRadScoreSystem

__all__ = ["FineRadJudgment", "FineRadScoreSystem", "apply_corrections", "build_finerad_prompt",
           "parse_corrections", "split_lines"]
