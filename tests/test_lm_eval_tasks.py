"""A real `lm_eval` run of rexval_judge on the tiny judge, checked against radmetrics' own computation."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, LM_EVAL_TASKS

import radmetrics
from radmetrics.meta.stats import kendall_tau


@pytest.fixture(scope="module")
def lm_eval_run(tiny_judge, tmp_path_factory):
    out = tmp_path_factory.mktemp("lm_eval")
    include = subprocess.run([sys.executable, "-m", "radmetrics.cli", "lm-eval-path"], capture_output=True,
                             text=True, check=True).stdout.strip()
    cmd = [sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args", f"pretrained={tiny_judge},dtype=float32",
           "--tasks", "rexval_judge", "--include_path", include, "--device", "cpu", "--batch_size", "4",
           "--metadata", json.dumps({"rexval_path": str(FIXTURES / "rexval")}),
           "--gen_kwargs", "max_gen_toks=256", "--output_path", str(out), "--log_samples"]
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=out, env=os.environ.copy())
    assert run.returncode == 0, run.stderr[-4000:]
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    samples = [json.loads(x) for x in next(out.rglob("samples_rexval_judge_*.jsonl")).read_text().splitlines()]
    return run.stdout, results, samples


def test_lm_eval_prints_kendall_tau(lm_eval_run):
    stdout, results, samples = lm_eval_run
    assert "kendall_tau" in stdout and "rexval_judge" in stdout
    metrics = results["results"]["rexval_judge"]
    assert isinstance(metrics["kendall_tau,none"], float) and len(samples) == 20
    assert results["configs"]["rexval_judge"]["metadata"]["version"] == 1.0


def test_lm_eval_tau_equals_radmetrics_computation(lm_eval_run):
    _, results, samples = lm_eval_run
    system = radmetrics.get_scoring_system("green")
    judge, expert, unparsed = [], [], 0
    for s in samples:
        judgment = system.parse(s["filtered_resps"][0])
        unparsed += not judgment.parsed
        judge.append(judgment.score)
        expert.append(-s["doc"]["expert_score"])  # fewer expert-counted errors = better
    metrics = results["results"]["rexval_judge"]
    assert metrics["kendall_tau,none"] == pytest.approx(kendall_tau(judge, expert, resamples=0).value, nan_ok=True)
    assert metrics["unparsed,none"] == pytest.approx(unparsed / len(samples))


def test_lm_eval_generations_equal_the_transformers_backend(lm_eval_run, tiny_judge):
    """Same GREEN chat-formatted input, same greedy answers as radmetrics' own backend."""
    _, _, samples = lm_eval_run
    system = radmetrics.get_scoring_system("green")
    judge = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False)
    prompts = [system.build_prompt(s["doc"]["reference"], s["doc"]["candidate"]) for s in samples]
    ours = judge.generate(prompts, radmetrics.GenerationConfig(max_new_tokens=256), progress=False)
    assert [s["filtered_resps"][0] for s in samples] == ours


def test_lm_eval_path_points_at_the_tasks():
    path = Path(subprocess.run([sys.executable, "-m", "radmetrics.cli", "lm-eval-path"], capture_output=True,
                               text=True, check=True).stdout.strip())
    names = {p.stem for p in path.glob("*.yaml")}
    assert {"rexval_judge", "rexval_judge_vert", "rexval_judge_finerad", "rexval_judge_radcliq_rubric",
            "radmetrics_judge"} <= names
    assert path == LM_EVAL_TASKS


def test_task_data_must_be_given(monkeypatch):
    sys.path.insert(0, str(LM_EVAL_TASKS))
    import utils

    monkeypatch.delenv("RADMETRICS_REXVAL_PATH", raising=False)
    with pytest.raises(ValueError, match="rexval_path"):
        utils.load_judge_dataset(dataset="rexval", scoring_system="green")
    monkeypatch.setenv("RADMETRICS_REXVAL_PATH", str(FIXTURES / "rexval"))
    data = utils.load_judge_dataset(dataset="rexval", scoring_system="vert", chat_format="none")["test"]
    assert len(data) == 20 and "[Overall Accuracy Score]" in data[0]["judge_prompt"]


def test_every_builtin_metric_is_an_lm_eval_task():
    import yaml

    tasks = {}
    for path in (LM_EVAL_TASKS).glob("rexval_judge*.yaml"):
        config = yaml.safe_load(path.read_text())
        tasks[config["metadata"]["scoring_system"]] = config["task"]
    builtin = {n for n in radmetrics.list_scoring_systems()
               if type(radmetrics.get_scoring_system(n)).__module__.startswith("radmetrics.")}
    assert set(tasks) == builtin
