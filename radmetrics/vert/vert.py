"""VERT as an evaluate module: evaluate.load("radmetrics/vert", judge=..., system_options={"variant": ...})."""
import evaluate

# Import the module, not the class: evaluate takes the first Metric subclass in this file's namespace.
from radmetrics import evaluate_support

_CITATION = """\
@article{vert2026,
  title={VERT: Evaluating Radiology Reports with LLM Judges that Score Directly},
  note={Preprint, under review},
  year={2026}
}
"""

_DESCRIPTION = """\
VERT asks an LLM judge for an overall accuracy score in [0, 1] of a candidate radiology report against a
reference, with GREEN's error analysis as the reasoning. system_options={"variant": "formula"} or
"rubric" select the Formula and Rubric prompts; {"shots_path": ..., "k": 5, "seed": 42} adds few-shot
examples, {"illustrations": True} the error-type illustrations.
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, evaluate_support.JUDGE_KWARGS_DESCRIPTION)
class Vert(evaluate_support.JudgeMetric):
    scoring_system_name = "vert"
    description = _DESCRIPTION
    citation = _CITATION
    reference_urls = []
