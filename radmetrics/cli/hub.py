"""`radmetrics hub ...`: push judges and datasets with cards, publish evaluate modules as Spaces."""
from __future__ import annotations

import json
from pathlib import Path

import click


@click.group("hub")
def hub_group() -> None:
    """Push to the Hugging Face Hub (private unless --public)."""


@hub_group.command("push")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.argument("repo_id")
@click.option("--type", "repo_type", type=click.Choice(["model", "dataset"]), default="model", show_default=True)
@click.option("--public", is_flag=True, help="Public repository (private by default).")
@click.option("--gated", type=click.Choice(["auto", "manual"]), default=None)
@click.option("--training", type=click.Path(exists=True, dir_okay=False),
              help="training.json of `radmetrics train judge`: renders the model card.")
@click.option("--overwrite-card", is_flag=True,
              help="Replace a README.md written by hand (in FOLDER with --training, and on the Hub).")
@click.option("--eval", "eval_files", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="lm-eval results_*.json or meta-eval results.json: evaluation table and model-index.")
def push_command(folder, repo_id, repo_type, public, gated, training, overwrite_card, eval_files) -> None:
    """Push FOLDER (a merged judge, an adapter, or a dataset) to REPO_ID with its card, private unless --public.
    Same privacy gate as `data push`: PhysioNet-derived data never public, no adding to a public repo without
    --public, a hand-written card kept unless --overwrite-card."""
    from radmetrics.hub import describe_push, push_folder
    from radmetrics.hub.cards import evaluations_from_files, render_model_card
    from radmetrics.hub.privacy import write_card

    if repo_type == "model" and training:
        card = render_model_card(repo_id, json.loads(Path(training).read_text()),
                                 evaluations_from_files(list(eval_files)))
        write_card(Path(folder) / "README.md", card, overwrite=overwrite_card)
    result = push_folder(folder, repo_id, repo_type=repo_type, public=public, gated=gated,
                         overwrite_card=overwrite_card)
    for line in describe_push(folder, result):
        click.echo(line)


@hub_group.command("publish-metrics")
@click.option("--namespace", required=True, help="User or organization owning the Spaces.")
@click.option("--public", is_flag=True)
@click.option("--workdir", type=click.Path(file_okay=False), default=None, help="Where to build the Space folders.")
def publish_metrics_command(namespace: str, public: bool, workdir: str | None) -> None:
    """Upload every evaluate module (module file, card, Gradio app, requirements) as a Space."""
    import tempfile

    from radmetrics.evaluate_modules import all_evaluate_modules
    from radmetrics.hub import push_folder
    from radmetrics.hub.spaces import build_space

    root = Path(workdir or tempfile.mkdtemp(prefix="radmetrics-spaces-"))
    for name, module in all_evaluate_modules().items():
        space = build_space(name, module, root / name)
        result = push_folder(space, f"{namespace}/{module.stem}", repo_type="space", public=public)
        click.echo(f"{name}: {result['url']} ({'private' if result['private'] else 'public'})")
