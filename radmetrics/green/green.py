"""GREEN as an evaluate module: evaluate.load("radmetrics/green", backend=..., judge=...)."""
import evaluate

# Import the module, not the class: evaluate takes the first Metric subclass in this file's namespace.
from radmetrics import evaluate_support

_CITATION = """\
@inproceedings{ostmeier2024green,
  title={GREEN: Generative Radiology Report Evaluation and Error Notation},
  author={Ostmeier, Sophie and Xu, Justin and Chen, Zhihong and Varma, Maya and Blankemeier, Louis and
          Bluethgen, Christian and Michalson, Arne Edward and Moseley, Michael and Langlotz, Curtis and
          Chaudhari, Akshay S and Delbrouck, Jean-Benoit},
  booktitle={Findings of EMNLP},
  year={2024}
}
"""

_DESCRIPTION = """\
GREEN counts clinically significant and insignificant errors of six types (a)-(f) between a candidate
and a reference radiology report with a fine-tuned LLM judge, and scores
matched findings / (matched findings + significant errors), 0 when there are no matched findings.
Outputs the judge wrote that cannot be read are unscored with a reason, never 0.
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, evaluate_support.JUDGE_KWARGS_DESCRIPTION)
class Green(evaluate_support.JudgeMetric):
    scoring_system_name = "green"
    description = _DESCRIPTION
    citation = _CITATION
    reference_urls = ["https://github.com/Stanford-AIMI/GREEN", "https://arxiv.org/abs/2405.03595"]
