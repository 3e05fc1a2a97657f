"""--system-option KEY=VALUE (score, meta-eval, data transform) and system_options= reach the scoring system;
an unknown one is a one-line error naming the valid ones (CLI exit 2)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, REPO, SAMPLE

import radmetrics
from radmetrics.cli import cli

REFS = ["Heart size normal. Lungs clear.", "Small left effusion."]
CANDS = ["Heart size normal. Lungs clear. Rib fracture. Pulmonary edema.", "Small left effusion."]


def test_score_with_a_system_option(fake_judge, tmp_path):
    src, out = tmp_path / "pairs.jsonl", tmp_path / "out.jsonl"
    src.write_text("\n".join(json.dumps({"reference": r, "candidate": c}) for r, c in zip(REFS, CANDS)))
    args = ["score", "-m", "finerad_score", "-i", str(src), "-o", str(out), "--backend", "fake", "--no-cache",
            "--no-progress"]
    summed = CliRunner().invoke(cli, args)
    worst = CliRunner().invoke(cli, args[:-1] + ["--system-option", "report_score=max", "--no-progress"])
    assert summed.exit_code == 0 and worst.exit_code == 0, summed.output + worst.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # two deleted lines, each an urgent error (3): the sum is 6, the max 3
    assert [r["finerad_score"] for r in rows] == [3.0, 0.0] and rows[0]["severity_sum"] == 6


def test_unknown_system_option_exits_2_naming_the_valid_ones(tmp_path):
    run = subprocess.run([sys.executable, "-m", "radmetrics.cli", "score", "-m", "vert", "-i", str(SAMPLE / "pairs.jsonl"),
                          "-o", str(tmp_path / "o.jsonl"), "--replay", str(SAMPLE / "green_replay.jsonl"),
                          "--system-option", "shots=5"], capture_output=True, text=True, cwd=REPO, env=os.environ.copy())
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "Scoring system 'vert' has no option 'shots'. Its options:" in run.stderr and "shots_path" in run.stderr
    with pytest.raises(radmetrics.RadmetricsError, match="no option 'shots'"):
        radmetrics.score("vert", ["a"], ["b"], backend="replay", judge_options={"path": str(SAMPLE / "green_replay.jsonl")},
                         system_options={"shots": 5})


@pytest.mark.parametrize("option,value,expected", [
    ("few_shot", "False", False), ("few_shot", "no", False), ("few_shot", "ON", True), ("few_shot", "0", False),
    ("max_retries", "2", 2), ("max_retries", "3.0", 3)])
def test_system_options_are_read_as_their_kind(option, value, expected, tmp_path):
    """Review 13: `--system-option few_shot=False` reached the system as the string "False", a true value: the
    run was few-shot and said so. Values are now read as the kind of the option's default."""
    system = radmetrics.get_scoring_system("finerad_score", **{option: value})
    assert getattr(system, option) == expected and type(getattr(system, option)) is type(expected)
    if option == "few_shot":
        assert system.prompt_version.endswith("fewshot-gpt4" if expected else "zeroshot")


@pytest.mark.parametrize("metric,option,message", [
    ("finerad_score", "few_shot=maybe", "option few_shot takes true or false, not 'maybe'"),
    ("finerad_score", "max_retries=abc", "option max_retries takes a whole number, not 'abc'"),
    ("finerad_score", "max_retries=2.5", "option max_retries takes a whole number, not 2.5"),
    ("finerad_score", "max_retries=-1", "option max_retries must be at least 0"),
    ("finerad_score", "max_retries=21", "option max_retries must be at most 20, not 21"),  # 1e30: asked until the judge failed
    ("vert", "score_scale=0", "score_scale must be above 0"),
    ("vert", "illustrations=2", "option illustrations takes true or false, not 2"),
    ("vert", "k=-3", "option k must be at least 0"),
])
def test_a_system_option_of_the_wrong_kind_is_refused_before_any_judging(metric, option, message, tmp_path):
    """Review 13: max_retries=abc and score_scale=0 were tracebacks after the judge had answered."""
    run = subprocess.run([sys.executable, "-m", "radmetrics.cli", "score", "-m", metric, "-i", str(SAMPLE / "pairs.jsonl"),
                          "-o", str(tmp_path / "o.jsonl"), "--replay", str(SAMPLE / "green_replay.jsonl"),
                          "--system-option", option], capture_output=True, text=True, cwd=tmp_path, env=os.environ.copy())
    assert run.returncode == 2 and "Traceback" not in run.stderr and message in run.stderr, run.stderr[-2000:]
    assert not (tmp_path / "o.jsonl").exists()


def test_meta_eval_with_a_system_option(fake_judge, tmp_path):
    out = tmp_path / "report"
    run = CliRunner().invoke(cli, ["meta-eval", "-m", "green", "-d", str(FIXTURES / "rexval"), "--backend", "fake",
                                   "--no-cache", "--resamples", "20", "--system-option", "max_words=3", "-o", str(out)])
    assert run.exit_code == 0, run.output
    results = json.loads((out / "results.json").read_text())
    from radmetrics.data import load_expert_dataset

    data = load_expert_dataset("rexval", FIXTURES / "rexval")
    expected = radmetrics.score("green", data["reference"], data["candidate"], backend="fake", cache=False,
                                progress=False, system_options={"max_words": 3})
    with (out / "per_sample.csv").open() as fh:
        import csv

        scores = [float(r["green"]) if r["green"] else None for r in csv.DictReader(fh)]
    assert scores == pytest.approx(expected.scores) and results["metrics"]["green"]["num_unscored"] == 0


def test_transform_with_a_step_option(fake_judge, tmp_path):
    src = tmp_path / "reports.jsonl"
    src.write_text(json.dumps({"reference": "No acute cardiopulmonary process.", "candidate": "x"}))
    base = ["data", "transform", "inject", "-i", str(src), "-o", str(tmp_path / "out"), "--backend", "fake", "--no-cache"]
    # the fake judge's first injection is implausible (rejected by validation): one attempt is not enough
    run = CliRunner().invoke(cli, base + ["--system-option", "max_attempts=1"])
    assert run.exit_code == 1, run.output  # no row transformed: exit 1, as score (review 12)
    assert "0/1 rows done, 1 failed" in run.output
    bad = CliRunner().invoke(cli, base + ["--system-option", "attempts=1"])
    assert isinstance(bad.exception, radmetrics.InputError) and "its options: max_attempts, validate" in str(bad.exception)


@pytest.mark.parametrize("command", ["score", "compare", "meta-eval", "preference-eval", "rexamine", "reward-check"])
def test_a_bad_vert_shots_file_stops_every_command_before_it_writes_anything(command, tmp_path):
    """Review 29c: the shots file was read at the first prompt, so `--system-option shots_path=FOLDER k=2` left
    OUTPUT.part and OUTPUT.part.json after its error in `score`, and in compare, meta-eval, preference-eval and
    rexamine judged the other metrics and wrote a report with VERT "failed" (exit 2 only at the end). The file is
    now read when the option is set: one line naming shots_path, exit 2, nothing written."""
    shots = tmp_path / "shots"
    shots.mkdir()  # a folder given as the shots file
    out = tmp_path / "out"
    replay = ["--backend", "replay", "--replay", str(SAMPLE / "green_replay.jsonl")]
    args = {
        "score": ["-i", SAMPLE / "pairs.jsonl", "-o", tmp_path / "out.jsonl"],
        "compare": ["-s", f"A={SAMPLE / 'pairs.jsonl'}", "-s", f"B={SAMPLE / 'system_b.jsonl'}", "-m", "bleu-4",
                    "-o", out],
        "meta-eval": ["-d", FIXTURES / "rexval", "-m", "bleu-2", "-o", out],
        "preference-eval": ["-i", FIXTURES / "preference" / "preferences.jsonl", "-m", "bleu-2", "-o", out],
        "rexamine": ["-i", FIXTURES / "rexamine" / "sites.jsonl", "-m", "bleu-2", "-o", out],
        "reward-check": ["-i", SAMPLE / "pairs.jsonl", "--completions", "--prompt-column", "reference",
                         "--completion-column", "candidate", "-o", tmp_path / "out.json"],
    }[command]
    run = subprocess.run([sys.executable, "-m", "radmetrics.cli", command, "-m", "vert", *map(str, args), *replay,
                          "--system-option", f"shots_path={shots}", "--system-option", "k=2"],
                         capture_output=True, text=True, cwd=tmp_path, env=os.environ.copy())
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-2000:]
    assert f"VERT shots_path: {shots} is a folder" in run.stderr.strip().splitlines()[-1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shots"]  # no part file, no report folder
