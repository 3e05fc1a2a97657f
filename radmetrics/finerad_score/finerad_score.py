"""FineRadScore as an evaluate module: evaluate.load("radmetrics/finerad_score", judge=...)."""
import evaluate

# Import the module, not the class: evaluate takes the first Metric subclass in this file's namespace.
from radmetrics import evaluate_support

_CITATION = """\
@inproceedings{huang2024fineradscore,
  title={FineRadScore: A Radiology Report Line-by-Line Evaluation Technique Generating Corrections with Severity Scores},
  author={Huang, Alyssa and Banerjee, Oishi and Wu, Kay and Pontes Reis, Eduardo and Rajpurkar, Pranav},
  booktitle={Machine Learning for Health (ML4H)},
  year={2024}
}
"""

_DESCRIPTION = """\
FineRadScore asks an LLM judge for the line-by-line corrections that turn a candidate radiology report into
the reference, each with a clinical severity (1 Not actionable ... 4 Emergent) and error categories.
Report score: the sum of severities (0 = no correction; lower is better), or the max with
system_options={"report_score": "max"}. Also returns the corrected report.
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, evaluate_support.JUDGE_KWARGS_DESCRIPTION)
class FineRadScore(evaluate_support.JudgeMetric):
    scoring_system_name = "finerad_score"
    description = _DESCRIPTION
    citation = _CITATION
    reference_urls = ["https://arxiv.org/abs/2405.20613"]
