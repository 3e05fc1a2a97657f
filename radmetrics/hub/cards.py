"""Model cards rendered from hub_cards/model.md: training settings and evaluation results (model-index)
from lm-eval result files or `radmetrics meta-eval` results.json."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RECIPES = {"vert": ("vert_ft", "rexval_judge_vert_ft", "VERT recipe: direct overall score in [0, 1]"),
           "green": ("green", "rexval_judge", "GREEN-format error analyses from a teacher judge")}


def evaluations_from_files(paths: list[str | Path]) -> list[dict[str, Any]]:
    """[{"dataset", "metric", "value", "source"}] from lm-eval results_*.json or meta-eval results.json."""
    found = []
    for path in paths:
        data = json.loads(Path(path).read_text())
        if "results" in data and isinstance(data["results"], dict) and "configs" in data:  # lm-eval
            for task, metrics in data["results"].items():
                for key, value in metrics.items():
                    name = key.split(",")[0]
                    if name in {"kendall_tau", "mae_significant_errors", "unparsed"} and isinstance(value, (int, float)):
                        found.append({"dataset": task, "metric": name, "value": float(value), "source": "lm-eval"})
        elif "metrics" in data:  # meta-eval
            for metric, stats in data["metrics"].items():
                for key in ("kendall_tau_b", "spearman"):
                    if not isinstance(stats.get(key), dict) or stats[key].get("value") is None:
                        continue  # a metric that failed (n/a) or a file without correlations (compare)
                    found.append({"dataset": data.get("dataset", "expert set"), "metric": f"{metric} {key}",
                                  "value": float(stats[key]["value"]), "source": "radmetrics meta-eval"})
    return found


def render_model_card(repo_id: str, training: dict[str, Any], evaluations: list[dict[str, Any]],
                      data_description: str = "") -> str:
    import yaml

    from radmetrics.hub_cards import load_template

    config = training["config"]
    metric, task, description = RECIPES[config["recipe"]]
    front: dict[str, Any] = {
        "base_model": config["base_model"], "library_name": "transformers",
        "tags": ["radiology", "report-evaluation", "llm-judge", "radmetrics", f"radmetrics-{metric}"],
        "license": "other",
    }
    if evaluations:
        front["model-index"] = [{"name": repo_id, "results": [
            {"task": {"type": "text-generation", "name": "Radiology report judging"},
             "dataset": {"name": e["dataset"], "type": e["dataset"]},
             "metrics": [{"type": e["metric"], "value": round(e["value"], 4), "name": f"{e['metric']} ({e['source']})"}]}
            for e in evaluations]}]
    table = ("| dataset | metric | value | source |\n| --- | --- | ---: | --- |\n" + "\n".join(
        f"| {e['dataset']} | {e['metric']} | {e['value']:.4f} | {e['source']} |" for e in evaluations)
             if evaluations else "Not evaluated yet: run `lm_eval ... --tasks rexval_judge` or `radmetrics meta-eval` "
                                 "and push again with `--eval`.")
    losses = training.get("losses") or []
    return load_template("model").format(
        front_matter=yaml.safe_dump(front, sort_keys=False).strip(), repo_id=repo_id, recipe=config["recipe"],
        recipe_description=description, metric=metric, lm_eval_task=task, base_model=config["base_model"],
        data_description=data_description or training.get("data_description", "see training.json"),
        lora_r=config["lora_r"], lora_alpha=config["lora_alpha"], learning_rate=config["learning_rate"],
        train_examples=training.get("train_examples"), validation_examples=training.get("validation_examples"),
        final_loss=f"{losses[-1]:.4f}" if losses else "n/a", evaluation_table=table)
