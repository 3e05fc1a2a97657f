"""`radmetrics train ...`: fine-tune a judge; train ER²Score."""
from __future__ import annotations

import json
from pathlib import Path

import click

from radmetrics.cli.exit_status import interrupt_scope, note_interrupt
from radmetrics.cli.input_paths import EXISTING_FILE, EXISTING_INPUT
from radmetrics.cli.output_paths import OUTPUT_FOLDER
from radmetrics.cli.stat_options import FiniteRange
from radmetrics.io import check_new_folder

@click.group("train")
def train_group() -> None:
    """Fine-tune judges (LoRA / QLoRA) and train the ER²Score reward model."""


def _load_pairs_source(path: str):
    import datasets

    if Path(path).is_dir():
        return datasets.load_from_disk(path)
    from radmetrics.io import columns_read_line, read_pairs

    pairs = read_pairs(path)
    if pairs.also_found:
        click.echo(columns_read_line(path, pairs.reference_column, pairs.candidate_column, pairs.also_found,
                                     choose="rename the columns to train on another pair"), err=True)
    rows = [r for i, r in enumerate(pairs.rows) if i not in pairs.bad_rows]
    if pairs.bad_rows:  # a training set cannot hold a row without its text: left out, and said so
        click.echo(f"Warning: {len(pairs.bad_rows)} rows of {path} cannot be read and are left out (first: "
                   f"{next(iter(pairs.bad_rows.values()))})", err=True)
    import pyarrow as pa

    from radmetrics.errors import InputError

    table = [{**r, "reference": r[pairs.reference_column], "candidate": r[pairs.candidate_column]} for r in rows]
    try:
        return datasets.Dataset.from_list(table)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as e:
        # a column of 1 and "1", 0 and false, or a whole number past 64 bits (review 21, M4): pyarrow's traceback
        column = _first_unstorable_column(table)
        raise InputError(f"{path}: {'column ' + repr(column) if column else 'a column'} holds values a dataset "
                         f"cannot store as one kind ({str(e).splitlines()[0][:120]}); write each column's values as "
                         "one kind (all numbers, all text or all true/false), and ids or accession numbers over 18 "
                         "digits as text") from None


def _first_unstorable_column(table: list[dict]) -> str | None:
    """The first column pyarrow cannot make one array of, for the error message."""
    import pyarrow as pa

    for column in dict.fromkeys(key for row in table for key in row):
        try:
            pa.array([row.get(column) for row in table])
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return column
    return None


def describe_judge(identity: dict) -> str:
    """A judge's identity in a card's words: backend and model name, never a local path."""
    model = identity.get("model")
    name = Path(str(model)).name if model and Path(str(model)).expanduser().exists() else model
    return f"{name} ({identity.get('backend')} backend)" if name else f"({identity.get('backend')} backend)"


def require_training_extra(command: str) -> None:
    """Fail before reading data or asking a teacher when the train extra is not installed."""
    from radmetrics.errors import optional_import

    for module in ("torch", "transformers", "peft", "trl", "datasets"):
        optional_import(module, "train", f"by {command}")


@train_group.command("judge")
@click.option("--base", "base_model", default=None, help="Base model id or folder.")
@click.option("--recipe", type=click.Choice(["vert", "green"]), default=None)
@click.option("--data", "data_path", required=True, type=EXISTING_INPUT,
              help="vert: converted dataset with expert_score (e.g. rate_eval); green: pairs to analyse.")
@click.option("--output", "-o", required=True, type=OUTPUT_FOLDER)
@click.option("--overwrite", is_flag=True, help="Write into a folder that is not empty, replacing what it holds.")
@click.option("--config", "config_path", type=EXISTING_FILE, help="YAML of settings.")
@click.option("--max-steps", type=click.IntRange(min=1), default=None, help="Optimizer steps (overrides --epochs).")
@click.option("--epochs", type=FiniteRange(min=0, min_open=True), default=None, help="Training epochs.")
@click.option("--learning-rate", type=FiniteRange(min=0, min_open=True), default=None, help="Learning rate.")
@click.option("--lora-r", type=click.IntRange(min=1), default=None, help="LoRA rank.")
@click.option("--lora-alpha", type=click.IntRange(min=1), default=None, help="LoRA alpha.")
@click.option("--batch-size", type=click.IntRange(min=1), default=None, help="Examples per optimizer step.")
@click.option("--teacher-backend", default="transformers", help="green recipe: the teacher judge's backend.")
@click.option("--teacher", default=None, help="green recipe: teacher model (or --teacher-replay).")
@click.option("--teacher-replay", type=EXISTING_FILE, default=None,
              help="green recipe: recorded teacher answers ({prompt, response} JSONL) instead of a live teacher.")
@click.option("--teacher-base-url", default=None,
              help="green recipe: an OpenAI-compatible server serving --teacher (implies --teacher-backend openai; "
                   "the key comes from OPENAI_API_KEY).")
@interrupt_scope
def train_judge_command(base_model, recipe, data_path, output, config_path, max_steps, epochs, learning_rate,
                        lora_r, lora_alpha, batch_size, teacher_backend, teacher, teacher_replay,
                        teacher_base_url, overwrite) -> None:
    """LoRA-fine-tune a judge; writes adapter/, merged/, training.json and loss_curve.png to OUTPUT. Interrupted,
    the same command resumes from the last checkpoint (every 50 steps, `save_steps` in --config)."""
    interrupted = _only_checkpoints(output)  # an interrupted run's folder: the same command resumes it
    if not interrupted:
        check_new_folder(output, overwrite, "trained judge")
    require_training_extra("train judge")
    from radmetrics.judge import get_judge
    from radmetrics.train.judge_sft import JudgeSFTConfig, green_examples, train_judge, vert_examples

    overrides = {"base_model": base_model, "output_dir": output, "recipe": recipe, "max_steps": max_steps,
                 "epochs": epochs, "learning_rate": learning_rate, "lora_r": lora_r, "lora_alpha": lora_alpha,
                 "batch_size": batch_size}
    if config_path:
        config = JudgeSFTConfig.from_yaml(config_path, **overrides)
    else:
        if not base_model:
            raise click.UsageError("--base is required (or give it in --config)")
        config = JudgeSFTConfig(**{k: v for k, v in overrides.items() if v is not None})
    from radmetrics.errors import InputError
    from radmetrics.judge.preflight import check_hub_model, check_judge

    check_hub_model(config.base_model, what="base model", flag="--base")
    if config.recipe == "vert" and (teacher or teacher_replay or teacher_base_url):
        raise InputError(f"--teacher / --teacher-replay / --teacher-base-url are for --recipe green; the recipe is "
                         f"{'vert (the default)' if recipe is None else 'vert'}, which learns expert scores")
    data = _load_pairs_source(data_path)
    if config.recipe == "vert":
        if "expert_score" not in data.column_names:
            raise InputError(f"--data {data_path} has no expert_score column: the vert recipe learns expert scores "
                             "(a converted dataset such as rate_eval); for GREEN analyses by a teacher pass "
                             "--recipe green")
        directions = data["expert_higher_is_better"] if "expert_higher_is_better" in data.column_names else None
        rows, dropped = vert_examples(data["reference"], data["candidate"], data["expert_score"], directions)
        for problem in dropped:
            click.echo(f"pair left out: {problem}", err=True)
        if not rows:
            raise InputError(f"--data {data_path}: no pair has an expert score to learn")
        description = f"{len(rows)} expert-scored pairs from `{Path(data_path).name}`"
    else:
        options = {"path": teacher_replay} if teacher_replay else {}
        backend = "replay" if teacher_replay else teacher_backend
        if teacher_base_url and not teacher_replay:
            backend = "openai" if teacher_backend == "transformers" else teacher_backend
            options["base_url"] = teacher_base_url
        if backend != "replay" and not teacher:
            raise InputError("the green recipe needs a teacher: --teacher MODEL (with --teacher-base-url for an "
                             "OpenAI-compatible server) or --teacher-replay FILE")
        # the teacher reachable in seconds, named by this command's flags
        check_judge(backend, teacher, options, model_flag="--teacher", url_flag="--teacher-base-url",
                    backend_flag="--teacher-backend")
        judge = get_judge(backend, model=teacher, **options)
        rows, dropped = green_examples(data["reference"], data["candidate"], judge)
        for problem in dropped:
            click.echo(f"teacher answer dropped: {problem}", err=True)
        description = (f"{len(rows)} GREEN analyses by the teacher {describe_judge(judge.identity())} on the "
                       f"report pairs of `{Path(data_path).name}`")
    if interrupted and not overwrite:
        _check_same_run(output, config, rows)
    note_interrupt(f"interrupted while training: the last checkpoint (every {config.save_steps} steps) is in "
                   f"{output}/checkpoints; the same command resumes from it (teacher answers in the response cache "
                   "are not asked again)")
    summary = train_judge(config, rows)
    if summary.get("resumed_from_step"):
        click.echo(f"Resumed the interrupted training from step {summary['resumed_from_step']}", err=True)
    summary["data_description"] = description
    summary["base_model_is_local"] = Path(config.base_model).expanduser().exists()  # the card's base_model
    from radmetrics.io import AtomicFile

    with AtomicFile(Path(output) / "training.json") as fh:  # all at once: a kill leaves no half training.json
        json.dump(summary, fh, indent=2)
    click.echo(f"Trained on {summary['train_examples']} examples; final loss {summary['losses'][-1]:.4f}; "
               f"adapter {summary['adapter']}; merged {summary['merged']}")


def _only_checkpoints(output: str) -> bool:
    """OUTPUT holds only what an interrupted `train judge` leaves: its checkpoints folder."""
    folder = Path(output).expanduser()
    return folder.is_dir() and [p.name for p in folder.iterdir()] == ["checkpoints"]


def _check_same_run(output: str, config, rows: list[dict]) -> None:
    """Checkpoints of a run with other settings or examples are not resumed, nor deleted without --overwrite."""
    from radmetrics.errors import InputError
    from radmetrics.train.judge_sft import resumable_checkpoint, run_key

    folder = Path(output).expanduser() / "checkpoints"
    if any(folder.glob("checkpoint-*")) and resumable_checkpoint(output, run_key(config, rows)) is None:
        raise InputError(f"--output {output} holds the checkpoints of an interrupted training with other settings or "
                         "data: rerun that command to resume it, choose a new folder, or pass --overwrite to start over")


def _given(parameter: str) -> bool:
    """Whether the running command's ``parameter`` was typed (or set in the environment), not left at its default."""
    return click.get_current_context().get_parameter_source(parameter) != click.core.ParameterSource.DEFAULT


@train_group.command("er2score")
@click.option("--base", "base_model", required=True, help="Backbone model id or folder.")
@click.option("--system", type=click.Choice(["radcliq", "mrscore"]), default="radcliq", show_default=True,
              help="Scoring system: N reward outputs (6 RadCliQ, 7 MRScore). Teacher generation (--references) "
                   "uses the A.2 RadCliQ prompt; MRScore needs --pairs.")
@click.option("--references", "references_path", type=EXISTING_INPUT, default=None,
              help="Ground-truth reports (JSONL/CSV with a reference column): the teacher writes pairs.")
@click.option("--pairs", "pairs_path", type=EXISTING_FILE, default=None,
              help="Or ready pairs (JSONL of build_pairs rows).")
@click.option("--teacher-backend", default="openai", show_default=True,
              help="--references: the teacher judge's backend (openai: an OpenAI-compatible server at --base-url; "
                   "transformers: a local model).")
@click.option("--teacher", default=None, help="--references: the teacher model (the model name the server serves, "
                                              "or a local model folder / Hub id).")
@click.option("--base-url", default=None, help="--references: the teacher's OpenAI-compatible server "
                                               "(default: $OPENAI_BASE_URL).")
@click.option("--teacher-replay", type=EXISTING_FILE, default=None,
              help="--references: recorded teacher answers ({prompt, response} JSONL) instead of a live teacher "
                   "(implies --teacher-backend replay).")
@click.option("--output", "-o", required=True, type=OUTPUT_FOLDER, help="Folder the reward model is saved to.")
@click.option("--overwrite", is_flag=True, help="Write into a folder that is not empty, replacing what it holds.")
# --steps 0 saved an untrained model, then an IndexError traceback; --lam nan saved a model of nan weights
@click.option("--steps", default=200, show_default=True, type=click.IntRange(min=1))
@click.option("--batch-size", default=4, show_default=True, type=click.IntRange(min=1))
@click.option("--learning-rate", default=1e-4, show_default=True, type=FiniteRange(min=0, min_open=True))
@click.option("--lam", default=1.0, show_default=True, type=FiniteRange(min=0), help="λ of the MRE loss.")
@click.option("--lora-r", default=8, show_default=True, type=click.IntRange(min=1))
@click.option("--radcliq-convention", type=click.Choice(["paper", "quality"]), default="paper", show_default=True,
              help="RadCliQ pair direction: 'paper' (as ER2Score A.4: the chosen report has more errors; the score "
                   "predicts errors, lower is better) or 'quality' (fewer errors chosen; higher is better).")
def train_er2score_command(base_model, system, references_path, pairs_path, teacher_backend, teacher, base_url,
                           teacher_replay, output, steps, batch_size, learning_rate, lam, lora_r, radcliq_convention,
                           overwrite) -> None:
    """Train an ER²Score reward model (LoRA + multi-reward head, MRE loss) and save it to OUTPUT."""
    check_new_folder(output, overwrite, "reward model")
    require_training_extra("train er2score")
    from radmetrics.er2score.data import generate_pairs
    from radmetrics.er2score.model import MultiRewardModel
    from radmetrics.er2score.pairs import CRITERIA, higher_is_better
    from radmetrics.er2score.train import pairs_direction, train_reward_model
    from radmetrics.errors import InputError
    from radmetrics.judge import get_judge
    from radmetrics.judge.preflight import check_hub_model, check_judge

    check_hub_model(base_model, what="base model", flag="--base")
    typed_backend = _given("teacher_backend")
    if pairs_path and references_path:
        raise click.UsageError("give --references (the teacher writes pairs) or --pairs (ready pairs), not both")
    if pairs_path and (teacher_replay or teacher or base_url or typed_backend):
        raise InputError("--teacher / --teacher-replay / --teacher-backend / --base-url are for --references (the "
                         "teacher writes the pairs); --pairs are ready pairs, no teacher is asked")
    if pairs_path:
        from radmetrics.io import read_rows_strict

        pairs = read_rows_strict(pairs_path, why="; every line of a pairs file must be a JSON object")
        wrong = [i for i, p in enumerate(pairs)
                 if not isinstance(p.get("accepted_scores"), list) or len(p["accepted_scores"]) != len(CRITERIA[system])]
        if wrong:
            got = pairs[wrong[0]].get("accepted_scores")
            raise InputError(
                f"{pairs_path}: pair {wrong[0]} has {len(got) if isinstance(got, list) else 'no list of'} accepted_scores; "
                f"{system} has {len(CRITERIA[system])} sub-scores")
    elif references_path:
        from radmetrics.io import read_references

        if system != "radcliq":
            raise click.UsageError("teacher generation writes RadCliQ pairs; for MRScore give --pairs")

        references = read_references(references_path)
        options = {"base_url": base_url} if base_url else {}
        if teacher_replay:  # as train judge's --teacher-replay: the recorded answers, no live teacher
            if base_url or teacher or (typed_backend and teacher_backend != "replay"):
                raise InputError("--teacher-replay gives the teacher's recorded answers; leave out --teacher, "
                                 "--base-url and --teacher-backend")
            teacher_backend, options = "replay", {"path": teacher_replay}
        elif teacher_backend == "replay" and not teacher:
            raise InputError("--teacher-backend replay needs the recorded teacher answers: --teacher-replay FILE "
                             "({prompt, response} JSONL)")
        if not teacher and teacher_backend != "replay":
            raise InputError("teacher generation needs the teacher: --teacher MODEL (with --teacher-backend openai, "
                             "the model name the server serves) or --teacher-replay FILE")
        # seconds, before any work
        check_judge(teacher_backend, teacher, options, model_flag="--teacher", backend_flag="--teacher-backend")
        judge = get_judge(teacher_backend, model=teacher, **options)
        pairs, problems = generate_pairs(judge, references, convention=radcliq_convention)
        for problem in problems:
            click.echo(f"teacher answer dropped: {problem}", err=True)
        if not pairs:
            raise InputError(f"no training pairs: the teacher gave none for {len(references)} references (first "
                             f"problem: {problems[0] if problems else 'none reported'})")
        out = Path(output)
        out.mkdir(parents=True, exist_ok=True)
        from radmetrics.io import AtomicFile, owner_only

        # the teacher's reports: readable by you only, as score's results; all at once (no half file after a kill)
        with owner_only(out / "pairs.jsonl"), AtomicFile(out / "pairs.jsonl") as fh:
            fh.write("\n".join(json.dumps(p) for p in pairs))
    else:
        raise click.UsageError("give --references (the teacher writes pairs) or --pairs")
    # pairs radmetrics wrote carry their direction (higher_is_better); others follow --radcliq-convention. A model
    # of error counts saved as higher-is-better rewards more errors in RL (review 30b)
    try:
        carried = pairs_direction(pairs)
    except ValueError as e:
        raise InputError(f"{pairs_path or 'the teacher pairs'}: {e}") from None
    wanted = higher_is_better(system, radcliq_convention)
    flag_given = _given("radcliq_convention")
    if carried is not None and flag_given and carried != wanted:
        raise InputError(f"{pairs_path}: the pairs say higher_is_better {str(carried).lower()}, but "
                         f"--radcliq-convention {radcliq_convention} means {str(wanted).lower()}; drop the option "
                         "(the pairs' direction is used) or give the pairs made with that convention")
    model = MultiRewardModel.new(base_model, CRITERIA[system], lora_r=lora_r, lora_alpha=2 * lora_r)
    model.higher_is_better = wanted if carried is None else carried
    losses = train_reward_model(model, pairs, steps=steps, batch_size=batch_size, lr=learning_rate, lam=lam)
    folder = model.save(output)
    from radmetrics.io import AtomicFile

    with AtomicFile(folder / "training.json") as fh:  # all at once: a kill leaves no half training.json
        json.dump({"base_model": model.base_model, "system": system, "pairs": len(pairs),
                   "radcliq_convention": radcliq_convention, "higher_is_better": model.higher_is_better,
                   "steps": steps, "lambda": lam, "losses": losses}, fh, indent=2)
    click.echo(f"ER2Score trained on {len(pairs)} pairs; loss {losses[0]:.3f} -> {losses[-1]:.3f}; saved {folder}")
