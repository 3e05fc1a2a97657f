"""Embedding and clinical baselines, each through the library that defines it (imported on first use).

| name | library call (defaults) | per pair | direction |
| --- | --- | --- | --- |
| bertscore | bert-score `bert_score.score(cands, refs, model_type="distilroberta-base", num_layers=5, lang="en", idf=False, rescale_with_baseline=True)`: RadCliQ-v1's BERTScore model and layer (CXR-Report-Metric) | F1 | higher |
| radgraph-f1 | radgraph `F1RadGraph(reward_level="partial", model_type="radgraph")(refs=, hyps=)` (RadCliQ's RG_ER) | reward | higher |
| f1chexbert | f1chexbert `F1CheXbert()(hyps=[h], refs=[r])`, report `cr_5` micro-avg F1 (5 observations; `labels=14` for all 14) | F1 | higher |
| ratescore | RaTEScore `RaTEScore().compute_score(candidates, references)` | score | higher |
| er2score | radmetrics' own ER²Score reward model (`er2score:model=<folder>`, trained by `radmetrics train er2score`) | sum of rewards; per-criterion rewards as extra columns | higher |
| radcliq-v1 | RadEval `radeval.metrics.RadCliQv1.radcliq.CompositeMetric().predict(refs, hyps)[1]` (coefficients of CXR-Report-Metric) | RadCliQ-v1 | lower |

bertscore accepts a local model folder (`bertscore:model_type=/path:num_layers=2:rescale_with_baseline=false`);
the clinical scorers download their weights from the Hugging Face Hub on first use (StanfordAIMI/RRG_scorers,
Angelakeke/RaTE-NER-Deberta, ...): offline without a cached copy they fail, as an "n/a" with the reason.
"""
from __future__ import annotations

from typing import Any

from radmetrics.baselines import Baseline, register_baseline
from radmetrics.errors import optional_import


def _bertscore(references: list[str], candidates: list[str], options: dict[str, Any]) -> list[float]:
    bert_score = optional_import("bert_score", "baselines", "by the bertscore baseline")
    _, _, f1 = bert_score.score(candidates, references, model_type=options["model_type"],
                                num_layers=options["num_layers"], lang=options["lang"], idf=options["idf"],
                                rescale_with_baseline=options["rescale_with_baseline"],
                                batch_size=options["batch_size"], verbose=False)
    return [float(v) for v in f1.tolist()]


register_baseline(Baseline(
    "bertscore", True,
    {"library": "bert-score", "call": "bert_score.score", "value": "F1",
     "source": "model and layer of RadCliQ-v1's BERTScore (rajpurkarlab/CXR-Report-Metric)"},
    _bertscore, {"model_type": "distilroberta-base", "num_layers": 5, "lang": "en", "idf": False,
                 "rescale_with_baseline": True, "batch_size": 64}))


def _radgraph_f1(references: list[str], candidates: list[str], options: dict[str, Any]) -> list[float]:
    radgraph = optional_import("radgraph", "clinical", "by the radgraph-f1 baseline")
    scorer = radgraph.F1RadGraph(reward_level=options["reward_level"], model_type=options["model_type"])
    _, rewards, _, _ = scorer(refs=references, hyps=candidates)
    return [float(v) for v in rewards]


register_baseline(Baseline(
    "radgraph-f1", True,
    {"library": "radgraph", "call": "radgraph.F1RadGraph(...)(refs=, hyps=)", "value": "per-report reward"},
    _radgraph_f1, {"reward_level": "partial", "model_type": "radgraph"}))


def _f1chexbert(references: list[str], candidates: list[str], options: dict[str, Any]) -> list[float | None]:
    module = optional_import("f1chexbert", "clinical", "by the f1chexbert baseline")
    scorer = module.F1CheXbert()
    report = "cr_5" if int(options["labels"]) == 5 else "cr"
    out: list[float | None] = []
    for ref, cand in zip(references, candidates):
        _, _, cr, cr_5 = scorer(hyps=[cand], refs=[ref])
        table = cr_5 if report == "cr_5" else cr
        micro = table[f"{options['average']} avg"]
        # F1 is undefined when neither report names any of the observations (no positive label on either
        # side): unscored, not 0 (sklearn would say 0 with a warning)
        out.append(None if micro["support"] == 0 and not _any_positive(scorer, cand, report) else
                   float(micro["f1-score"]))
    return out


def _any_positive(scorer, report_text: str, report: str) -> bool:
    labels = scorer.get_label(report_text.strip())
    if report == "cr_5":
        labels = [labels[i] for i in scorer.target_names_5_index]
    return any(v == 1 for v in labels)


register_baseline(Baseline(
    "f1chexbert", True,
    {"library": "f1chexbert", "call": "f1chexbert.F1CheXbert()(hyps=[h], refs=[r])",
     "value": "F1 of CheXbert labels of the pair (5 observations by default)",
     "unscored": "pairs where neither report has a positive label (F1 undefined)"},
    _f1chexbert, {"labels": 5, "average": "micro"}))


def _ratescore(references: list[str], candidates: list[str], options: dict[str, Any]) -> list[float]:
    module = optional_import("RaTEScore", "clinical", "by the ratescore baseline")
    scorer = module.RaTEScore(**{k: v for k, v in options.items() if v is not None})
    return [float(v) for v in scorer.compute_score(list(candidates), list(references))]


register_baseline(Baseline(
    "ratescore", True, {"library": "RaTEScore", "call": "RaTEScore().compute_score(candidates, references)",
                        "value": "RaTEScore"},
    _ratescore, {"bert_model": None, "eval_model": None, "batch_size": None, "use_gpu": None}))


def _radcliq_v1(references: list[str], candidates: list[str], options: dict[str, Any]) -> list[float]:
    optional_import("radeval", "radeval", "by the radcliq-v1 baseline")
    from radeval.metrics.RadCliQv1.radcliq import CompositeMetric

    _, scores = CompositeMetric().predict(list(references), list(candidates))
    return [float(v) for v in scores]


def _er2score(references: list[str], candidates: list[str], options: dict[str, Any]):
    if not options["model"]:
        raise ValueError("er2score needs its trained model: -m er2score:model=<folder or Hub id> "
                         "(radmetrics train er2score writes one)")
    from radmetrics.er2score.model import MultiRewardModel

    model = MultiRewardModel.load(options["model"], base_model=options["base_model"])
    results = model.score(list(references), list(candidates), batch_size=int(options["batch_size"]))
    return ([r["er2score"] for r in results],
            {c: [r["rewards"][c] for r in results] for c in model.criteria})


register_baseline(Baseline(
    "er2score", True,
    {"library": "radmetrics.er2score", "call": "MultiRewardModel.load(model).score(references, candidates)",
     "value": "sum of per-criterion rewards (per-criterion rewards kept as extra columns)"},
    _er2score, {"model": None, "base_model": None, "batch_size": 8}))


register_baseline(Baseline(
    "radcliq-v1", False,
    {"library": "RadEval", "call": "radeval.metrics.RadCliQv1.radcliq.CompositeMetric().predict(refs, hyps)[1]",
     "value": "RadCliQ-v1 (estimated error count; lower is better)"},
    _radcliq_v1, {}))
