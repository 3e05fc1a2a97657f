"""Registers GREEN as a default plugin, the same way a third party registers a scoring system."""
from radmetrics.green.system import GreenSystem
from radmetrics.hookspecs import hookimpl


@hookimpl
def register_scoring_systems(register):
    register(GreenSystem())
