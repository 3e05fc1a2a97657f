"""lm-evaluation-harness glue for the radmetrics judge tasks: grade any model as a judge against experts.

Data come from `--metadata` (e.g. '{"rexval_path": "/data/rexval"}') or the environment
(RADMETRICS_REXVAL_PATH, ...): a folder with the original files (converted on the fly), a folder written
by `radmetrics data convert`, or a Hub dataset id. Never a path relative to the working directory
that the task guesses. Prompts, parsing and statistics are radmetrics' own (the same code as the CLI).
"""
from __future__ import annotations

import json
import logging
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
    from radmetrics.errors import InputError
    from radmetrics.runner import pair_problem

    # a missing folder is named as such, not taken silently for a Hub id
    data = open_expert_dataset(dataset, source, f"{PATH_KEYS[dataset]} {source!r}")
    # lm-eval sends every doc to the model: a row with no report to judge (a None candidate in a dataset converted
    # from a cut download, a missing-value marker) was an AttributeError deep in the prompt (review 39b)
    problems = [f"{row.get('id', i)}: {why}" for i, row in enumerate(data)
                if (why := pair_problem(row["reference"], row["candidate"]))]
    if problems:
        raise InputError(f"{PATH_KEYS[dataset]} {source!r}: {len(problems)} of {len(data)} rows cannot be judged "
                         f"({'; '.join(problems[:3])}{'; ...' if len(problems) > 3 else ''}): lm-eval sends every "
                         "row to the model, so fix the dataset (convert the original files again), or grade the "
                         "judge with `radmetrics meta-eval`, which leaves such rows unscored")
    return data


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

    # in memory: a map written to cache files left each pair's report text in cache-*.arrow files beside the
    # user's converted dataset (review 39b), and one served from them skips the function (see below)
    data = data.map(add_prompt, keep_in_memory=True, load_from_cache_file=False)
    target = metadata.get("expert_target")
    if target:  # what kendall_tau grades against, when not the dataset's expert_score (meta-eval's --target)
        from radmetrics.meta.targets import expert_target

        values, higher_is_better, _ = expert_target(data, target)
        data = data.add_column("target_value", values).add_column("target_higher_is_better",
                                                                  [higher_is_better] * len(data))
    return datasets.DatasetDict({"test": data})


#: the example turns every `_chat` task's prompt carries (the YAML's num_fewshot; FineRadScore's five, both layouts)
CHAT_EXAMPLES = 5


def load_judge_conversations(**metadata):
    """custom_dataset of the ``_chat`` tasks: each doc's conversation prompt (FineRadScore's official turns) cut
    into lm-eval's parts, so that ``--apply_chat_template`` (few-shot as multi-turn) sends the messages the
    official code sends: the system message as the task's description (``judge_system``), the example turns as
    the ``fewshot`` split taken in order, the last user turn as the doc's text. `load_judge_dataset` instead
    sends a conversation as one text (a chat template makes it one user turn)."""
    import datasets

    import radmetrics
    from radmetrics.conversation import chat_messages

    dataset = metadata["dataset"]
    options = metadata.get("system_options", {})
    system = radmetrics.get_scoring_system(metadata["scoring_system"], **options)
    data = _load(dataset, _source(dataset, metadata))
    seen: dict = {}

    def split(doc):
        messages = chat_messages(system.build_prompt(doc["reference"], doc["candidate"]))
        if messages is None:
            raise ValueError(f"{system.name} with these options ({json.dumps(options)}) asks in one text, not in "
                             "turns: run the task without '_chat'.")
        head = messages[0]["content"] if messages[0]["role"] == "system" else ""
        turns = messages[1:] if head else messages
        pairs = [(turns[i]["content"], turns[i + 1]["content"]) for i in range(0, len(turns) - 1, 2)]
        if any(turns[i]["role"] != "user" or turns[i + 1]["role"] != "assistant" for i in range(0, len(turns) - 1, 2)) \
                or len(pairs) != CHAT_EXAMPLES or seen.setdefault("examples", (head, pairs)) != (head, pairs):
            raise ValueError(f"{system.name}'s conversation is not {CHAT_EXAMPLES} example turns shared by every "
                             "prompt: lm-eval cannot send it as few-shot turns.")
        return {"judge_system": head, "judge_prompt": turns[-1]["content"], "scoring_system": system.name,
                "system_options": json.dumps(options, sort_keys=True)}

    # in memory, never from a cache file: a map served from the cache file an earlier run left beside a saved
    # dataset never calls split, which collects the example turns (review 39b: every run after the first on a
    # converted folder was "KeyError: 'examples'")
    test = data.map(split, keep_in_memory=True, load_from_cache_file=False)
    head, pairs = seen["examples"]
    examples = datasets.Dataset.from_dict({"judge_prompt": [q for q, _ in pairs],
                                           "judge_answer": [a for _, a in pairs]})
    return datasets.DatasetDict({"test": test, "fewshot": examples})


def process_results(doc, results):
    import radmetrics

    from radmetrics.runner import read_answer

    system = radmetrics.get_scoring_system(doc["scoring_system"], **json.loads(doc.get("system_options") or "{}"))
    judgment = read_answer(system, results[0], doc["reference"], doc["candidate"])
    score = judgment.score
    oriented = None if score is None else (score if system.higher_is_better else -score)
    # the task's target (GREEN's total errors: the experts' total, GREEN Sec. 4.3.1), else the dataset's headline
    # expert_score; None where the expert annotation could not be read
    if "target_value" in doc:
        raw_expert, expert_higher = doc["target_value"], doc["target_higher_is_better"]
    else:
        raw_expert, expert_higher = doc["expert_score"], doc["expert_higher_is_better"]
    expert = None if raw_expert is None else (raw_expert if expert_higher else -raw_expert)
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

    from radmetrics.meta.stats import why_no_correlation

    judge, expert = zip(*items) if items else ((), ())
    value = tau(list(judge), list(expert), resamples=0).value
    why = why_no_correlation(list(judge), list(expert))
    if why:  # lm-eval's table shows only "nan": say why once, where the run's log is read
        logging.getLogger("radmetrics.lm_eval").warning("kendall_tau is NaN: %s", why)
    return value


def mae(items):
    from radmetrics.meta.stats import mae as mean_absolute_error

    predicted, expert = zip(*items) if items else ((), ())
    value = mean_absolute_error(list(predicted), list(expert))["mae"]
    if math.isnan(value):  # as kendall_tau: lm-eval's table shows only "nan", so say why once
        why = ("the dataset has no expert error counts (expert_significant), e.g. RaTE-Eval's scores"
               if all(e is None for e in expert) else "no row has both the judge's and the experts' error counts")
        logging.getLogger("radmetrics.lm_eval").warning("mae_significant_errors is NaN: %s", why)
    return value if not math.isnan(value) else float("nan")
