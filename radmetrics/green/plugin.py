"""Registers GREEN as a default plugin, the same way a third party registers a scoring system."""
from radmetrics.green.system import (
    GreenECSystem,
    GreenF1System,
    GreenFormulaSystem,
    GreenSystem,
    GreenTotalErrorsSystem,
)
from radmetrics.hookspecs import hookimpl


@hookimpl
def register_scoring_systems(register):
    for system in (GreenSystem(), GreenF1System(), GreenECSystem(), GreenTotalErrorsSystem(), GreenFormulaSystem()):
        register(system)
