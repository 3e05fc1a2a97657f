"""Registers VERT and its variants (radmetrics/vert/system.py) as default plugins."""
from radmetrics.hookspecs import hookimpl
from radmetrics.vert.system import VertFineTunedSystem, VertFormulaSystem, VertRubricSystem, VertSystem


@hookimpl
def register_scoring_systems(register):
    for system in (VertSystem(), VertFormulaSystem(), VertRubricSystem(), VertFineTunedSystem()):
        register(system)
