"""The RadCliQ error-count rubric as an evaluate module: evaluate.load("radmetrics/radcliq", judge=...)."""
import evaluate

# Import the module, not the class: evaluate takes the first Metric subclass in this file's namespace.
from radmetrics import evaluate_support

_CITATION = """\
@article{yu2023radcliq,
  title={Evaluating progress in automatic chest X-ray radiology report generation},
  author={Yu, Feiyang and Endo, Mark and Krishnan, Rayan and others},
  journal={Patterns},
  year={2023}
}
"""

_DESCRIPTION = """\
An LLM judge counts clinically significant and insignificant errors in six RadCliQ categories (false
prediction, omission, location, severity, comparison not present, omitted comparison) with the ER2Score
App. A.2 error-counting rule. Score: the total error count (lower is better).
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, evaluate_support.JUDGE_KWARGS_DESCRIPTION)
class RadCliQ(evaluate_support.JudgeMetric):
    scoring_system_name = "radcliq"
    description = _DESCRIPTION
    citation = _CITATION
    reference_urls = ["https://github.com/rajpurkarlab/CXR-Report-Metric"]
