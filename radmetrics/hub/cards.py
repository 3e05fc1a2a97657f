"""Model cards rendered from hub_cards/model.md: training settings and evaluation results (model-index)
from lm-eval result files or `radmetrics meta-eval` results.json. The metadata follows the Hub's documented
rules (https://huggingface.co/docs/hub/model-cards): `base_model` is a Hub model id or absent, model-index
results carry a dataset id in `dataset.type` and metric types without spaces, adapters say `library_name: peft`."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from radmetrics.errors import RadmetricsError

RECIPES = {"vert": ("vert_ft", "rexval_judge_vert_ft", "VERT recipe: direct overall score in [0, 1]"),
           "green": ("green", "rexval_judge", "GREEN-format error analyses from a teacher judge")}

#: a Hub repository id: "name" or "owner/name", letters, digits, "-", "_", "." (no "--" / ".." / leading ".")
_HUB_ID = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")

#: lm-eval task prefix -> (dataset id used in model-index when none is given, readable name)
TASK_DATASETS = {"rexval": ("rexval", "ReXVal"), "radeval": ("radeval", "RadEval"),
                 "rate_eval": ("rate_eval", "RaTE-Eval")}


def hub_model_id(name: str | None, local: bool | None = None) -> str | None:
    """`name` when it can be a Hub model id; None for a local folder (an absolute or relative path that
    exists, or anything that is not id-shaped), which the Hub refuses in `base_model`."""
    if not name:
        return None
    if local is None:
        local = Path(name).expanduser().exists()
    if local or not _HUB_ID.match(name) or ".." in name or "--" in name or name.endswith((".", "-")):
        return None
    return name


def _metric_type(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")


def _judged_here(model: Any, pushed: tuple[str, Path] | None) -> bool:
    """Whether a result's judge is the model being pushed: its repo id, or the same folder."""
    if pushed is None:
        return True
    repo_id, folder = pushed
    if not isinstance(model, str) or not model:
        return False
    if model == repo_id:
        return True
    try:
        return Path(model).expanduser().resolve() == folder.resolve()
    except OSError:
        return False


def _lm_eval_model(data: dict[str, Any]) -> str | None:
    """The model lm-eval graded: `pretrained=` (or `model=`) of its model_args, when the file says."""
    args = (data.get("config") or {}).get("model_args")
    if isinstance(args, dict):
        return args.get("pretrained") or args.get("model")
    if isinstance(args, str):
        for part in args.split(","):
            key, _, value = part.partition("=")
            if key.strip() in ("pretrained", "model"):
                return value.strip()
    return None


def _refuse_a_limited_run(path: str | Path, data: dict[str, Any]) -> None:
    """An lm-eval run with --limit graded a subset (lm-eval: "REAL METRICS SHOULD NOT BE COMPUTED USING LIMIT");
    its τ is not the dataset's and must not be published as it (review 27, H2)."""
    counts = data.get("n-samples") if isinstance(data.get("n-samples"), dict) else {}
    counted = False
    for task, n in counts.items():
        if isinstance(n, dict) and isinstance(n.get("effective"), int) and isinstance(n.get("original"), int):
            counted = True
            if n["effective"] < n["original"]:
                raise RadmetricsError(f"--eval {path}: lm-eval graded {n['effective']} of the {n['original']} "
                                      f"documents of {task} (a --limit run): its numbers are not the dataset's. Rerun "
                                      "lm_eval without --limit")
    # where lm-eval wrote what it graded, that decides (a --limit of 100 or 1.0 on 20 documents grades them all);
    # else a limit may have cut the set
    limit = (data.get("config") or {}).get("limit")
    if not counted and limit not in (None, 0):
        raise RadmetricsError(f"--eval {path}: an lm-eval run with --limit {limit} graded a subset: its numbers are "
                              "not the dataset's. Rerun lm_eval without --limit")


def evaluations_from_files(paths: list[str | Path], dataset_id: str | dict[str, str] | None = None,
                           pushed: tuple[str, str | Path] | None = None) -> list[dict[str, Any]]:
    """[{"task", "dataset", "dataset_name", "metric", "value", "source"}] from lm-eval results_*.json or
    meta-eval results.json. `dataset` is the dataset id for model-index: the pushed copy of each expert set
    (`dataset_id`: {"rexval": "my-lab/rexval", ...}, or one id when the results are of one set only), else the
    expert set's short name. A NaN (a τ the judge's answers could not give) is kept with value None: shown as
    n/a in the table, left out of model-index.

    pushed: (repo id, folder) of the model whose card these results go into. Then only results judged by that
    model are taken: a meta-eval report's baselines (no judge) and metrics another judge ran are left out, and
    a file with none of this model's results is an error; a card must not show them as this model's."""
    found = []
    target = None if pushed is None else (pushed[0], Path(pushed[1]))
    for path in paths:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise RadmetricsError(f"--eval {path}: not readable JSON ({type(e).__name__}: {e})") from e
        before = len(found)
        if isinstance(data, dict) and isinstance(data.get("results"), dict) and "configs" in data:  # lm-eval
            graded = _lm_eval_model(data)
            if graded is not None and not _judged_here(graded, target):
                raise RadmetricsError(f"--eval {path} graded {graded}, not the model pushed ({target[0]}, "
                                      f"{target[1]}): its numbers are not this model's")
            _refuse_a_limited_run(path, data)
            for task, metrics in data["results"].items():
                prefix = next((p for p in sorted(TASK_DATASETS, key=len, reverse=True) if task.startswith(p)), None)
                default_id, readable = TASK_DATASETS.get(prefix, (_metric_type(task), task))
                for key, value in metrics.items():
                    name = key.split(",")[0]
                    if name in {"kendall_tau", "mae_significant_errors", "unparsed"} and isinstance(value, (int, float)):
                        found.append({"task": task, "dataset": default_id,
                                      "dataset_name": f"{readable} (lm-eval task {task})", "metric": name,
                                      "value": _finite(value), "source": "lm-eval"})
        elif isinstance(data, dict) and isinstance(data.get("metrics"), dict):  # meta-eval
            name = data.get("dataset") or "expert set"
            others = set()
            for metric, stats in data["metrics"].items():
                if target is not None:
                    judge = ((stats.get("fingerprint") or {}).get("judge") or {}).get("model")
                    if not _judged_here(judge, target):
                        others.add(str(judge) if judge else f"{metric} (no judge)")
                        continue
                for key in ("kendall_tau_b", "spearman"):
                    if not isinstance(stats.get(key), dict) or stats[key].get("value") is None:
                        continue  # a metric that failed (n/a) or a file without correlations (compare)
                    found.append({"task": "meta-eval", "dataset": _metric_type(name),
                                  "dataset_name": f"{name} (radmetrics meta-eval)", "metric": _metric_type(f"{metric}_{key}"),
                                  "value": _finite(stats[key]["value"]), "source": "radmetrics meta-eval"})
            if target is not None and len(found) == before:
                raise RadmetricsError(f"--eval {path} has no result judged by the model pushed ({target[0]}, "
                                      f"{target[1]}); its metrics were run by: {', '.join(sorted(others)) or 'none'}")
        else:  # a file of neither kind would replace the card's evaluation with nothing
            raise RadmetricsError(f"--eval {path}: not an lm-eval results_*.json nor a meta-eval results.json "
                                  "(no 'results' and 'configs', no 'metrics')")
    return _with_dataset_ids(found, dataset_id)


def _with_dataset_ids(found: list[dict[str, Any]], dataset_id: str | dict[str, str] | None) -> list[dict[str, Any]]:
    """Each result's `dataset` as the Hub id given for its expert set (review 19: one --eval-dataset was written as
    the dataset of every result, RadEval's and RaTE-Eval's numbers published as ReXVal's)."""
    if not dataset_id:
        return found
    sets = sorted({e["dataset"] for e in found})
    if isinstance(dataset_id, str):
        if len(sets) > 1:
            raise RadmetricsError(f"--eval-dataset {dataset_id} names one dataset, but the results are of "
                                  f"{', '.join(sets)}: give one per set, e.g. --eval-dataset {sets[0]}={dataset_id}")
        dataset_id = dict.fromkeys(sets, dataset_id)
    unknown = sorted(set(dataset_id) - set(sets))
    if unknown:
        raise RadmetricsError(f"--eval-dataset {unknown[0]}=...: the results have no {unknown[0]} set (they are of "
                              f"{', '.join(sets) or 'none'})")
    return [{**e, "dataset": dataset_id.get(e["dataset"], e["dataset"])} for e in found]


def _finite(value: Any) -> float | None:
    value = float(value)
    return None if math.isnan(value) or math.isinf(value) else value


def model_index(repo_id: str, evaluations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The canonical model-index: one result per (task, dataset) with all its metrics."""
    grouped: dict[tuple[str, str], dict[str, Any]] = {}
    for e in evaluations:
        key = (e.get("task", ""), e["dataset"])
        result = grouped.setdefault(key, {
            "task": {"type": "text-generation", "name": "Radiology report judging"},
            "dataset": {"type": e["dataset"], "name": e.get("dataset_name", e["dataset"])},
            "metrics": []})
        if e["value"] is not None:  # a NaN is no result (the Hub would publish ".nan")
            result["metrics"].append({"type": e["metric"], "value": round(e["value"], 4),
                                      "name": f"{e['metric']} ({e['source']})"})
    return [{"name": repo_id.split("/")[-1], "results": [r for r in grouped.values() if r["metrics"]]}]


def evaluation_table(evaluations: list[dict[str, Any]]) -> str:
    if not evaluations:
        return ("Not evaluated yet: run `lm_eval ... --tasks rexval_judge` or `radmetrics meta-eval` "
                "and push again with `--eval`.")
    return ("| dataset | metric | value | source |\n| --- | --- | ---: | --- |\n" + "\n".join(
        f"| {e.get('dataset_name', e['dataset'])} | {e['metric']} | "
        f"{'n/a' if e['value'] is None else format(e['value'], '.4f')} | {e['source']} |"
        for e in evaluations))


def is_adapter(folder: str | Path) -> bool:
    return (Path(folder) / "adapter_config.json").is_file()


def render_model_card(repo_id: str, training: dict[str, Any], evaluations: list[dict[str, Any]],
                      data_description: str = "", adapter: bool = False, base_model_id: str | None = None) -> str:
    """The card of a judge trained by `radmetrics train judge` (training = its training.json).

    base_model_id: the base's Hub id when training used a local copy of it; without it a local base is
    named in the card's text only (the Hub accepts only model ids in `base_model`)."""
    import yaml

    from radmetrics.hub_cards import load_template

    config = training["config"]
    metric, task, description = RECIPES[config["recipe"]]
    base = config["base_model"]
    hub_base = base_model_id or hub_model_id(base, training.get("base_model_is_local"))
    front: dict[str, Any] = {}
    if hub_base:
        front["base_model"] = hub_base
    front["library_name"] = "peft" if adapter else "transformers"
    front["pipeline_tag"] = "text-generation"
    front["tags"] = ["radiology", "report-evaluation", "llm-judge", "radmetrics", f"radmetrics-{metric}"]
    if adapter:
        front["tags"].append("lora")
    if evaluations:
        front["model-index"] = model_index(repo_id, evaluations)
    base_text = (f"[`{hub_base}`](https://huggingface.co/{hub_base})" if hub_base
                 else f"a local model folder (`{Path(base).name}`; not a Hub model, so no `base_model` metadata)")
    losses = training.get("losses") or []
    from radmetrics.plugins import get_scoring_system

    as_module = get_scoring_system(metric).evaluate_module is not None  # vert_ft has no evaluate module of its own
    if as_module:
        python_usage = (f'import evaluate\nmetric = evaluate.load("radmetrics/{metric}", judge="{repo_id}")\n'
                        "metric.compute(predictions=generated_reports, references=reference_reports)")
    else:
        python_usage = (f'import radmetrics\nresult = radmetrics.score("{metric}", reference_reports, generated_reports, '
                        f'judge="{repo_id}")\nresult.summary["{metric}"], result.scores')
    return load_template("model").format(
        python_usage=python_usage, through_evaluate=", evaluate" if as_module else "",
        front_matter=yaml.safe_dump(front, sort_keys=False).strip(), repo_id=repo_id, recipe=config["recipe"],
        recipe_description=description, metric=metric, lm_eval_task=task, base_model=base_text,
        data_description=data_description or training.get("data_description", "see training.json"),
        lora_r=config["lora_r"], lora_alpha=config["lora_alpha"], learning_rate=config["learning_rate"],
        train_examples=training.get("train_examples"), validation_examples=training.get("validation_examples"),
        final_loss=f"{losses[-1]:.4f}" if losses else "n/a", evaluation_table=evaluation_table(evaluations))


def update_model_card(card_text: str | None, repo_id: str, evaluations: list[dict[str, Any]]) -> str:
    """`hub push --eval` without --training: put the evaluations into the folder's existing card (model-index
    and the Evaluation section), or into a minimal card when the folder has none."""
    from huggingface_hub import ModelCard

    if not card_text:
        card_text = (f"---\nlibrary_name: transformers\ntags:\n- radiology\n- llm-judge\n- radmetrics\n---\n\n"
                     f"# {repo_id}\n\nA radiology report judge evaluated with radmetrics.\n\n## Evaluation\n")
    card = ModelCard(card_text)
    card.data.model_index = None
    card.data.eval_results = None
    metadata = card.data.to_dict()
    metadata.pop("model-index", None)
    if evaluations:
        metadata["model-index"] = model_index(repo_id, evaluations)
    import yaml

    body = card.text
    table = evaluation_table(evaluations)
    if "\n## Evaluation\n" in f"\n{body}":
        head, _, rest = f"\n{body}".partition("\n## Evaluation\n")
        after = rest.split("\n## ", 1)
        body = head[1:] + "\n## Evaluation\n" + table + "\n" + (("\n## " + after[1]) if len(after) > 1 else "")
    else:
        body = body.rstrip() + "\n\n## Evaluation\n" + table + "\n"
    return f"---\n{yaml.safe_dump(metadata, sort_keys=False).strip()}\n---\n{body}"
