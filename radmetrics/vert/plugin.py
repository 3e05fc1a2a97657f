"""Registers VERT and its Formula / Rubric prompt variants as default plugins."""
from radmetrics.hookspecs import hookimpl
from radmetrics.vert.system import VertSystem


class VertFormulaSystem(VertSystem):
    name = score_key = "vert_formula"
    variant = "formula"
    evaluate_module = None


class VertRubricSystem(VertSystem):
    name = score_key = "vert_rubric"
    variant = "rubric"
    evaluate_module = None


@hookimpl
def register_scoring_systems(register):
    for system in (VertSystem(), VertFormulaSystem(), VertRubricSystem()):
        register(system)
