"""GREEN end to end on a tiny real judge: Python API, evaluate.load (repo root and another directory,
offline), and the CLI; the README's sample command on the replay backend."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO, SAMPLE
from tiny_judge import training_pairs

import radmetrics
from radmetrics.green import parse_green

PAIRS = training_pairs()
REFS = [r for r, _, _ in PAIRS]
CANDS = [c for _, c, _ in PAIRS]
TARGETS = [parse_green(a).score for _, _, a in PAIRS]  # what the tiny judge was trained to answer
GEN = {"max_new_tokens": 256}


def run_cli(*args, cwd=REPO, check=True):
    cmd = [sys.executable, "-m", "radmetrics.cli", *map(str, args)]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=check, env=os.environ.copy())


def test_python_api_scores_with_transformers_backend(tiny_judge, tmp_path):
    result = radmetrics.score("green", REFS, CANDS, judge=str(tiny_judge), cache=tmp_path / "c.sqlite",
                              config=radmetrics.GenerationConfig(**GEN), progress=False,
                              judge_options={"max_batch_size": 4})
    assert result.scores == pytest.approx(TARGETS)
    assert all(j.parsed for j in result.judgments)
    backend = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=tmp_path / "c.sqlite",
                                   max_batch_size=4).backend
    assert backend.chat_format == "green"  # picked from the model name, as GREEN models need
    assert result.fingerprint["judge"]["model"] == str(tiny_judge)
    # the precision it ran in, "auto" resolved (fp32 on CPU), beside the identity the cache keys use
    assert result.fingerprint["judge"]["dtype"] == "auto"
    assert result.fingerprint["judge"]["runtime"] == {"device": "cpu", "dtype": "float32"}
    assert radmetrics.get_judge("transformers", model=str(tiny_judge), dtype="bf16",
                                cache=False).backend.runtime() == {"device": "cpu", "dtype": "bfloat16"}
    assert result.fingerprint["generation"]["max_new_tokens"] == 256


def test_a_green_judge_in_a_folder_not_named_green_reads_green_prompts_as_trained(tiny_judge, tmp_path_factory):
    """Upstream GREEN gives every model its own chat template: a GREEN judge copied to ``my-judge`` (nothing in its
    name or tokenizer says GREEN) still gets GREEN prompts in GREEN's format under chat_template auto, so it
    scores as under its own name; prompts of other systems keep the model's own format."""
    import shutil

    from radmetrics.judge.chat_formats import prompt_formats

    renamed = shutil.copytree(tiny_judge, tmp_path_factory.mktemp("judges") / "my-judge")  # (tmp_path says green)
    assert "green" not in str(renamed).lower()
    result = radmetrics.score("green", REFS, CANDS, judge=str(renamed), cache=False, progress=False,
                              config=radmetrics.GenerationConfig(**GEN))
    assert result.scores == pytest.approx(TARGETS) and all(j.parsed for j in result.judgments)
    backend = radmetrics.get_judge("transformers", model=str(renamed), cache=False).backend
    backend.load()
    assert backend.chat_format == "none"  # the model's own format: no template, no GREEN name
    green_prompt = radmetrics.get_scoring_system("green").build_prompt(REFS[0], CANDS[0])
    vert_prompt = radmetrics.get_scoring_system("vert").build_prompt(REFS[0], CANDS[0])
    assert prompt_formats([green_prompt, vert_prompt], "auto", "none") == ["green", "none"]
    assert prompt_formats([green_prompt], "none", "none") == ["none"]  # a format named explicitly is obeyed
    # what "auto" picks is versioned in the identity: answers cached under older rules are not reused
    assert backend.identity()["chat_auto_rules"] >= 2
    assert "chat_auto_rules" not in radmetrics.get_judge("transformers", model=str(renamed), cache=False,
                                                          chat_template="green").backend.identity()


def test_a_judge_retrained_into_its_folder_is_not_served_the_old_judges_cached_answers(tiny_judge, tmp_path_factory,
                                                                                       monkeypatch):
    """A local judge's cache key carries its folder's absolute path and a fingerprint of its files: new weights
    saved into the same folder are asked again (the old key was the path as typed: the old answers came back in
    0.2 s), and two folders of the same relative name in different directories are two judges."""
    import shutil

    import torch
    from transformers import AutoModelForCausalLM

    from radmetrics.judge import clear_judges

    folder = shutil.copytree(tiny_judge, tmp_path_factory.mktemp("retrain") / "judge")
    cache = folder.parent / "c.sqlite"

    def run(cache):
        result = radmetrics.score("green", REFS, CANDS, judge=str(folder), cache=cache, progress=False,
                                  config=radmetrics.GenerationConfig(max_new_tokens=64))
        return [j.raw for j in result.judgments]

    before = run(cache)
    model = AutoModelForCausalLM.from_pretrained(str(folder))
    torch.manual_seed(0)
    with torch.no_grad():  # "retrained": other weights, same folder
        for weight in model.parameters():
            weight.add_(torch.randn_like(weight))
    model.save_pretrained(str(folder))
    clear_judges()  # a new process: the loaded judge of this one keeps its weights (and its key) until then
    after = run(cache)
    assert after == run(False) and after != before  # the new weights' answers, not the cached ones

    other = shutil.copytree(tiny_judge, tmp_path_factory.mktemp("other") / "judge")
    identities = []
    for where in (folder.parent, other.parent):
        monkeypatch.chdir(where)
        identities.append(radmetrics.get_judge("transformers", model="judge", cache=False).backend.identity())
    assert identities[0]["model_path"] != identities[1]["model_path"]
    assert identities[0]["model_files"] != identities[1]["model_files"]


def test_token_budget_batches_give_the_same_answers(tiny_judge):
    """Batch composition must not change greedy answers (left padding + attention mask)."""
    one = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, max_batch_size=1)
    many = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, max_batch_size=8)
    system = radmetrics.get_scoring_system("green")
    prompts = [system.build_prompt(r, c) for r, c in zip(REFS, CANDS)]
    config = radmetrics.GenerationConfig(**GEN)
    assert one.generate(prompts, config, progress=False) == many.generate(prompts, config, progress=False)


def test_evaluate_load_from_repo_root(tiny_judge, tmp_path, monkeypatch):
    import evaluate

    monkeypatch.chdir(REPO)
    green = evaluate.load("radmetrics/green", judge=str(tiny_judge), cache=tmp_path / "c.sqlite",
                          max_new_tokens=256, progress=False)
    out = green.compute(predictions=CANDS, references=REFS)
    assert out["green"] == pytest.approx(sum(TARGETS) / len(TARGETS))
    assert out["scores"] == pytest.approx(TARGETS)
    assert out["num_unscored"] == 0 and len(out["details"]) == len(REFS)
    assert out["details"][5]["significant"]["c"] == 1 and out["details"][5]["matched_findings"] == 3
    assert "green_std" in out and out["fingerprint"]["scoring_system"] == "green"


def test_evaluate_load_from_another_directory_offline(tiny_judge, tmp_path):
    installed = run_cli("install-metrics")
    for name in ("green", "vert", "finerad_score", "radcliq_rubric"):
        assert f"radmetrics/{name} ->" in installed.stdout
    names = subprocess.run([sys.executable, "-c", "import evaluate; print([evaluate.load(f'radmetrics/{n}').name "
                            "for n in ('vert', 'finerad_score', 'radcliq_rubric')])"], cwd=tmp_path, capture_output=True,
                           text=True, env=os.environ.copy())
    assert names.returncode == 0 and names.stdout.strip() == "['vert', 'fine_rad_score', 'rad_cli_q_rubric']", names.stderr
    # by path: the module this radmetrics ships, whatever the Hub holds under radmetrics/<name>
    by_path = subprocess.run([sys.executable, "-c", "import evaluate, radmetrics; "
                              "print(evaluate.load(radmetrics.evaluate_module_path('vert')).name)"], cwd=tmp_path,
                             capture_output=True, text=True, env=os.environ.copy())
    assert by_path.returncode == 0 and by_path.stdout.strip().splitlines()[-1] == "vert", by_path.stderr[-2000:]
    code = ("import evaluate, json; m = evaluate.load('radmetrics/green', judge=%r, cache=False, "
            "max_new_tokens=256, progress=False); o = m.compute(predictions=%r, references=%r); "
            "print(json.dumps(o['scores']))") % (str(tiny_judge), CANDS[:2], REFS[:2])
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env=os.environ.copy())
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == pytest.approx(TARGETS[:2])


def test_cli_transformers_backend_then_cache_hit(tiny_judge, tmp_path):
    src = tmp_path / "pairs.csv"
    import csv

    with src.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["study", "gt_report", "prediction"])
        writer.writeheader()
        for i, (r, c) in enumerate(zip(REFS, CANDS)):
            writer.writerow({"study": i, "gt_report": r, "prediction": c})
    out = tmp_path / "results.jsonl"
    cache = tmp_path / "cache.sqlite"
    first = run_cli("score", "--metric", "green", "--input", src, "--output", out, "--judge", tiny_judge,
                    "--max-new-tokens", 256, "--cache", cache)
    assert "reference = 'gt_report', candidate = 'prediction'" in first.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["green"] for r in rows] == pytest.approx(TARGETS)
    assert rows[0]["study"] == "0" and rows[0]["parsed"] is True and rows[0]["judge_output"].startswith("[Expl")
    fp = rows[0]["fingerprint"]
    assert fp["judge"]["model"] == str(tiny_judge) and fp["prompt_version"] and fp["generation"]["temperature"] == 0
    summary = json.loads((tmp_path / "results.jsonl.summary.json").read_text())
    assert summary["summary"]["green"] == pytest.approx(sum(TARGETS) / len(TARGETS))
    # Second run: every answer from the cache; the model is never even loaded.
    second = run_cli("score", "--metric", "green", "--input", src, "--output", tmp_path / "again.jsonl",
                     "--judge", tiny_judge, "--max-new-tokens", 256, "--cache", cache, "--no-progress")
    assert "Loading weights" not in second.stderr
    again = [json.loads(line) for line in (tmp_path / "again.jsonl").read_text().splitlines()]
    assert [r["green"] for r in again] == [r["green"] for r in rows]


def test_readme_sample_command_on_replay(tmp_path):
    out = tmp_path / "results.jsonl"
    run_cli("score", "--metric", "green", "--input", SAMPLE / "pairs.jsonl", "--backend", "replay",
            "--replay", SAMPLE / "green_replay.jsonl", "--output", out)
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert rows["green-paper-A2"]["green"] == 0.75
    assert rows["green-repro-1"]["green"] == pytest.approx(1 / 6)
    assert rows["truncated-judge-output"]["green"] is None
    assert "no [Matched Findings] section" in rows["truncated-judge-output"]["reason"]
    # the empty candidate is judged (GREEN 0: nothing matched) and counted, not dropped from the mean
    assert rows["empty-candidate"]["green"] == 0.0 and rows["empty-candidate"]["details"]["empty_candidate"]
    summary = json.loads((tmp_path / "results.jsonl.summary.json").read_text())["summary"]
    assert summary["num_empty_candidates"] == 1 and summary["num_unscored"] == 1


def test_shared_prefix_cache_gives_the_same_answers(tiny_judge):
    """The KV of the instructions shared by all GREEN prompts is computed once and reused; answers must be
    identical to plain left-padded batches."""
    plain = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, prefix_cache=False,
                                 max_batch_size=4)
    shared = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, max_batch_size=4)
    system = radmetrics.get_scoring_system("green")
    prompts = [system.build_prompt(r, c) for r, c in zip(REFS, CANDS)]
    encoded = [shared.backend.encode(p) for p in prompts]
    prefix = shared.backend._shared_prefix(encoded)
    assert prefix is not None and prefix[1] > 100  # the GREEN instructions
    config = radmetrics.GenerationConfig(**GEN)
    assert shared.generate(prompts, config, progress=False) == plain.generate(prompts, config, progress=False)
