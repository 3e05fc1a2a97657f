"""Registers VERT and its Formula / Rubric prompt variants as default plugins."""
from radmetrics.hookspecs import hookimpl
from radmetrics.vert.system import VertSystem, sample_overall_score


class VertFormulaSystem(VertSystem):
    name = score_key = "vert_formula"
    variant = "formula"
    evaluate_module = None


class VertRubricSystem(VertSystem):
    name = score_key = "vert_rubric"
    variant = "rubric"
    evaluate_module = None


class VertFineTunedSystem(VertSystem):
    """For judges fine-tuned with the VERT recipe (radmetrics train judge --recipe vert): the short user turn
    they were trained on, and a bare score in [0, 1] as the answer (VERT Sec. 4.1.4)."""

    name = score_key = "vert_ft"
    evaluate_module = None

    @property
    def prompt_version(self) -> str:  # type: ignore[override]
        return "vert-ft-1"

    def build_prompt(self, reference: str, candidate: str) -> str:
        from radmetrics.train.judge_sft import vert_user_turn

        return vert_user_turn(" ".join(reference.split()[: self.max_words]), " ".join(candidate.split()[: self.max_words]))

    def sample_answer(self, reference: str, candidate: str) -> str:
        return f"{sample_overall_score(reference, candidate):.1f}"

    def parse(self, text: str):
        from radmetrics.types import Judgment
        from radmetrics.vert.parse import VertParseError, read_bare_score

        try:
            value, written = read_bare_score(text)
        except VertParseError as e:
            return Judgment.unscored(str(e), raw=text if isinstance(text, str) else "")
        return Judgment(score=value, parsed=True, raw=text, details={"score_written": written})


@hookimpl
def register_scoring_systems(register):
    for system in (VertSystem(), VertFormulaSystem(), VertRubricSystem(), VertFineTunedSystem()):
        register(system)
