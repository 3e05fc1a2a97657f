"""ER²Score as an evaluate module: evaluate.load("radmetrics/er2score", model=<trained folder or Hub id>)."""
import datasets
import evaluate

_CITATION = """\
@article{er2score2024,
  title={ER2Score: LLM-based Explainable and Customizable Metric for Assessing Radiology Reports with Reward-Control Loss},
  year={2024}
}
"""

_DESCRIPTION = """\
ER2Score: a reward model (LLM backbone with LoRA and a linear multi-reward head) trained with the Margin
Reward Enforcement loss to give one reward per criterion of a scoring system (RadCliQ: 6 error categories;
MRScore: 7 items); the score is their sum (higher is better). Train one with `radmetrics train er2score`.
"""

_KWARGS = """
Loading options: model (folder or Hub id written by `radmetrics train er2score`), base_model (override the
recorded base), batch_size.
Args: predictions (list of str), references (list of str).
Returns: er2score (mean), er2score_std, scores (per sample), criteria (per sample reward per criterion).
"""

_MODELS = {}


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS)
class ER2Score(evaluate.Metric):
    def __init__(self, model=None, base_model=None, batch_size=8, **kwargs):
        import inspect

        from radmetrics.errors import UnknownNameError
        from radmetrics.types import is_whole_number

        # evaluate.EvaluationModule drops keyword arguments it does not know: `modle=` loaded without a word
        # (review 34). Only evaluate's own arguments pass, as in radmetrics' judge modules.
        known = [p for p in inspect.signature(evaluate.EvaluationModule.__init__).parameters if p not in ("self", "kwargs")]
        unknown = sorted(set(kwargs) - set(known))
        if unknown:
            raise UnknownNameError("radmetrics/er2score option", unknown[0], ["model", "base_model", "batch_size", *known])
        if not is_whole_number(batch_size) or batch_size < 1:
            # 0 was range()'s ValueError traceback at compute, -1 scored nothing (statistics' "fmean requires at
            # least one data point")
            from radmetrics.errors import RadmetricsError

            raise RadmetricsError(f"ER2Score batch_size must be a whole number of at least 1, not {batch_size!r}")
        super().__init__(**kwargs)
        self.model_path, self.base_model, self.batch_size = model, base_model, batch_size

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch; what is not a list of reports is refused in one line (review 34: one string was scored
        character by character, a None was an AttributeError in the tokenizer, a number scored as its digits)."""
        _check_reports(predictions, references)
        super().add_batch(predictions=predictions, references=references, **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Add one pair (the same checks)."""
        _check_reports([prediction], [reference])
        super().add(prediction=prediction, reference=reference, **kwargs)

    def _info(self):
        return evaluate.MetricInfo(description=_DESCRIPTION, citation=_CITATION, inputs_description=_KWARGS,
                                   features=datasets.Features({"predictions": datasets.Value("string"),
                                                               "references": datasets.Value("string")}))

    def _compute(self, predictions, references):
        import statistics

        from radmetrics.er2score.model import MultiRewardModel
        from radmetrics.errors import RadmetricsError

        if not self.model_path:
            raise RadmetricsError("ER2Score needs model=<folder or Hub id of a trained ER2Score model>")
        key = (str(self.model_path), self.base_model)
        if key not in _MODELS:
            _MODELS[key] = MultiRewardModel.load(self.model_path, base_model=self.base_model)
        results = _MODELS[key].score(references, predictions, batch_size=self.batch_size)
        totals = [r["er2score"] for r in results]
        return {"er2score": statistics.fmean(totals), "er2score_std": statistics.pstdev(totals), "scores": totals,
                "criteria": [r["rewards"] for r in results], "higher_is_better": _MODELS[key].higher_is_better}


def _check_reports(predictions, references):
    from radmetrics.errors import InputError
    from radmetrics.io import check_report_lists

    check_report_lists(predictions, references, names=("predictions", "references"))
    for name, values in (("predictions", predictions), ("references", references)):
        for i, value in enumerate(values if values is not None else []):
            if not isinstance(value, str):
                shown = "None" if value is None else f"{type(value).__name__} ({value!r:.40})"
                raise InputError(f"{name}[{i}] is {shown}, not a report: ER2Score scores text only")
