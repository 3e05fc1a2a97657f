"""lm-evaluation-harness glue for the radmetrics judge tasks: grade any model as a judge against experts.

Data come from `--metadata` (e.g. '{"rexval_path": "/data/rexval"}') or the environment
(RADMETRICS_REXVAL_PATH, ...): a folder with the original files (converted on the fly), a folder written
by `radmetrics data convert`, or a Hub dataset id. Never a path relative to the working directory
that the task guesses. Prompts, parsing and statistics are radmetrics' own (the same code as the CLI).
"""
from __future__ import annotations

import json
import math
import os

PATH_KEYS = {"rexval": "rexval_path", "radeval": "radeval_path", "rate_eval": "rate_eval_path"}


def _source(dataset: str, metadata: dict) -> str:
    key = PATH_KEYS[dataset]
    value = metadata.get(key) or os.environ.get(f"RADMETRICS_{key.upper()}")
    if not value:
        raise ValueError(f"Task data not given: pass --metadata '{{\"{key}\": \"<folder or Hub id>\"}}' "
                         f"or set RADMETRICS_{key.upper()}.")
    return str(value)


def _load(dataset: str, source: str):
    from radmetrics.data import open_expert_dataset

    # a missing folder is named as such, not taken silently for a Hub id
    return open_expert_dataset(dataset, source, f"{PATH_KEYS[dataset]} {source!r}")


def load_judge_dataset(**metadata):
    """custom_dataset: the expert dataset with each doc's judge prompt for the task's scoring system."""
    import datasets

    import radmetrics
    from radmetrics.judge.chat_formats import render_text

    dataset = metadata["dataset"]
    system = radmetrics.get_scoring_system(metadata["scoring_system"], **metadata.get("system_options", {}))
    # carried with each doc: process_results reads the answer with the same options (report_score=max, ...)
    options_text = json.dumps(metadata.get("system_options", {}), sort_keys=True)
    data = _load(dataset, _source(dataset, metadata))
    chat_format, eos = metadata.get("chat_format", "none"), metadata.get("eos_token", "</s>")

    def add_prompt(doc):
        prompt = system.build_prompt(doc["reference"], doc["candidate"])
        return {"judge_prompt": render_text(prompt, chat_format, eos), "scoring_system": system.name,
                "system_options": options_text}

    return datasets.DatasetDict({"test": data.map(add_prompt)})


def process_results(doc, results):
    import radmetrics

    from radmetrics.runner import read_answer

    system = radmetrics.get_scoring_system(doc["scoring_system"], **json.loads(doc.get("system_options") or "{}"))
    judgment = read_answer(system, results[0], doc["reference"], doc["candidate"])
    score = judgment.score
    oriented = None if score is None else (score if system.higher_is_better else -score)
    raw_expert = doc["expert_score"]  # None where the expert annotation could not be read
    expert = None if raw_expert is None else (raw_expert if doc["expert_higher_is_better"] else -raw_expert)
    significant = judgment.significant_errors()
    predicted_errors = float(sum(significant)) if significant is not None else None
    expert_errors = float(sum(doc["expert_significant"])) if doc.get("expert_significant") else None
    return {
        "kendall_tau": (oriented, expert),
        "mae_significant_errors": (predicted_errors, expert_errors),
        "unparsed": 0.0 if judgment.parsed else 1.0,
    }


def kendall_tau(items):
    """Kendall τ-b between judge and expert, both oriented so that positive τ means agreement."""
    from radmetrics.meta.stats import kendall_tau as tau

    judge, expert = zip(*items) if items else ((), ())
    return tau(list(judge), list(expert), resamples=0).value


def mae(items):
    from radmetrics.meta.stats import mae as mean_absolute_error

    predicted, expert = zip(*items) if items else ((), ())
    value = mean_absolute_error(list(predicted), list(expert))["mae"]
    return value if not math.isnan(value) else float("nan")
