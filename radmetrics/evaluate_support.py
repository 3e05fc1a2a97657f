"""Shared base for radmetrics' `evaluate` modules (imported only by the module files).

A module file (e.g. radmetrics/green/green.py) stays a few lines: it names its scoring system and its
card text; loading options (backend, judge, cache...) and `_compute` live here, on `radmetrics.score`.
"""
from __future__ import annotations

import inspect
from collections import Counter
from typing import Any

import datasets
import evaluate

from radmetrics.types import GenerationConfig

JUDGE_KWARGS_DESCRIPTION = """
Loading options (evaluate.load("radmetrics/<metric>", ...)):
    backend (str): judge backend: "transformers" (default, in process), "openai", "replay", or a plugin's (`radmetrics list`).
    judge (str): model id or path for the judge (defaults to the metric's published judge).
    judge_options (dict): backend options, e.g. {"base_url": ..., "revision": ..., "path": "replay.jsonl"}.
    cache: response-cache path, or False to turn it off (default ~/.cache/radmetrics/judgments.sqlite).
    max_new_tokens (int): generation limit (default 1024).
    system_options (dict): scoring-system options, e.g. VERT {"shots_path": "shots.jsonl", "k": 5}.
    summary (bool): GREEN's clustered error summary in the output (GREEN only); summary_model (str): its
        embedding model (default paraphrase-mpnet-base-v2).
    progress (bool): a progress bar while the judge runs (default True).
    Any other name is an error naming these.
Args (compute):
    predictions (list of str): generated (candidate) reports; a value that is not text (a number, None) is
        unscored with the reason, never judged as its text. One string instead of a list is an error (its
        characters are no reports).
    references (list of str): reference reports, one per prediction (the same rule).
Returns:
    <score key> (float; the metric's name, or e.g. radcliq_rubric_errors for radcliq_rubric, as its card says):
    corpus mean over scored samples; <score key>_std: population std; scores: per sample (None
    when unscored); details: per sample parsed fields, `parsed`, `reason`, raw judge text;
    num_unscored; fingerprint (judge, revision, prompt version, generation settings).
"""


class JudgeMetric(evaluate.Metric):
    """An evaluate Metric backed by a radmetrics scoring system on the shared judge."""

    scoring_system_name: str = ""
    description: str = ""
    citation: str = ""
    reference_urls: list[str] = []

    def __init__(self, backend: str = "transformers", judge: str | None = None,
                 judge_options: dict[str, Any] | None = None, cache: Any = None, max_new_tokens: int = 1024,
                 summary: bool = False, summary_model: str | None = None, progress: bool = True,
                 system_options: dict[str, Any] | None = None, **kwargs: Any):
        # evaluate.EvaluationModule takes **kwargs and drops what it does not know: a misspelt option
        # (judgee=...) would be ignored without a word. Only evaluate's own arguments pass.
        known = [p for p in inspect.signature(evaluate.EvaluationModule.__init__).parameters if p not in ("self", "kwargs")]
        unknown = sorted(set(kwargs) - set(known))
        if unknown:
            from radmetrics.errors import UnknownNameError

            ours = [p for p in inspect.signature(JudgeMetric.__init__).parameters if p not in ("self", "kwargs")]
            raise UnknownNameError(f"radmetrics/{self.scoring_system_name} option", unknown[0], ours + known)
        super().__init__(**kwargs)
        self.backend = backend
        self.judge = judge
        self.judge_options = dict(judge_options or {})
        self.cache = cache
        self.generation = GenerationConfig(max_new_tokens=max_new_tokens)
        self.summary = summary
        self.summary_model = summary_model
        self.progress = progress
        self.system_options = system_options
        # the values as the caller gave them: evaluate's string features turn 123 into "123" before _compute, and
        # a number is no report (review 19: they were judged; radmetrics.score leaves them unscored, and so do we)
        self._given: tuple[list[Any], list[Any]] = ([], [])

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch of predictions and references (kept as given, too: see `_compute`)."""
        from radmetrics.io import check_report_lists

        check_report_lists(references, predictions, names=("references", "predictions"))
        super().add_batch(predictions=predictions, references=references, **kwargs)
        self._given[0].extend(predictions if predictions is not None else [])
        self._given[1].extend(references if references is not None else [])

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Add one prediction and reference (kept as given, too: see `_compute`)."""
        super().add(prediction=prediction, reference=reference, **kwargs)
        self._given[0].append(prediction)
        self._given[1].append(reference)

    def _enforce_nested_string_type(self, schema: Any, obj: Any) -> None:
        """evaluate refuses a batch whose FIRST value is not text (it checks that one only), so [None, "x"] was a
        ValueError while ["x", None] left the None unscored (review 24, M2). A module here takes any value, wherever
        it stands, and `_compute` leaves what is not text unscored with its reason, as `radmetrics.score` does."""

    def _as_given(self, predictions: list[Any], references: list[Any], given: tuple[list[Any], list[Any]]
                  ) -> tuple[list[Any], list[Any]]:
        """The (prediction, reference) pairs as given when they are this computation's (not, e.g., another
        process's rows). evaluate 0.4.1 with datasets 3.0 hands add()'s rows to _compute after add_batch()'s: the
        same pairs in another order are matched by their texts, as pairs (review 21, M2: matching each column on
        its own let an int prediction's verdict move to another row whose prediction read the same)."""
        def shown(value: Any) -> Any:
            return value if value is None or isinstance(value, str) else str(value)

        encoded = list(zip(predictions, references))
        pairs = list(zip(*given))
        if len(pairs) != len(encoded) or len(given[0]) != len(given[1]):
            return list(predictions), list(references)
        try:
            keys = [(shown(p), shown(r)) for p, r in pairs]
            if keys == encoded:  # in the order given
                return list(given[0]), list(given[1])
            by_text: dict[Any, list[tuple[Any, Any]]] = {}
            for key, pair in zip(keys, pairs):
                by_text.setdefault(key, []).append(pair)
            if Counter(keys) == Counter(encoded):
                # rows whose texts are the same are told apart by nothing evaluate keeps: given order among them
                taken = Counter()
                chosen = []
                for key in encoded:
                    chosen.append(by_text[key][taken[key]])
                    taken[key] += 1
                return [p for p, _ in chosen], [r for _, r in chosen]
        except TypeError:  # a value that cannot be a key (a list): as encoded
            pass
        return list(predictions), list(references)

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=self.description,
            citation=self.citation,
            inputs_description=JUDGE_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            reference_urls=self.reference_urls,
        )

    def _compute(self, predictions, references, summary: bool | None = None) -> dict[str, Any]:
        import radmetrics

        given, self._given = self._given, ([], [])
        predictions, references = self._as_given(predictions, references, given)
        result = radmetrics.score(
            self.scoring_system_name, references, predictions, backend=self.backend, judge=self.judge,
            judge_options=self.judge_options, cache=self.cache, config=self.generation, progress=self.progress,
            summary=self.summary if summary is None else summary, summary_model=self.summary_model,
            system_options=self.system_options,
        )
        output = dict(result.summary)
        output["scores"] = result.scores
        output["details"] = [j.to_dict() for j in result.judgments]
        output["fingerprint"] = result.fingerprint
        return output
