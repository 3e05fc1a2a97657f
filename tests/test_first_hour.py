"""The first hour with radmetrics (issue 17): failures are one line with the remedy and keep finished work;
the meta-eval report says which rows each number used, writes strict JSON and one self-contained HTML page.
Every test drives the real CLI in a subprocess."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from conftest import FIXTURES, REPO, SAMPLE

WORD_OVERLAP = str(FIXTURES / "word_overlap") + ":scores"  # the per-sample key of its two outputs
BROKEN = str(FIXTURES / "broken_metric")


def cli(*args, cwd=REPO, env=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "radmetrics.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, env=env or os.environ.copy(), timeout=timeout)


def assert_one_line_error(run, *needles):
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    error_lines = [line for line in run.stderr.splitlines() if line.startswith("Error:")]
    assert len(error_lines) == 1, run.stderr[-2000:]
    for needle in needles:
        assert needle in error_lines[0], error_lines[0]
    return error_lines[0]


# -- 1. meta-eval: early checks, and finished work kept -------------------------------------------------------------
def test_meta_eval_offline_hub_baseline_fails_before_any_judging(tiny_judge, tmp_path):
    """The README's `-m green -m vert -m rouge` offline used to judge everything, then die on rouge."""
    start = time.monotonic()
    run = cli("meta-eval", "-m", "green", "-m", "rouge", "-d", FIXTURES / "rexval", "--judge", tiny_judge,
              "--cache", tmp_path / "c.sqlite", "-o", tmp_path / "report")
    line = assert_one_line_error(run, "'rouge'", "Offline", "Did you mean radmetrics' 'rouge-l'")
    assert time.monotonic() - start < 60, "the check must come before the judge work"
    assert not (tmp_path / "c.sqlite").exists() or "green" not in line  # nothing was judged
    assert "Loading weights" not in run.stderr  # the judge was never loaded


@pytest.mark.slow
def test_meta_eval_keeps_finished_metrics_when_one_fails(tiny_judge, tmp_path):
    out = tmp_path / "report"
    run = cli("meta-eval", "-m", "green", "-m", BROKEN, "-m", WORD_OVERLAP, "-d", FIXTURES / "rexval",
              "--judge", tiny_judge, "--max-new-tokens", "256", "--cache", tmp_path / "c.sqlite",
              "--resamples", "50", "-o", out)
    assert_one_line_error(run, "1 of 3 metrics failed", "broken_metric")
    results = json.loads((out / "results.json").read_text())
    assert results["metrics"][BROKEN]["failed"].startswith("RuntimeError: scorer weights not found")
    green = results["metrics"]["green"]
    import csv

    with (out / "per_sample.csv").open() as fh:
        scored = sum(1 for row in csv.DictReader(fh) if row["green"])
    # every number says how many rows it used: the rows green scored (the tiny judge reads some pairs wrongly)
    assert green["n_scored"] == scored == green["kendall_tau_b"]["n"] and 0 < scored <= results["n"]
    assert green["num_unscored"] == results["n"] - scored
    assert isinstance(results["metrics"][WORD_OVERLAP]["spearman"]["value"], float)
    assert any("broken_metric" in w and "not computed" in w for w in results["warnings"])
    html = (out / "report.html").read_text()
    assert "scorer weights not found" in html and "word_overlap" in html


@pytest.mark.parametrize("args, needles", [
    (["-m", "green", "-d", "/nonexistent/rexval"], ["/nonexistent/rexval", "no such folder"]),
    (["-m", "gren", "-d", str(FIXTURES / "rexval")], ["'gren' could not be loaded", "Did you mean radmetrics' 'green'"]),
    (["-m", "vert", "-d", str(FIXTURES / "rexval")], ["vert has no published default judge", "--judge"]),
    (["-m", "green", "-d", "someone/not-a-dataset"], ["someone/not-a-dataset", "no Hub dataset"]),
])
def test_meta_eval_bad_arguments_are_one_line(args, needles, tmp_path):
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1"}
    assert_one_line_error(cli("meta-eval", *args, "-o", tmp_path / "r", env=env), *needles)


def test_meta_eval_says_why_a_constant_metric_has_no_correlation_and_tests_nothing_with_it(tmp_path):
    """Review 10 (F22): scipy's raw ConstantInputWarning reached the terminal, the table said only n/a, and the
    paired test against the constant metric printed p = 0.001."""
    out = tmp_path / "report"
    run = cli("meta-eval", "-m", FIXTURES / "constant_metric", "-m", WORD_OVERLAP, "-d", FIXTURES / "rexval",
              "-o", out, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Warning" not in run.stderr and "warn" not in run.stderr.lower(), run.stderr[-3000:]
    assert "n/a for constant_metric: the scores (or the expert values) are the same on every row" in run.stdout
    (test,) = json.loads((out / "results.json").read_text())["pairwise_randomization"]
    assert test["p_value"] is None and test["difference"] is None and "undefined" in test["skipped"]
    assert "0.001" not in (out / "summary.md").read_text()


def test_meta_eval_into_an_earlier_report_folder_leaves_no_plot_of_the_earlier_run(tmp_path):
    """Review 10 (F21): a second run into the same folder left the first run's scatter plots of metrics it did not
    have beside the new report. A user's own files there are kept."""
    out = tmp_path / "report"
    first = cli("meta-eval", "-m", FIXTURES / "constant_metric", "-m", WORD_OVERLAP, "-d", FIXTURES / "rexval",
                "-o", out, cwd=tmp_path)
    assert first.returncode == 0 and (out / "scatter_constant_metric.png").exists(), first.stderr[-2000:]
    (out / "notes.png").write_bytes(b"mine")
    second = cli("meta-eval", "-m", WORD_OVERLAP, "-d", FIXTURES / "rexval", "-o", out, cwd=tmp_path)
    assert second.returncode == 0, second.stderr[-2000:]
    assert sorted(p.name for p in out.glob("*.png")) == ["notes.png", "scatter_word_overlap_scores.png"]


_PAIRS = str(SAMPLE / "pairs.jsonl")
_SYSTEM_B = str(SAMPLE / "system_b.jsonl")
_STAT_COMMANDS = {
    "compare": ["compare", "-s", f"A={_PAIRS}", "-s", f"B={_SYSTEM_B}", "-m", "rouge-l"],
    "meta-eval": ["meta-eval", "-m", "rouge-l", "-d", str(FIXTURES / "rexval")],
    "preference-eval": ["preference-eval", "-i", str(FIXTURES / "preference" / "preferences.jsonl"), "-m", "rouge-l"],
    "rexamine": ["rexamine", "-i", str(FIXTURES / "rexamine" / "sites.jsonl"), "-m", "rouge-l"],
}


@pytest.mark.parametrize("command,option,value,needle", [
    ("compare", "--resamples", "0", None), ("compare", "--resamples", "1", "0 for none, or at least 10"),
    ("compare", "--resamples", "-1", "0 for none, or at least 10"), ("compare", "--alpha", "2", "0<x<1"),
    ("compare", "--alpha", "0", "0<x<1"), ("compare", "--seed", "-1", "x>=0"), ("compare", "--confidence", "1", "0<x<1"),
    ("meta-eval", "--seed", "-1", "x>=0"), ("meta-eval", "--split-seed", "-1", "x>=0"),
    ("meta-eval", "--resamples", "3", "at least 10"), ("preference-eval", "--seed", "-1", "x>=0"),
    ("rexamine", "--seed", "-1", "x>=0"), ("rexamine", "--alpha", "1.5", "0<x<1"),
    # nan passed click's FloatRange: every ReXamine site test "not significant" (p < nan is false)
    ("rexamine", "--alpha", "nan", "nan is not a finite number"),
    ("meta-eval", "--resamples", "99999999999999999999999", "at most 1,000,000"),
])
def test_statistics_options_numpy_or_scipy_would_refuse_are_usage_errors_before_any_work(command, option, value,
                                                                                         needle, tmp_path):
    """Review 11 (R6, R7): --resamples 0 in compare and a negative seed anywhere were scipy/numpy tracebacks after
    the metrics ran; --resamples 1 printed "95% CIs" that missed their own estimate; --alpha 2 was taken."""
    run = cli(*_STAT_COMMANDS[command], "-o", tmp_path / "out", option, value, cwd=tmp_path)
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    if needle is None:  # compare --resamples 0: no intervals and no tests, each n/a with why
        assert run.returncode == 0, run.stderr[-2000:]
        (pair,) = json.loads((tmp_path / "out" / "results.json").read_text())["metrics"]["rouge-l"]["pairs"]
        assert pair["p_value"] is None and pair["ci_low"] is None and pair["reason"] == "no test: --resamples 0"
        return
    assert run.returncode == 2 and f"Invalid value for '{option}'" in run.stderr and needle in run.stderr, \
        run.stderr[-2000:]
    assert not (tmp_path / "out").exists()


def test_rexamine_with_baselines_only_says_why_it_needs_a_judge(tmp_path):
    """Review 11 (R8): rows without standardized references, ROUGE-L asked for, no judge named: the error was
    "The transformers backend needs model=" (the user chose no backend)."""
    line = assert_one_line_error(cli(*_STAT_COMMANDS["rexamine"], "-o", tmp_path / "out", cwd=tmp_path),
                                 "2 rows have no reference_standardized and 2 rows have no candidate: rexamine "
                                 "writes them with a judge", "--judge MODEL", "or add the column")
    assert "transformers backend" not in line


def test_meta_eval_unreachable_judge_fails_in_seconds(tmp_path):
    """No local model, no cache, offline: a clear line at once instead of minutes of Hub retries (50 s before).
    Timed against the same command failing on a missing replay file (same imports, no Hub at all), so that a
    loaded machine's slow start-up is not counted: the Hub check may add seconds, not the retries' minute."""
    start = time.monotonic()
    baseline = cli("meta-eval", "-m", "green", "-d", FIXTURES / "rexval", "-o", tmp_path / "b",
                   "--backend", "replay", "--replay", tmp_path / "missing.jsonl")
    assert_one_line_error(baseline, "missing.jsonl")
    startup = time.monotonic() - start
    start = time.monotonic()
    run = cli("meta-eval", "-m", "green", "-d", FIXTURES / "rexval", "-o", tmp_path / "r")
    assert_one_line_error(run, "StanfordAIMI/GREEN-RadLlama2-7b", "HF_HUB_OFFLINE=1", "--judge")
    assert time.monotonic() - start < startup + 20, (startup, time.monotonic() - start)


# -- 3./4. the report: its own title, per-metric n, strict JSON, warnings for empty metrics -------------------------
def test_report_title_comes_from_the_data_and_numbers_say_their_rows(tiny_judge, tmp_path):
    from radmetrics.data import convert

    folder = convert("radeval", FIXTURES / "radeval", tmp_path / "radeval")
    out = tmp_path / "report"
    # max-new-tokens 8 truncates every analysis: green is unscored on every row, a warning, never NaN; the report
    # is written and the run exits 2 naming the cut answers (review 29a: it exited 0)
    run = cli("meta-eval", "-m", WORD_OVERLAP, "-m", "green", "-d", folder, "--judge", tiny_judge,
              "--max-new-tokens", "8", "--cache", tmp_path / "c.sqlite", "--resamples", "50", "-o", out)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-3000:]
    assert "green: 12 judge answer(s) reached the token limit, left out of its correlations; rerun with a higher " \
           "--max-new-tokens" in run.stderr.splitlines()[-1], run.stderr[-3000:]
    text = (out / "results.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    results = json.loads(text)  # strict: json.loads would accept NaN, so check the text as well
    assert results["dataset"] == "radeval"
    summary = (out / "summary.md").read_text()
    assert summary.startswith("# Meta-evaluation on radeval") and "rexval" not in summary
    green = results["metrics"]["green"]
    assert green["n_scored"] == 0 and green["kendall_tau_b"]["value"] is None
    assert any(w.startswith("green: every row is unscored") for w in results["warnings"])
    overlap = results["metrics"][WORD_OVERLAP]
    # the fixture has rows whose annotation could not be read (no expert score): τ uses only the others
    import datasets

    with_expert = sum(r["expert_score"] is not None for r in datasets.load_from_disk(str(folder)))
    assert overlap["kendall_tau_b"]["n"] == with_expert == results["n_with_expert_score"] < results["n"]
    assert "| n (corr.) |" in summary or "n (corr.)" in summary
    assert results["pairwise_randomization"][0]["n"] == 0 and "skipped" in results["pairwise_randomization"][0]


def test_help_accepts_dash_h_and_documents_every_meta_eval_flag():
    import click

    from radmetrics.cli import cli as group

    run = cli("meta-eval", "-h")
    assert run.returncode == 0 and "--seed" in run.stdout
    for name in ("meta-eval", "score"):
        undocumented = [p.name for p in group.commands[name].params if isinstance(p, click.Option) and not p.help]
        assert undocumented == [], f"{name}: options without help: {undocumented}"



def test_help_names_the_response_cache_file_the_commands_use():
    """Review 40b: every judge command's --help said the cache was "~/.cache/radmetrics" (the folder); the file is
    ~/.cache/radmetrics/judgments.sqlite, or $RADMETRICS_CACHE, as README.md says."""
    for command in (("score",), ("meta-eval",), ("data", "transform")):
        run = cli(*command, "--help")
        text = "".join(run.stdout.split())  # click wraps lines, at a hyphen too
        assert "~/.cache/radmetrics/judgments.sqlite" in text and "$RADMETRICS_CACHE" in text, (command, text)
    run = cli("score", "--help")
    assert "sentence-transformers/paraphrase-mpnet-base-v2" in "".join(run.stdout.split())

# -- 2. no judge reachable: seconds, and what to do -------------------------------------------------------------------
SAMPLE_PAIRS = SAMPLE / "pairs.jsonl"


def test_score_without_a_reachable_judge_says_what_to_do_in_seconds(tmp_path):
    offline = cli("score", "-m", "green", "-i", SAMPLE_PAIRS, "-o", tmp_path / "o.jsonl")
    assert_one_line_error(offline, "StanfordAIMI/GREEN-RadLlama2-7b", "HF_HUB_OFFLINE=1", "--judge",
                          "--backend openai")
    # online mode but the Hub endpoint cannot be reached (a closed local port stands in for "no network")
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env["HF_ENDPOINT"] = "http://127.0.0.1:9"
    start = time.monotonic()
    online = cli("score", "-m", "green", "-i", SAMPLE_PAIRS, "-o", tmp_path / "o.jsonl", env=env)
    assert_one_line_error(online, "cannot be reached", "local folder")
    assert time.monotonic() - start < 30 and not (tmp_path / "o.jsonl").exists()
    dead_server = cli("score", "-m", "green", "-i", SAMPLE_PAIRS, "-o", tmp_path / "o.jsonl", "--backend", "openai",
                      "--judge", "m", "--base-url", "http://127.0.0.1:9/v1")
    assert_one_line_error(dead_server, "Cannot connect to the judge server at http://127.0.0.1:9/v1")


@pytest.mark.parametrize("metric", ["vert", "finerad_score"])
def test_metrics_without_a_published_judge_say_so(metric, tmp_path):
    run = cli("score", "-m", metric, "-i", SAMPLE_PAIRS, "-o", tmp_path / "o.jsonl")
    assert_one_line_error(run, f"{metric} has no published default judge", "--judge MODEL", "judge=")
    import radmetrics
    from radmetrics.errors import JudgeError

    with pytest.raises(JudgeError, match="judge=... in radmetrics.score or evaluate.load"):
        radmetrics.score(metric, ["a"], ["b"])



def test_data_transform_without_a_judge_names_the_flag(tmp_path):
    """Review 40b: `data transform` with no --judge ended in "The openai backend needs model= (...)" (a Python
    argument, not the command's flag), and its --help said the default was "the metric's published judge": a data
    step has no metric, hence no default judge."""
    for backend in (["--backend", "openai", "--base-url", "http://127.0.0.1:9/v1"], []):
        run = cli("data", "transform", "standardize", "-i", SAMPLE_PAIRS, "-o", tmp_path / "std", *backend)
        assert_one_line_error(run, "data transform standardize", "--judge MODEL")
        assert "model=" not in run.stderr and not (tmp_path / "std").exists()
    helped = " ".join(cli("data", "transform", "--help").stdout.split())
    assert "published judge" not in helped and "inject takes max_attempts=N and validate=false" in helped
    assert "shots_path" not in helped  # VERT's options are no data step's

# -- 7. the output format follows the extension ----------------------------------------------------------------------
def test_output_format_follows_the_extension(tmp_path):
    replay = SAMPLE / "green_replay.jsonl"
    refused = cli("score", "-m", "green", "-i", SAMPLE_PAIRS, "--replay", replay, "-o", tmp_path / "x.txt")
    assert_one_line_error(refused, "unknown results format '.txt'", ".parquet")
    assert not (tmp_path / "x.txt").exists()
    # review 12: -o x.json wrote JSON Lines, which json.load refuses
    as_json = cli("score", "-m", "green", "-i", SAMPLE_PAIRS, "--replay", replay, "-o", tmp_path / "x.json")
    assert_one_line_error(as_json, "one JSON object per row (JSON Lines), not one JSON document: name it x.jsonl")
    assert not (tmp_path / "x.json").exists()
    run = cli("score", "-m", "green", "-i", SAMPLE_PAIRS, "--replay", replay, "-o", tmp_path / "x.parquet",
              "--no-cache")
    assert run.returncode == 0, run.stderr[-2000:]
    assert (tmp_path / "x.parquet").read_bytes()[:4] == b"PAR1"  # real Parquet, not JSON lines
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "x.parquet").to_pylist()
    jsonl = cli("score", "-m", "green", "-i", SAMPLE_PAIRS, "--replay", replay, "-o", tmp_path / "x.jsonl", "--no-cache")
    rows = [json.loads(line) for line in (tmp_path / "x.jsonl").read_text().splitlines()]
    assert [r["green"] for r in table] == [r["green"] for r in rows] and len(rows) == 8
    assert json.loads(table[0]["fingerprint"]) == rows[0]["fingerprint"]
    # the summary table names the judge that produced the numbers
    assert "judge" in jsonl.stderr and "replay" in jsonl.stderr


# -- 8. fine-tune and Hub paths ----------------------------------------------------------------------------------------
def test_hub_push_without_network_is_one_line(tmp_path):
    folder = tmp_path / "judge"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE",)}
    env.update(HF_ENDPOINT="http://127.0.0.1:9", HF_TOKEN="hf_dummy_token_for_the_test")
    run = cli("hub", "push", folder, "my-lab/judge", env=env)
    assert_one_line_error(run, "network request failed", "HF_ENDPOINT")


def test_train_judge_takes_an_openai_compatible_teacher(tmp_path):
    help_text = cli("train", "judge", "-h").stdout
    assert "--teacher-base-url" in help_text
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"reference": "No effusion.", "candidate": "Small effusion."}) + "\n")
    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text("{}")
    run = cli("train", "judge", "--base", base, "--recipe", "green", "--data", pairs, "-o", tmp_path / "out",
              "--teacher-base-url", "http://127.0.0.1:9/v1")
    assert run.returncode == 2 and "needs a teacher: --teacher MODEL" in run.stderr, run.stderr[-2000:]
    assert "Traceback" not in run.stderr


def test_train_judge_names_its_own_flags_before_any_work(tmp_path):
    """Review findings: a teacher on a closed port was retried 35 s, then every row "dropped: empty judge output";
    the missing-address error named --base-url (train's flag is --teacher-base-url); a teacher given without
    --recipe green was silently ignored by the vert default, which then failed with a traceback on GREEN pairs; a
    --base folder that does not exist was a traceback about Hub ids."""
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"reference": "No effusion.", "candidate": "Small effusion."}) + "\n")
    counts = tmp_path / "counts.jsonl"  # error counts (RadEval, ReXVal): lower is better
    counts.write_text(json.dumps({"reference": "No effusion.", "candidate": "Small effusion.", "expert_score": 0.0,
                                  "expert_higher_is_better": False}) + "\n")
    (tmp_path / "config.json").write_text("{}")  # --base: a folder that holds a model (the checks come first)
    base = ["train", "judge", "--base", tmp_path, "--data", pairs, "-o", tmp_path / "out"]
    cases = [(["--recipe", "green", "--teacher", "t", "--teacher-base-url", "http://127.0.0.1:9/v1"],
              "Cannot connect to the judge server at http://127.0.0.1:9/v1: start the server, fix the address "
              "(--teacher-base-url), or use a local judge (--teacher-backend transformers --teacher FOLDER)"),
             (["--recipe", "green", "--teacher", "t", "--teacher-backend", "openai"],
              "needs a server address: --teacher-base-url URL on the command line"),
             (["--teacher-replay", pairs], "are for --recipe green; the recipe is vert (the default)"),
             ([], "has no expert_score column: the vert recipe learns expert scores"),
             (["--data", counts], "this data's expert_score is lower-is-better"),  # review 19: taught inverted
             (["--base", tmp_path / "nope", "--recipe", "green", "--teacher-replay", pairs],
              f"The base model '{tmp_path / 'nope'}' is not a folder here")]
    for extra, expected in cases:
        started = time.monotonic()
        run = cli(*base, *extra, cwd=tmp_path)
        assert_one_line_error(run, expected)
        assert time.monotonic() - started < 30 and not (tmp_path / "out" / "training.json").exists()


def test_train_judge_vert_reads_a_csv_as_its_jsonl(tmp_path):
    """Review 20 (F5): a CSV's values are text, so expert_higher_is_better "False" passed the lower-is-better
    refusal, and an expert_score "1", or an empty cell (meant to be left out with a note), was a TypeError
    traceback. A JSON 0 passed the refusal too."""
    (tmp_path / "config.json").write_text("{}")  # --base: a folder that holds a model (the checks come first)
    head = "reference,candidate,expert_score,expert_higher_is_better\n"
    files = {"counts.csv": head + "No effusion.,Small effusion.,1,False\n",
             "zero.jsonl": json.dumps({"reference": "No effusion.", "candidate": "Small effusion.", "expert_score": 0,
                                       "expert_higher_is_better": 0}) + "\n",
             "empty.csv": head + "No effusion.,Small effusion.,,True\n",
             "word.csv": head + "No effusion.,Small effusion.,1,True\nNo edema.,No edema.,high,True\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    cases = [("counts.csv", "this data's expert_score is lower-is-better"),
             ("zero.jsonl", "this data's expert_score is lower-is-better"),
             ("empty.csv", "no pair has an expert score to learn"),
             ("word.csv", "row 2: expert_score 'high' is not a number")]
    for name, expected in cases:
        run = cli("train", "judge", "--base", tmp_path, "--data", tmp_path / name, "-o", tmp_path / "out",
                  cwd=tmp_path)
        assert_one_line_error(run, expected)
        assert ("pair left out: row 1: no expert score" in run.stderr) == (name == "empty.csv"), run.stderr


def test_train_er2score_checks_its_teacher_before_any_work(tmp_path):
    """Review finding: a teacher on a closed port was retried 33 s and ended in a traceback ("no training
    pairs"); no --teacher said "The openai backend needs model=", a Python argument."""
    refs = tmp_path / "refs.jsonl"
    refs.write_text(json.dumps({"reference": "No effusion."}) + "\n")
    counts = tmp_path / "counts.jsonl"  # error counts (RadEval, ReXVal): lower is better
    counts.write_text(json.dumps({"reference": "No effusion.", "candidate": "Small effusion.", "expert_score": 0.0,
                                  "expert_higher_is_better": False}) + "\n")
    (tmp_path / "config.json").write_text("{}")  # --base: a folder that holds a model (the checks come first)
    base = ["train", "er2score", "--base", tmp_path, "--references", refs, "--teacher-backend", "openai",
            "-o", tmp_path / "er2"]
    for extra, expected in ((["--teacher", "t", "--base-url", "http://127.0.0.1:9/v1"], "Cannot connect to the judge "
                             "server at http://127.0.0.1:9/v1"),
                            ([], "teacher generation needs the teacher: --teacher MODEL")):
        started = time.monotonic()
        assert_one_line_error(cli(*base, *extra, cwd=tmp_path), expected)
        assert time.monotonic() - started < 30 and not (tmp_path / "er2").exists()


def test_the_train_commands_teacher_advice_names_only_their_own_flags(tmp_path):
    """Review 43: a teacher that could not be reached was advised in `score`'s flags, which the train commands do
    not have: `train judge --teacher gpt-4o` offline said "use an OpenAI-compatible server (--backend openai
    --base-url URL ...)" (train judge has --teacher-base-url), a teacher server on a closed port "or use a local
    judge (--backend transformers --judge FOLDER ...)" (both commands name them --teacher-backend, --teacher), and
    er2score's --base-url beside a transformers teacher "add --backend openai"."""
    import re

    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"reference": "No effusion.", "candidate": "Small effusion."}) + "\n")
    (tmp_path / "config.json").write_text("{}")  # --base: a folder that holds a model (the checks come first)
    offline = {**os.environ, "HF_HUB_OFFLINE": "1"}
    closed = "http://127.0.0.1:9/v1"
    judge = ["train", "judge", "--base", tmp_path, "--recipe", "green", "--data", pairs, "-o", tmp_path / "out"]
    er2 = ["train", "er2score", "--base", tmp_path, "--references", pairs, "-o", tmp_path / "out"]
    cases = [(judge + ["--teacher", "no-such-lab/teacher"], "--teacher-base-url URL"),
             (judge + ["--teacher", "t", "--teacher-base-url", closed], "--teacher-backend transformers --teacher"),
             (er2 + ["--teacher-backend", "transformers", "--teacher", "no-such-lab/teacher"],
              "--teacher-backend openai --base-url URL"),
             (er2 + ["--teacher-backend", "openai", "--teacher", "t", "--base-url", closed],
              "--teacher-backend transformers --teacher"),
             (er2 + ["--teacher-backend", "transformers", "--teacher", "t", "--base-url", closed],
              "add --teacher-backend openai to send")]
    for args, advice in cases:
        line = assert_one_line_error(cli(*args, cwd=tmp_path, env=offline), advice)
        own = set(re.findall(r"--[a-z][a-z-]+", cli(*args[:2], "-h").stdout))
        assert set(re.findall(r"--[a-z][a-z-]+", line)) <= own, (line, own)
        assert "judge_options" not in line  # Python's spelling, which a train command has no use for (review 44)
        assert not (tmp_path / "out").exists()


def test_an_interrupt_while_training_is_not_reported_as_a_judging_run():
    """Review finding: Ctrl-C in the optimizer loop said "7 answered, 0 cached; rerun to resume" and spoke of a
    part file; training has neither."""
    from radmetrics.cli import exit_status

    @exit_status.interrupt_scope
    def training():
        exit_status.note_interrupt("interrupted while training: nothing was written to out")
        raise KeyboardInterrupt

    assert exit_status.interrupted_line().startswith("interrupted: ")
    with pytest.raises(exit_status.RunInterrupted) as stopped:
        training()
    assert exit_status.interrupted_line(stopped.value.note) == "interrupted while training: nothing was written to out"
    assert exit_status.interrupted_line().startswith("interrupted: ")  # the note ended with its command (review 20)


def test_data_convert_lists_the_dataset_names(tmp_path):
    run = cli("data", "convert", "nosuch", tmp_path, "-o", tmp_path / "out")
    assert run.returncode == 2 and all(n in run.stderr for n in ("rexval", "radeval", "rate_eval", "refisco"))


def test_data_convert_and_transform_never_write_over_a_folder_that_holds_something(tmp_path):
    """Review finding: `data convert ... -o FOLDER` replaced a hand-written README.md there, and a converted
    ReXVal folder given as -o for RaTE-Eval was replaced without a word."""
    rate_eval = FIXTURES / "rate_eval" / "rate_eval_paragraph_test.csv"
    out = tmp_path / "notes"
    out.mkdir()
    (out / "README.md").write_text("# my hand-written notes\n")
    run = cli("data", "convert", "rate_eval", rate_eval, "-o", out, cwd=tmp_path)
    assert_one_line_error(run, f"--output {out} is not empty (README.md)", "--overwrite")
    assert (out / "README.md").read_text() == "# my hand-written notes\n" and len(list(out.iterdir())) == 1
    rexval = tmp_path / "rexval"
    assert cli("data", "convert", "rexval", FIXTURES / "rexval", "-o", rexval, cwd=tmp_path).returncode == 0
    before = sorted(p.name for p in rexval.iterdir())
    assert_one_line_error(cli("data", "convert", "rate_eval", rate_eval, "-o", rexval), "is not empty")
    assert_one_line_error(cli("data", "transform", "standardize", "-i", rexval, "--column", "reference", "-o", rexval,
                              "--backend", "replay", "--replay", SAMPLE / "green_replay.jsonl"), "is the input folder")
    assert sorted(p.name for p in rexval.iterdir()) == before
    run = cli("data", "convert", "rate_eval", rate_eval, "-o", rexval, "--overwrite")
    assert run.returncode == 0 and "Wrote 6 rate_eval pairs" in run.stdout, run.stderr


# -- 6. --summary offline: before the judging, one line -------------------------------------------------------------
def test_summary_model_missing_offline_fails_before_judging(tmp_path):
    """Review 24 (L8): the line came after ~11 s of importing sentence-transformers (and torch) for nothing: the
    cache is looked up first now. The CLI runs as `radmetrics` does, and says at exit what it had imported."""
    replay = SAMPLE / "green_replay.jsonl"
    report = ("import atexit, sys; atexit.register(lambda: print('imported:', sorted(m for m in ('torch', "
              "'sentence_transformers', 'transformers', 'sklearn') if m in sys.modules), file=sys.stderr)); "
              "from radmetrics.cli import main; sys.argv[0] = 'radmetrics'; main()")
    run = subprocess.run([sys.executable, "-c", report, "score", "-m", "green", "-i", SAMPLE_PAIRS, "--replay",
                          replay, "-o", tmp_path / "o.jsonl", "--summary"], cwd=tmp_path, capture_output=True,
                         text=True, env=os.environ.copy(), timeout=120)
    assert_one_line_error(run, "summary model 'sentence-transformers/paraphrase-mpnet-base-v2'", "--summary-model")
    assert "imported: []" in run.stderr, run.stderr
    assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "o.jsonl.summary.json").exists()


@pytest.mark.slow
def test_train_er2score_input_files_with_bad_lines_are_one_line_errors(tmp_path):
    """--pairs and --references are read by the strict row reader: a line that is not a JSON object, or a pair
    without its sub-scores, is one line naming it, before any model is loaded."""
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"reference": "a", "accepted": "b", "rejected": "c", "accepted_scores": [0, 0, 0, 0, 0, 0]}\n'
                     '["not", "an", "object"]\n')
    counts = tmp_path / "counts.jsonl"  # error counts (RadEval, ReXVal): lower is better
    counts.write_text(json.dumps({"reference": "No effusion.", "candidate": "Small effusion.", "expert_score": 0.0,
                                  "expert_higher_is_better": False}) + "\n")
    (tmp_path / "config.json").write_text("{}")  # --base: a folder that holds a model (the checks come first)
    run = cli("train", "er2score", "--base", tmp_path, "--pairs", pairs, "-o", tmp_path / "out")
    assert_one_line_error(run, "line 2: a JSON list, not an object", "pairs file")
    pairs.write_text('{"reference": "a", "accepted": "b", "rejected": "c"}\n')
    run = cli("train", "er2score", "--base", tmp_path, "--pairs", pairs, "-o", tmp_path / "out")
    assert_one_line_error(run, "pair 0 has no list of accepted_scores")
    references = tmp_path / "references.jsonl"
    references.write_text('{"reference": "Heart normal."}\n{broken\n')
    run = cli("train", "er2score", "--base", tmp_path, "--references", references, "--teacher", "x",
              "--base-url", "http://127.0.0.1:9", "-o", tmp_path / "out")
    assert_one_line_error(run, "line 2: not JSON", "references file")


def test_list_names_everything_a_metric_flag_takes(tmp_path):
    """Review finding: meta-eval's unknown-metric error sends the user to `radmetrics list` for the baselines,
    which listed only scoring systems and backends."""
    import radmetrics
    from radmetrics import baselines

    run = cli("list", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    lines = dict(line.split(":", 1) for line in run.stdout.splitlines())
    assert lines["scoring systems"].strip().split(", ") == radmetrics.list_scoring_systems()
    assert lines["judge backends"].strip().split(", ") == radmetrics.list_judge_backends()
    listed = lines["baselines"].split(" (")[0].strip().split(", ")
    assert listed == baselines.list_baselines() and {"bleu-4", "rouge-l", "bertscore", "radgraph-f1"} <= set(listed)


def test_an_output_that_cannot_be_written_is_a_usage_error_before_any_work(tmp_path):
    """Review 12: `score -o` into a place nothing can be created was a PermissionError / FileNotFoundError /
    FileExistsError traceback, and `compare -o` one after every metric had run."""
    a_file = tmp_path / "a_file.jsonl"
    a_file.write_text("{}\n")
    replay = str(SAMPLE / "green_replay.jsonl")
    for output, reason in (("/proc/out.jsonl", "/proc is not writable"), (a_file / "out.jsonl", "is a file, not a folder")):
        run = cli("score", "-m", "green", "-i", _PAIRS, "--replay", replay, "-o", output, cwd=tmp_path)
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-2000:]
        assert f"cannot write file '{output}'" in run.stderr and reason in run.stderr
    run = cli("compare", "-r", _PAIRS, "-m", "rouge-l", "-s", f"A={_PAIRS}", "-s", f"B={_SYSTEM_B}",
              "-o", "/proc/report", cwd=tmp_path)
    assert run.returncode == 2 and "cannot write folder '/proc/report'" in run.stderr, run.stderr[-2000:]
    assert "Traceback" not in run.stderr


def test_setup_mistakes_are_one_line_errors_before_any_request(tmp_path):
    """Review 12 R3, R7, R8, R9: a Latin-1 or binary file given to `data convert`, an empty folder or a Latin-1
    replay file given as the judge, `--actors 0` were tracebacks; `--max-new-tokens 0`, `--chunk-rows 0` and the
    openai backend's concurrency=0 / timeout=-1 / max_retries=-1 ran (every row then failed, or the value was not
    the one used)."""
    latin = tmp_path / "latin1.csv"
    latin.write_bytes("study_id,gt_report\n1,Effusion caf\xe9\n".encode("latin-1"))
    assert_one_line_error(cli("data", "convert", "radeval", latin, "-o", tmp_path / "d1", cwd=tmp_path),
                          "is not UTF-8 text", "iconv")
    empty = tmp_path / "empty_model"
    empty.mkdir()
    assert_one_line_error(cli("score", "-m", "green", "-i", _PAIRS, "-o", tmp_path / "o.jsonl", "--judge", empty,
                              cwd=tmp_path), "holds no model (no config.json")
    replay = tmp_path / "latin_replay.jsonl"
    replay.write_bytes(b'{"prompt": "x", "response": "caf\xe9"}\n')
    assert_one_line_error(cli("score", "-m", "green", "-i", _PAIRS, "-o", tmp_path / "o.jsonl", "--replay", replay,
                              cwd=tmp_path), "is not UTF-8 text")
    sample_replay = str(SAMPLE / "green_replay.jsonl")
    for flags in (["--engine", "ray", "--actors", "0"], ["--chunk-rows", "0"], ["--max-new-tokens", "0"]):
        run = cli("score", "-m", "green", "-i", _PAIRS, "-o", tmp_path / "o.jsonl", "--replay", sample_replay, *flags,
                  cwd=tmp_path)
        assert run.returncode == 2 and "x>=1" in run.stderr and "Traceback" not in run.stderr, run.stderr[-1500:]
    for option, bound in (("concurrency=0", "at least 1"), ("timeout=-1", "above 0"), ("max_retries=-1", "at least 0")):
        run = cli("score", "-m", "green", "-i", _PAIRS, "-o", tmp_path / "o.jsonl", "--backend", "openai",
                  "--base-url", "http://127.0.0.1:9/v1", "--judge", "m", "--judge-option", option, cwd=tmp_path)
        assert_one_line_error(run, f"must be {bound}")
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("args, flag", [
    (["score", "-m", "green", "-i", "-", "-o", "OUT.jsonl"], "'--input' / '-i'"),
    (["score", "-m", "green", "-i", _PAIRS, "--replay", "-", "-o", "OUT.jsonl"], "'--replay'"),
    (["reward-check", "-m", "green", "-i", "-", "--completions"], "'--input' / '-i'"),
    (["compare", "-s", "A=-", "-s", f"B={_SYSTEM_B}", "-m", "bleu-4", "-o", "OUT"], "--system A=-"),
    (["compare", "-s", f"A={_PAIRS}", "-r", "-", "-m", "bleu-4", "-o", "OUT"], "'--references' / '-r'"),
    (["meta-eval", "-d", "-", "-m", "bleu-4", "-o", "OUT"], "--dataset"),
    (["preference-eval", "-i", "-", "-m", "bleu-4", "-o", "OUT"], "'--input' / '-i'"),
    (["rexamine", "-i", "-", "-m", "bleu-4", "-o", "OUT"], "'--input' / '-i'"),
    (["data", "transform", "standardize", "-i", "-", "-o", "OUT"], "'--input' / '-i'"),
    (["data", "convert", "rexval", "-", "-o", "OUT"], "'SOURCE'"),
    (["train", "er2score", "--base", "b", "--pairs", "-", "-o", "OUT"], "'--pairs'"),
], ids=lambda v: " ".join(v[:2]) if isinstance(v, list) else None)
def test_standard_input_as_a_file_is_refused_in_one_line_saying_what_to_do(args, flag, tmp_path):
    """Review 24 (L7): `score -i -` said "Input file not found: -" (and `data transform -i -` "Path '-' does not
    exist"), as if a file named '-' were missing; a pipeline user is told that standard input is not read and what to
    do instead."""
    args = [str(tmp_path / a) if a.startswith("OUT") else a for a in args]
    run = subprocess.run([sys.executable, "-m", "radmetrics.cli", *args], input="{}\n", cwd=tmp_path,
                         capture_output=True, text=True, env=os.environ.copy(), timeout=120)
    line = assert_one_line_error(run, flag, "standard input ('-') is not supported", "write the data to a file first")
    assert "not found" not in line and "does not exist" not in line
    assert not any(tmp_path.iterdir())  # nothing written


def test_training_never_writes_over_a_folder_that_holds_something(tmp_path):
    """Review 12 R5: `train judge -o DIR` run twice replaced the first judge (adapter/, merged/) without a word,
    where `data convert` asks for --overwrite. Refused before any work; --overwrite goes on to the next check."""
    out = tmp_path / "judge"
    (out / "merged").mkdir(parents=True)
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"reference": "No effusion.", "candidate": "Small effusion."}) + "\n")
    (tmp_path / "config.json").write_text("{}")
    for command in (["train", "judge", "--base", tmp_path, "--recipe", "green", "--data", pairs],
                    ["train", "er2score", "--base", tmp_path, "--pairs", pairs]):
        assert_one_line_error(cli(*command, "-o", out, cwd=tmp_path), f"--output {out} is not empty (merged)",
                              "pass --overwrite")
    again = cli("train", "judge", "--base", tmp_path, "--recipe", "green", "--data", pairs, "-o", out, "--overwrite",
                cwd=tmp_path)
    assert "is not empty" not in again.stderr and (out / "merged").is_dir()


def test_a_run_that_replaces_earlier_results_says_so(tmp_path):
    """Review 12 R5: score, compare, meta-eval, preference-eval and rexamine replaced an earlier output or report
    without a word (a meta-eval re-run with a typo in -m replaced a finished judge report)."""
    replay = str(SAMPLE / "green_replay.jsonl")
    score = ["score", "-m", "green", "-i", _PAIRS, "--replay", replay, "-o", tmp_path / "r.jsonl", "--no-cache"]
    first, second = cli(*score, cwd=tmp_path), cli(*score, cwd=tmp_path)
    assert first.returncode == 0 and "earlier run" not in first.stderr, first.stderr[-2000:]
    assert second.returncode == 0 and "holds an earlier run's results; this run replaces them" in second.stderr
    compare = ["compare", "-r", _PAIRS, "-m", "rouge-l", "-s", f"A={_PAIRS}", "-s", f"B={_SYSTEM_B}", "-o",
               tmp_path / "cmp", "--resamples", "0"]
    first, second = cli(*compare, cwd=tmp_path), cli(*compare, cwd=tmp_path)
    assert first.returncode == 0 and "earlier report" not in first.stderr, first.stderr[-2000:]
    assert f"Note: {tmp_path / 'cmp'} holds an earlier report; this run replaces it." in second.stderr


def test_python_dash_m_radmetrics_is_the_command(tmp_path):
    """Review 25 (L7): `python -m radmetrics` was "No module named radmetrics.__main__"; only `python -m
    radmetrics.cli` ran. Both are the `radmetrics` command, with its exit codes (2: a one-line error)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-m", "radmetrics", "sample-path", "pairs.jsonl"], cwd=tmp_path,
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0 and run.stdout.strip().endswith("pairs.jsonl"), run.stderr[-2000:]
    bad = subprocess.run([sys.executable, "-m", "radmetrics", "score", "-i", tmp_path / "absent.jsonl", "-m", "green",
                          "-o", tmp_path / "out.jsonl"],
                         cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert_one_line_error(bad, "absent.jsonl")


# -- review 24 (L9): one file-mode policy for every output that holds report texts ---------------------------------
def _modes(folder):
    import stat

    return {str(p.relative_to(folder)): stat.S_IMODE(p.stat().st_mode) for p in [folder, *folder.rglob("*")]}


@pytest.fixture
def umask_022():
    """The commands inherit this umask: what they would write 0644 under."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_every_command_output_holding_report_texts_is_readable_by_its_owner_only(tmp_path, umask_022):
    """`score` wrote its results 0600 (like the cache), while compare, preference-eval, data convert / transform
    (and meta-eval, rexamine: their own tests) followed the umask (0644): the same report texts, two policies.
    Now every such output is readable by its owner only; a file of the user's in the folder keeps its mode."""
    cmp, pref = tmp_path / "cmp", tmp_path / "pref"
    assert cli("compare", "-s", f"A={SAMPLE_PAIRS}", "-s", f"B={_SYSTEM_B}", "-m", "bleu-4", "--resamples", "20",
               "-o", cmp).returncode == 0
    assert cli("preference-eval", "-i", FIXTURES / "preference" / "preferences.jsonl", "-m", "rouge-l",
               "--resamples", "20", "-o", pref).returncode == 0
    rexval, standardized = tmp_path / "rexval", tmp_path / "std"
    assert cli("data", "convert", "rexval", FIXTURES / "rexval", "-o", rexval).returncode == 0
    # the replay file has no standardization answers: every row fails (exit 1), and the dataset is still written
    transform = cli("data", "transform", "standardize", "-i", rexval, "--column", "reference", "-o", standardized,
                    "--backend", "replay", "--replay", SAMPLE / "green_replay.jsonl")
    assert transform.returncode == 1 and "Traceback" not in transform.stderr, transform.stderr[-2000:]
    for folder, wrote in ((cmp, {"results.json", "per_row.csv", "report.html", "forest.png"}),
                          (pref, {"results.json", "per_pair.csv", "summary.md"}),
                          (rexval, {"README.md", "state.json"}), (standardized, {"state.json"})):
        modes = _modes(folder)
        assert wrote <= set(modes), (folder, modes)
        assert {name: oct(mode) for name, mode in modes.items() if mode & 0o077} == {}, folder
    # a file written before (0644) and rewritten in place is narrowed too; the user's own file is left as it was
    (rexval / "README.md").chmod(0o644)
    (rexval / "my_notes.txt").write_text("mine")
    (rexval / "my_notes.txt").chmod(0o644)
    assert cli("data", "convert", "rexval", FIXTURES / "rexval", "-o", rexval, "--overwrite").returncode == 0
    modes = _modes(rexval)
    assert modes.pop("my_notes.txt") == 0o644 and modes["README.md"] == 0o600
    assert {name: oct(mode) for name, mode in modes.items() if mode & 0o077 and name != "."} == {}


def _listing(folder):
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("command", sorted(_STAT_COMMANDS))
def test_a_report_never_overwrites_a_results_json_it_did_not_write(command, tmp_path):
    """Review 24 M6: a report command given a folder that held the user's own results.json printed "holds an earlier
    report; this run replaces it" and replaced it. Now refused before any work (the input is not even read)."""
    out = tmp_path / "userdir"
    out.mkdir()
    (out / "results.json").write_text('{"my": "results"}')
    (out / "notes.txt").write_text("precious")
    run = cli(*_STAT_COMMANDS[command], "-o", out, cwd=tmp_path)
    assert_one_line_error(run, f"--output {out} holds results.json, which no radmetrics {command} report there wrote",
                          "pass --overwrite")
    assert _listing(out) == ["notes.txt", "results.json"] and (out / "results.json").read_text() == '{"my": "results"}'


def test_compare_with_overwrite_replaces_the_users_results_json_and_keeps_their_other_files(tmp_path):
    out = tmp_path / "userdir"
    out.mkdir()
    (out / "results.json").write_text('{"my": "results"}')
    (out / "notes.txt").write_text("precious")
    run = cli(*_STAT_COMMANDS["compare"], "--resamples", "0", "-o", out, "--overwrite", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"Note: --overwrite: this run replaces results.json in {out}." in run.stderr
    assert _listing(out) == ["forest.png", "notes.txt", "per_row.csv", "report.html", "results.json"]
    assert (out / "notes.txt").read_text() == "precious"
    record = json.loads((out / "results.json").read_text())["radmetrics_report"]
    assert record == {"command": "compare", "files": ["forest.png", "per_row.csv", "report.html", "results.json"]}


def test_a_rerun_replaces_its_own_earlier_report_whole_and_nothing_else(tmp_path):
    """Review 24 M6: the earlier report's files this run does not write (a plot of a metric it no longer has) go,
    so the folder never holds two reports; the user's files there, even ones named like a report's, stay."""
    out = tmp_path / "report"
    meta_eval = ["meta-eval", "-d", FIXTURES / "rexval", "--resamples", "20", "-o", out]
    first = cli(*meta_eval, "-m", "rouge-l", "-m", "bleu-2", cwd=tmp_path)
    assert first.returncode == 0 and "earlier report" not in first.stderr, first.stderr[-2000:]
    assert (out / "scatter_bleu-2.png").exists()
    (out / "notes.txt").write_text("precious")
    second = cli(*meta_eval, "-m", "rouge-l", cwd=tmp_path)
    assert second.returncode == 0, second.stderr[-2000:]
    assert f"Note: {out} holds an earlier report; this run replaces it." in second.stderr
    assert _listing(out) == ["notes.txt", "per_sample.csv", "report.html", "results.json", "scatter_rouge-l.png",
                             "summary.md"]
    assert json.loads((out / "results.json").read_text())["radmetrics_report"]["files"] == [
        "per_sample.csv", "report.html", "results.json", "scatter_rouge-l.png", "summary.md"]
    assert (out / "notes.txt").read_text() == "precious"
    # a file named like a plot the earlier report did not write is the user's: refused, not overwritten
    (out / "scatter_bleu-2.png").write_bytes(b"mine")
    assert_one_line_error(cli(*meta_eval, "-m", "bleu-2", cwd=tmp_path), "holds scatter_bleu-2.png", "--overwrite")
    assert (out / "scatter_bleu-2.png").read_bytes() == b"mine"


def test_compare_into_a_meta_eval_report_folder_is_refused_and_overwrite_replaces_that_report(tmp_path):
    """Review 24 M6: compare into a finished meta-eval report's folder replaced results.json, report.html and left
    summary.md, per_sample.csv and the scatter plots: one folder, two reports contradicting each other."""
    out = tmp_path / "me1"
    first = cli("meta-eval", "-m", "rouge-l", "-d", FIXTURES / "rexval", "--resamples", "20", "-o", out, cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    (out / "notes.txt").write_text("precious")
    meta_eval_report = {p.name: p.read_bytes() for p in out.iterdir()}
    compare = [*_STAT_COMMANDS["compare"], "--resamples", "0", "-o", out]
    assert_one_line_error(cli(*compare, cwd=tmp_path), f"--output {out} holds a radmetrics meta-eval report",
                          "pass --overwrite")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == meta_eval_report
    run = cli(*compare, "--overwrite", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"Note: --overwrite: {out}'s meta-eval report is replaced by this compare report." in run.stderr
    assert _listing(out) == ["forest.png", "notes.txt", "per_row.csv", "report.html", "results.json"]


def test_a_report_record_never_removes_a_file_the_command_does_not_write(tmp_path):
    """results.json names the files of the report; one edited or copied by hand that names another file (or one
    outside the folder) removes nothing but the command's own outputs."""
    out = tmp_path / "cmp"
    out.mkdir()
    (tmp_path / "outside.txt").write_text("keep")
    (out / "notes.txt").write_text("keep")
    record = {"command": "compare", "files": ["results.json", "notes.txt", "../outside.txt", str(tmp_path / "outside.txt")]}
    (out / "results.json").write_text(json.dumps({"radmetrics_report": record}))
    run = cli(*_STAT_COMMANDS["compare"], "--resamples", "0", "-o", out, cwd=tmp_path)
    assert run.returncode == 0 and "holds an earlier report" in run.stderr, run.stderr[-2000:]
    assert (out / "notes.txt").read_text() == "keep" and (tmp_path / "outside.txt").read_text() == "keep"


def test_readme_command_1_says_its_one_empty_candidate_in_the_singular(tmp_path):
    """Review 29c: README command 1's first note read "1 candidate reports were empty"."""
    run = cli("score", "-m", "green", "-i", _PAIRS, "--replay", SAMPLE / "green_replay.jsonl", "-o",
              tmp_path / "results.jsonl", "--no-cache", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "1 candidate report was empty: judged as written" in run.stderr and "reports were" not in run.stderr


def test_a_deprecated_metric_name_is_one_warning_line_on_the_command_line(tmp_path):
    """Review 43: `score -m radcliq` (the old name of radcliq_rubric) printed Python's own warning form, naming the line
    of radmetrics' source that asked and echoing that line; the command line now says it as its other warnings do."""
    run = cli("score", "-m", "radcliq", "-i", SAMPLE / "pairs.jsonl", "--backend", "replay", "--replay",
              SAMPLE / "green_replay.jsonl", "-o", tmp_path / "o.jsonl", cwd=tmp_path)
    assert run.returncode != 0  # the GREEN answers are no rubric answers: unscored, but the run ends normally
    assert run.stderr.splitlines()[0] == ("Warning: Scoring system 'radcliq' is now called 'radcliq_rubric'; the old "
                                          "name will go.")
    assert "DeprecationWarning" not in run.stderr and ".py:" not in run.stderr
