"""Registers the RadCliQ rubric as a default plugin."""
from radmetrics.hookspecs import hookimpl
from radmetrics.radcliq_rubric.system import RadCliQRubricSystem


@hookimpl
def register_scoring_systems(register):
    register(RadCliQRubricSystem())
