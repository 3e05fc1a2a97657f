"""`radmetrics hub ...`: push judges and datasets with cards, publish evaluate modules as Spaces."""
from __future__ import annotations

import json
from pathlib import Path

import click

from radmetrics.cli.input_paths import EXISTING_FILE


@click.group("hub")
def hub_group() -> None:
    """Push to the Hugging Face Hub (private unless --public)."""


@hub_group.command("push")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.argument("repo_id")
@click.option("--type", "repo_type", type=click.Choice(["model", "dataset"]), default="model", show_default=True)
@click.option("--public", is_flag=True, help="Public repository (private by default).")
@click.option("--gated", type=click.Choice(["auto", "manual"]), default=None)
@click.option("--training", type=EXISTING_FILE,
              help="training.json of `radmetrics train judge`: renders the model card.")
@click.option("--overwrite-card", is_flag=True,
              help="Replace a README.md written by hand (in FOLDER with --training, and on the Hub).")
@click.option("--eval", "eval_files", multiple=True, type=EXISTING_FILE,
              help="lm-eval results_*.json or meta-eval results.json: evaluation table and model-index "
                   "(with or without --training; without it the folder's card is updated).")
@click.option("--eval-dataset", "eval_dataset", multiple=True,
              help="Hub id of an evaluation dataset for model-index: SET=ID per expert set (rexval=my-lab/rexval), "
                   "or one ID when the results are of one set (default: the set's short name).")
@click.option("--base-model", "base_model_id", default=None,
              help="Hub id of the base model when training used a local copy: the card's base_model, and the "
                   "base the pushed adapter / ER²Score configs name (needed when they name a local path).")
def push_command(folder, repo_id, repo_type, public, gated, training, overwrite_card, eval_files, eval_dataset,
                 base_model_id) -> None:
    """Push FOLDER (a merged judge, an adapter, or a dataset) to REPO_ID with its card, private unless --public.
    Same privacy gate as `data push`: PhysioNet-derived data never public, no adding to a public repo without
    --public, a hand-written card kept unless --overwrite-card."""
    from radmetrics.errors import optional_import

    for module in ("huggingface_hub", "yaml"):
        optional_import(module, "hub", "by hub push")
    from radmetrics.hub import check_base_model_id, describe_push, portable_base_files, push_folder
    from radmetrics.hub.cards import evaluations_from_files, is_adapter, render_model_card, update_model_card
    from radmetrics.hub.privacy import card_with_marker, strip_marker, write_card, written_by_user

    check_base_model_id(base_model_id, repo_type)  # before a card naming it is written
    if repo_type == "model":
        portable_base_files(Path(folder), base_model_id)  # a local base without --base-model: refused before the card
    card_path = Path(folder) / "README.md"
    # only results this model produced go into its card (not a report's baselines or another judge's metrics)
    evaluations = evaluations_from_files(list(eval_files), _eval_dataset_ids(eval_dataset), pushed=(repo_id, folder))
    if repo_type == "model" and training:
        card = render_model_card(repo_id, _training_summary(training), evaluations,
                                 adapter=is_adapter(folder), base_model_id=base_model_id)
        write_card(card_path, card, overwrite=overwrite_card)
    elif repo_type == "model" and eval_files:
        # --eval alone adds the results to the folder's card (a hand-written one keeps its text); a card we
        # rendered stays marked as ours so that later pushes may refresh it
        existing = card_path.read_text(encoding="utf-8") if card_path.is_file() else None
        ours = existing is None or not written_by_user(existing)
        updated = update_model_card(strip_marker(existing) if existing else None, repo_id, evaluations)
        card_path.write_text(card_with_marker(updated) if ours else updated, encoding="utf-8")
    result = push_folder(folder, repo_id, repo_type=repo_type, public=public, gated=gated,
                         overwrite_card=overwrite_card, base_model_id=base_model_id)
    for line in describe_push(folder, result):
        click.echo(line)
    if repo_type == "model" and not card_path.is_file():
        # review 27, L4: the judge went up with no card, without a word (said after the push: a refused one is one line)
        click.echo(f"Note: {folder} has no model card (README.md); {_card_hint(Path(folder))}", err=True)


def _card_hint(folder: Path) -> str:
    """How to render the card: `train judge` writes training.json beside merged/ and adapter/ (or in the folder)."""
    for candidate in (folder / "training.json", folder.parent / "training.json"):
        if candidate.is_file():
            return f"pass --training {candidate} to render one"
    return "pass --training OUTPUT/training.json (of `radmetrics train judge`) to render one"


def _training_summary(path: str) -> dict:
    """`train judge`'s training.json, or a one-line error (a card cannot be written from anything else)."""
    from radmetrics.errors import InputError

    try:
        summary = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"--training {path}: not readable JSON ({type(e).__name__}: {e})") from e
    if not isinstance(summary, dict) or "config" not in summary:
        raise InputError(f"--training {path}: not the training.json `radmetrics train judge` writes (no 'config')")
    return summary


@hub_group.command("publish-metrics")
@click.option("--namespace", required=True, help="User or organization owning the Spaces.")
@click.option("--public", is_flag=True)
@click.option("--workdir", type=click.Path(file_okay=False), default=None, help="Where to build the Space folders.")
@click.option("--wheel", type=EXISTING_FILE, default=None,
              help="radmetrics wheel to ship in each Space (default: built from this checkout).")
@click.option("--radmetrics-source", default=None,
              help="Instead of a wheel: a pip URL the Space installs radmetrics from, e.g. "
                   "git+https://github.com/<org>/radmetrics@v0.1.0.")
def publish_metrics_command(namespace: str, public: bool, workdir: str | None, wheel: str | None,
                            radmetrics_source: str | None) -> None:
    """Upload every evaluate module (module file, card, Gradio app, requirements) as a Space."""
    import tempfile

    from radmetrics.errors import optional_import

    for module in ("huggingface_hub", "yaml"):
        optional_import(module, "hub", "by hub publish-metrics")
    from radmetrics.evaluate_modules import all_evaluate_modules
    from radmetrics.hub import push_folder
    from radmetrics.hub.spaces import build_space, build_wheel
    from radmetrics.plugins import scoring_systems

    root = Path(workdir or tempfile.mkdtemp(prefix="radmetrics-spaces-"))
    if not radmetrics_source and not wheel:
        wheel = build_wheel(root / "_wheel")
    systems = scoring_systems()
    for name, module in all_evaluate_modules().items():
        default_judge = getattr(systems.get(name), "default_judge", None)
        space = build_space(name, module, root / name, radmetrics_source=radmetrics_source,
                            wheel=Path(wheel) if wheel else None, default_judge=default_judge)
        result = push_folder(space, f"{namespace}/{module.stem}", repo_type="space", public=public)
        click.echo(f"{name}: {result['url']} ({'private' if result['private'] else 'public'})")


def _eval_dataset_ids(given: tuple[str, ...]) -> str | dict[str, str] | None:
    """--eval-dataset values: one bare Hub id, or SET=ID pairs (a Hub id has no "=")."""
    from radmetrics.errors import InputError

    if not given:
        return None
    pairs = [g.partition("=") for g in given]
    if len(given) == 1 and not pairs[0][1]:
        return given[0]
    if any(not sep or not key or not value for key, sep, value in pairs):
        raise InputError("--eval-dataset: give one Hub id, or SET=ID for each expert set (e.g. rexval=my-lab/rexval "
                         "radeval=my-lab/radeval)")
    return {key: value for key, _, value in pairs}
