"""MRScore for radmetrics, written as a third-party plugin: public API and the entry point only."""
import radmetrics

from radmetrics_mrscore.system import ITEMS, MRScoreSystem, mrscore_total

__all__ = ["ITEMS", "MRScoreSystem", "mrscore_total"]


@radmetrics.hookimpl
def register_scoring_systems(register):
    register(MRScoreSystem())
