"""ER²Score: a multi-criteria reward model for radiology reports (MRE loss, LoRA, per-criterion rewards)."""
from radmetrics.er2score.loss import mre_loss
from radmetrics.er2score.pairs import CRITERIA, ScoredReport, build_pairs, quality_scores, reward_input

__all__ = ["CRITERIA", "ScoredReport", "build_pairs", "mre_loss", "quality_scores", "reward_input"]
