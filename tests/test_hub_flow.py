"""The whole judge flow against a Hub-compatible server on 127.0.0.1: fine-tune a tiny GREEN judge for a
few steps, push it with its card, grade it with `lm_eval --model hf --model_args pretrained=<org>/<judge>
--tasks rexval_judge` (downloaded from the server), put the lm-eval score in the card, and score reports
with `evaluate.load("radmetrics/green", judge="<org>/<judge>")`. The README documents the same sequence."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import FIXTURES, REPO, SAMPLE
from hub_server import HubServer, card_metadata_errors

#: the module trains and pushes a judge (~35 s): slow, run by CI and `pytest -m slow`
pytestmark = pytest.mark.slow

REPO_ID = "lab/tiny-green-judge"


def run(args, env, cwd=REPO):
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    assert out.returncode == 0, (out.stdout[-2000:], out.stderr[-4000:])
    return out


@pytest.fixture(scope="module")
def flow(tiny_judge, tmp_path_factory):
    work = tmp_path_factory.mktemp("flow")
    with HubServer(work / "hub") as hub:
        env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_TOKEN": "hf_test_SECRET_token", "HF_HUB_OFFLINE": "0",
               "TRANSFORMERS_OFFLINE": "0", "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
               "HF_HOME": str(work / "hf_home")}
        cli = [sys.executable, "-m", "radmetrics.cli"]
        out = work / "judge"
        trained = run(cli + ["train", "judge", "--base", str(tiny_judge), "--recipe", "green", "--data",
                             str(SAMPLE / "pairs.jsonl"), "--teacher-replay", str(SAMPLE / "green_replay.jsonl"),
                             "-o", str(out), "--max-steps", "3", "--lora-r", "4", "--lora-alpha", "8",
                             "--learning-rate", "1e-4", "--batch-size", "2"], env)
        run(cli + ["hub", "push", str(out / "merged"), REPO_ID, "--training", str(out / "training.json")], env)
        include = run(cli + ["lm-eval-path"], env).stdout.strip()
        lm_dir = work / "lm_eval"
        lm = run([sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args", f"pretrained={REPO_ID},dtype=float32",
                  "--tasks", "rexval_judge", "--include_path", include, "--device", "cpu", "--batch_size", "4",
                  "--metadata", json.dumps({"rexval_path": str(FIXTURES / "rexval")}), "--gen_kwargs",
                  "max_gen_toks=256", "--output_path", str(lm_dir)], env, cwd=work)
        results = next(lm_dir.rglob("results_*.json"))
        run(cli + ["hub", "push", str(out / "merged"), REPO_ID, "--training", str(out / "training.json"),
                   "--eval", str(results)], env)
        rows = [json.loads(x) for x in (SAMPLE / "pairs.jsonl").read_text().splitlines()][:6]
        code = ("import evaluate, json; m = evaluate.load('radmetrics/green', judge=%r, cache=False, "
                "max_new_tokens=256, progress=False); o = m.compute(predictions=%r, references=%r); "
                "print(json.dumps({'scores': o['scores'], 'judge': o['fingerprint']['judge']}))"
                % (REPO_ID, [r["candidate"] for r in rows], [r["reference"] for r in rows]))
        scored = run([sys.executable, "-c", code], env)
        yield {"hub": hub, "trained": trained.stdout, "lm": lm.stdout, "results": json.loads(results.read_text()),
               "scored": json.loads(scored.stdout.strip().splitlines()[-1]), "env": env}


def test_judge_was_trained_and_pushed_private(flow):
    assert "Trained on" in flow["trained"]
    hub = flow["hub"]
    assert hub.repos[("model", REPO_ID)]["private"] is True
    assert {"config.json", "model.safetensors", "README.md"} <= set(hub.files("model", REPO_ID))


def test_lm_eval_downloaded_it_and_reported_kendall_tau(flow):
    assert "kendall_tau" in flow["lm"]
    assert isinstance(flow["results"]["results"]["rexval_judge"]["kendall_tau,none"], float)
    resolved = [path for method, path, _ in flow["hub"].requests if "/lab/tiny-green-judge/resolve/" in path]
    assert any(p.endswith("model.safetensors") for p in resolved)


def test_model_card_carries_the_lm_eval_score(flow):
    card = (flow["hub"].folder("model", REPO_ID) / "README.md").read_text()
    tau = flow["results"]["results"]["rexval_judge"]["kendall_tau,none"]
    assert "model-index:" in card and "kendall_tau" in card and f"{tau:.4f}" in card
    assert "GREEN-format error analyses" in card
    # trained from a local folder: no base_model (the Hub accepts only ids there), the folder named in the text
    assert "base_model:" not in card and "a local model folder" in card
    assert card_metadata_errors(card, "model") == [] and "/tmp" not in card
    assert flow["hub"].validated and all(errors == [] for _, errors in flow["hub"].validated)


def test_evaluate_scores_with_the_pushed_judge(flow):
    scored = flow["scored"]
    assert scored["judge"]["model"] == REPO_ID and len(scored["scores"]) == 6
    assert sum(s is not None for s in scored["scores"]) >= 3  # still a GREEN judge after 3 LoRA steps
