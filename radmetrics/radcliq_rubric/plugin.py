"""Registers the built-in rubric scoring systems as default plugins."""
from radmetrics.hookspecs import hookimpl
from radmetrics.radcliq_rubric.system import RadCliQSystem


@hookimpl
def register_scoring_systems(register):
    register(RadCliQSystem())
