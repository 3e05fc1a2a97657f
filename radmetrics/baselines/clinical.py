"""Embedding and clinical baselines, each through the library that defines it (imported on first use).

| name | library call (defaults) | per pair | direction |
| --- | --- | --- | --- |
| bertscore | bert-score `bert_score.score(cands, refs, model_type="distilroberta-base", num_layers=5, lang="en", idf=False, rescale_with_baseline=True)`: RadCliQ-v1's BERTScore model and layer (CXR-Report-Metric) | F1 | higher |
| radgraph-f1 | radgraph `F1RadGraph(reward_level="partial", model_type="radgraph")(refs=, hyps=)` (RadCliQ's RG_ER) | reward | higher |
| f1chexbert | f1chexbert `F1CheXbert()(hyps=[h], refs=[r])`, report `cr_5` micro-avg F1 (5 observations; `labels=14` for all 14) | F1 | higher |
| ratescore | RaTEScore `RaTEScore().compute_score(candidates, references)` | score | higher |
| er2score | radmetrics' own ER²Score reward model (`er2score:model=<folder>`, trained by `radmetrics train er2score`) | sum of rewards; per-criterion rewards as extra columns | higher |
| radcliq-v1 | RadEval `radeval.metrics.RadCliQv1.radcliq.CompositeMetric().predict(refs, hyps)[1]` (coefficients of CXR-Report-Metric) | RadCliQ-v1 | lower |

An empty candidate is scored (see `baselines/__init__.py`): bert-score sets an empty candidate's raw F1 to 0 and
rescales it like any other value (computed here, `_bertscore_empty`); radgraph gives an empty hypothesis reward 0;
f1chexbert labels "", RadCliQ-v1 (RadEval) runs its sub-metrics on "" and ER²Score's model reads it, each like any
report; RaTEScore cannot be given one (see its registration) and scores it 0.5, its value for a candidate without
entities. A library that fails on "" leaves that row unscored with its error.

bertscore accepts a local model folder (`bertscore:model_type=/path:num_layers=2:rescale_with_baseline=false`);
the clinical scorers download their weights from the Hugging Face Hub on first use (StanfordAIMI/RRG_scorers,
Angelakeke/RaTE-NER-Deberta, ...). Before any judging (`Baseline.check`) each library must be installed, and what it
downloads must be here when HF_HUB_OFFLINE=1 (or the Hub reachable): RaTEScore's two models and f1chexbert's
bert-base-uncased in the Hugging Face cache, chexbert.pth and the RadGraph model in the folders those libraries keep
them in (as f1chexbert 0.0.x and radgraph 0.1.x lay them out; another release, or a library without appdirs, is not looked
into: its weights are not refused for a guess). RadCliQ-v1's downloads (RadEval's sub-metrics) are not checked ahead: offline without
them it fails as an "n/a" with the reason.
"""
from __future__ import annotations

from typing import Any

from radmetrics.baselines import Baseline, register_baseline
from radmetrics.errors import RadmetricsError, optional_import


def _bertscore(references: list[str], candidates: list[str], options: dict[str, Any]) -> list[float]:
    bert_score = optional_import("bert_score", "baselines", "by the bertscore baseline")
    _, _, f1 = bert_score.score(candidates, references, model_type=options["model_type"],
                                num_layers=options["num_layers"], lang=options["lang"], idf=options["idf"],
                                rescale_with_baseline=options["rescale_with_baseline"],
                                batch_size=options["batch_size"], verbose=False)
    return [float(v) for v in f1.tolist()]


def _check_bertscore(options: dict[str, Any]) -> None:
    """bert-score is installed and its model is a local folder, in the Hugging Face cache, or downloadable now
    (the checks a judge model gets, `check_hub_model`): nothing imported beyond huggingface_hub, nothing loaded."""
    from radmetrics.errors import require_installed
    from radmetrics.judge.preflight import check_hub_model

    require_installed("bert_score", "baselines", "by the bertscore baseline")
    check_hub_model(str(options["model_type"]), what="bertscore model", flag="-m bertscore:model_type=FOLDER")


def _bertscore_empty(options: dict[str, Any]) -> float:
    """What bert-score gives an empty candidate, without giving it one: raw P, R and F set to 0 (bert_score.utils
    greedy_cos_idf: "Empty candidate sentence detected; setting raw BERTscores to 0."), then rescaled like every value
    (bert_score.score: (value - baseline) / (1 - baseline), F from the model's baseline file at row num_layers; no
    rescaling, as there, when the library has no baseline file for the model). Not left to the library: bert-score
    0.3.13 encodes "" with tokenizer.build_inputs_with_special_tokens, which transformers 5 removed."""
    import csv
    import os

    if not options["rescale_with_baseline"]:
        return 0.0
    bert_score = optional_import("bert_score", "baselines", "by the bertscore baseline")
    # the file and row bert_score.score reads (pd.read_csv(path).iloc[num_layers]; columns LAYER, P, R, F)
    path = os.path.join(os.path.dirname(bert_score.__file__),
                        f"rescale_baseline/{options['lang']}/{options['model_type']}.tsv")
    if not os.path.isfile(path):
        return 0.0
    with open(path, newline="", encoding="utf-8") as fh:
        baseline = float(list(csv.DictReader(fh))[int(options["num_layers"])]["F"])
    return (0.0 - baseline) / (1.0 - baseline)


register_baseline(Baseline(
    "bertscore", True,
    {"library": "bert-score", "call": "bert_score.score", "value": "F1",
     "source": "model and layer of RadCliQ-v1's BERTScore (rajpurkarlab/CXR-Report-Metric)",
     "empty_candidate": "bert-score's: raw F1 0, rescaled with the model's baseline"},
    _bertscore, {"model_type": "distilroberta-base", "num_layers": 5, "lang": "en", "idf": False,
                 "rescale_with_baseline": True, "batch_size": 64}, empty_candidate=_bertscore_empty,
    check=_check_bertscore))


# -- what the clinical libraries download, checked before any judging -----------------------------------------
_RRG_SCORERS = "StanfordAIMI/RRG_scorers"  # radgraph's and f1chexbert's weights


def _check_download(found: bool, baseline: str, what: str, fetch: str) -> None:
    """What `baseline`'s library downloads on first use is here (`found`), or can be downloaded now; else one line with
    `fetch`, the command that downloads it. No request is sent: one TCP connect to the Hub when it is not here."""
    import os

    from radmetrics.judge.preflight import can_connect, hub_offline

    if found:
        return
    if hub_offline():
        raise RadmetricsError(f"The {baseline} baseline needs {what}, which is not here, and HF_HUB_OFFLINE=1 forbids "
                              f"downloading it: {fetch} where there is network")
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    if not can_connect(endpoint):
        raise RadmetricsError(f"The {baseline} baseline needs {what}, which is not here, and {endpoint} cannot be "
                              f"reached (no network?): {fetch} where there is network")


def _check_hub_model(model: str, baseline: str, what: str) -> None:
    """A model the library loads with from_pretrained: a local folder, or in the Hugging Face cache."""
    from pathlib import Path

    from radmetrics.judge.preflight import hub_cached

    found = Path(model).expanduser().is_dir() or hub_cached(model)
    _check_download(found, baseline, f"{what} '{model}'", f"`hf download {model}`")


#: the library releases whose download folders were read (f1chexbert 0.0.2, radgraph 0.1.18): another release may
#: keep its downloads elsewhere, and an offline run with its weights in place must not be refused for our guess
_KNOWN_LAYOUTS = {"radgraph": "0.1.", "f1chexbert": "0.0."}


def _user_cache_dir(app: str, distribution: str) -> str | None:
    """The folder ``distribution`` keeps its downloads in (appdirs, which radgraph and f1chexbert depend on); None
    without appdirs or for a release whose layout is not known here: then nothing is refused."""
    import importlib.metadata

    try:
        import appdirs

        version = importlib.metadata.version(distribution)
    except (ImportError, importlib.metadata.PackageNotFoundError):
        return None
    return appdirs.user_cache_dir(app) if version.startswith(_KNOWN_LAYOUTS[distribution]) else None


def _check_radgraph(options: dict[str, Any]) -> None:
    """radgraph is installed; its model is unpacked in radgraph's cache (<user cache>/radgraph/<version>/<model_type>,
    radgraph 0.1.18) or its archive downloaded there, and the BERT models its config names are in the HF cache."""
    import importlib.metadata
    import json
    import os

    from radmetrics.errors import require_installed

    require_installed("radgraph", "clinical", "by the radgraph-f1 baseline")
    root = _user_cache_dir("radgraph", "radgraph")
    if root is None:
        return
    cache = os.path.join(root, importlib.metadata.version("radgraph"))
    model_type = str(options["model_type"])
    model_dir = os.path.join(cache, model_type)
    archive = f"{model_type}.tar.gz"
    unpacked = os.path.isdir(model_dir) and bool(os.listdir(model_dir))
    _check_download(unpacked or _in_hub_cache(_RRG_SCORERS, archive, cache), "radgraph-f1",
                    f"the RadGraph model '{model_type}' ({archive} of {_RRG_SCORERS})",
                    f"`hf download {_RRG_SCORERS} {archive} --cache-dir {cache}`")
    try:
        with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as fh:
            config = json.load(fh)
        bert = {config["dataset_reader"]["token_indexers"]["bert"]["model_name"],
                config["model"]["embedder"]["token_embedders"]["bert"]["model_name"]}
    except (OSError, ValueError, KeyError, TypeError):  # not unpacked yet: radgraph reads it after unpacking
        return
    for model in sorted(bert):
        _check_hub_model(model, "radgraph-f1", "the BERT model")


def _in_hub_cache(repo: str, filename: str, cache_dir: str | None = None) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    return isinstance(try_to_load_from_cache(repo, filename, cache_dir=cache_dir), str)


def _check_f1chexbert(options: dict[str, Any]) -> None:
    """f1chexbert is installed; bert-base-uncased (its tokenizer and BERT config) is in the HF cache and chexbert.pth
    in f1chexbert's cache (<user cache>/chexbert/chexbert.pth, f1chexbert 0.0.2)."""
    import os

    from radmetrics.errors import require_installed

    require_installed("f1chexbert", "clinical", "by the f1chexbert baseline")
    _check_hub_model("bert-base-uncased", "f1chexbert", "the tokenizer and BERT config")
    cache = _user_cache_dir("chexbert", "f1chexbert")
    if cache is not None:
        _check_download(os.path.isfile(os.path.join(cache, "chexbert.pth")), "f1chexbert",
                        f"CheXbert's weights (chexbert.pth of {_RRG_SCORERS})",
                        f"`hf download {_RRG_SCORERS} chexbert.pth --local-dir {cache}`")


#: RaTEScore 0.6's models when its options do not name others (RaTEScore.__init__'s defaults)
_RATESCORE_MODELS = {"bert_model": "Angelakeke/RaTE-NER-Deberta", "eval_model": "FremyCompany/BioLORD-2023-C"}


def _check_ratescore(options: dict[str, Any]) -> None:
    """RaTEScore is installed and its two models (NER and synonym encoder) are local folders or in the HF cache."""
    from radmetrics.errors import require_installed

    require_installed("RaTEScore", "clinical", "by the ratescore baseline")
    for option, default in _RATESCORE_MODELS.items():
        _check_hub_model(str(options.get(option) or default), "ratescore", f"the model ({option})")


def _check_radcliq_v1(options: dict[str, Any]) -> None:
    from radmetrics.errors import require_installed

    require_installed("radeval", "radeval", "by the radcliq-v1 baseline")


def _radgraph_f1(references: list[str], candidates: list[str], options: dict[str, Any]) -> list[float]:
    radgraph = optional_import("radgraph", "clinical", "by the radgraph-f1 baseline")
    scorer = radgraph.F1RadGraph(reward_level=options["reward_level"], model_type=options["model_type"])
    _, rewards, _, _ = scorer(refs=references, hyps=candidates)
    return [float(v) for v in rewards]


register_baseline(Baseline(
    "radgraph-f1", True,
    {"library": "radgraph", "call": "radgraph.F1RadGraph(...)(refs=, hyps=)", "value": "per-report reward"},
    _radgraph_f1, {"reward_level": "partial", "model_type": "radgraph"}, check=_check_radgraph))


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
    _f1chexbert, {"labels": 5, "average": "micro"}, check=_check_f1chexbert))


def _ratescore(references: list[str], candidates: list[str], options: dict[str, Any]) -> list[float]:
    module = optional_import("RaTEScore", "clinical", "by the ratescore baseline")
    scorer = module.RaTEScore(**{k: v for k, v in options.items() if v is not None})
    return [float(v) for v in scorer.compute_score(list(candidates), list(references))]


# An empty candidate cannot be passed to RaTEScore: its run_ner keeps one entry per report with at least one
# sentence (utils.sentence_split drops blank ones), so an empty report shifts every later pair onto the wrong
# reference (MAGIC-AI4Med/RaTEScore, RaTEScore/scorer.py compute_score). Its own rule for a candidate in which
# the NER finds no entity is 0.5 ("if the length of gt or pred is 0, the score is 0.5", same file; also in
# RadEval's copy): that is what an empty candidate scores here, without a call.
register_baseline(Baseline(
    "ratescore", True, {"library": "RaTEScore", "call": "RaTEScore().compute_score(candidates, references)",
                        "value": "RaTEScore",
                        "empty_candidate": "0.5, RaTEScore's score for a candidate without entities"},
    _ratescore, {"bert_model": None, "eval_model": None, "batch_size": None, "use_gpu": None},
    empty_candidate=0.5, check=_check_ratescore))


def _radcliq_v1(references: list[str], candidates: list[str], options: dict[str, Any]) -> list[float]:
    optional_import("radeval", "radeval", "by the radcliq-v1 baseline")
    from radeval.metrics.RadCliQv1.radcliq import CompositeMetric

    _, scores = CompositeMetric().predict(list(references), list(candidates))
    return [float(v) for v in scores]


def _check_er2score(options: dict[str, Any]) -> None:
    if not options["model"]:
        raise RadmetricsError("er2score needs its trained model: -m er2score:model=<folder or Hub id> "
                              "(radmetrics train er2score writes one)")
    from radmetrics.judge.preflight import check_hub_model

    check_hub_model(str(options["model"]), what="er2score model", flag="-m er2score:model=FOLDER")


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
    _er2score, {"model": None, "base_model": None, "batch_size": 8}, check=_check_er2score))


register_baseline(Baseline(
    "radcliq-v1", False,
    {"library": "RadEval", "call": "radeval.metrics.RadCliQv1.radcliq.CompositeMetric().predict(refs, hyps)[1]",
     "value": "RadCliQ-v1 (estimated error count; lower is better)"},
    _radcliq_v1, {}, check=_check_radcliq_v1))
