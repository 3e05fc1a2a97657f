"""MRScore as an evaluate module: evaluate.load("radmetrics/mrscore") after `radmetrics install-metrics`."""
import evaluate

# Import the module, not the class: evaluate takes the first Metric subclass in this file's namespace.
from radmetrics import evaluate_support

_CITATION = """\
@article{liu2024mrscore,
  title={MRScore: Evaluating Radiology Report Generation with LLM-based Reward System},
  author={Liu, Yunyi and Wang, Zhanyu and Li, Yingshu and others},
  journal={arXiv preprint arXiv:2404.17778},
  year={2024}
}
"""

_DESCRIPTION = """\
MRScore: an LLM judge marks seven error items (impression consistency 30, impression organ 20, description
of lesion 20, clinical history 10, completeness 10, grammar 5, medical terminology 5); score = 100 - sum of
the weights of the items in error (higher is better).
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, evaluate_support.JUDGE_KWARGS_DESCRIPTION)
class MRScore(evaluate_support.JudgeMetric):
    scoring_system_name = "mrscore"
    description = _DESCRIPTION
    citation = _CITATION
    reference_urls = ["https://arxiv.org/abs/2404.17778"]
