"""Registers FineRadScore as a default plugin."""
from radmetrics.finerad_score.system import FineRadScoreSystem
from radmetrics.hookspecs import hookimpl


@hookimpl
def register_scoring_systems(register):
    register(FineRadScoreSystem())
