"""The RadCliQ rubric as an evaluate module: evaluate.load("radmetrics/radcliq_rubric", judge=...)."""
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
ER²Score's RadCliQ-criteria rubric (not RadCliQ-v1, the BLEU/BERTScore/CheXbert/RadGraph composite): an LLM
judge counts clinically significant and insignificant errors in RadCliQ's six categories (false prediction,
omission, location, severity, comparison not present, omitted comparison) with the ER²Score App. A.2
error-counting rule. Score: the total error count (lower is better).
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, evaluate_support.JUDGE_KWARGS_DESCRIPTION)
class RadCliQRubric(evaluate_support.JudgeMetric):
    scoring_system_name = "radcliq_rubric"
    description = _DESCRIPTION
    citation = _CITATION
    reference_urls = ["https://github.com/rajpurkarlab/CXR-Report-Metric"]
