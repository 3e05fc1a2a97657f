"""LLM data steps through the shared judge (fake judge plugged in through the plugin manager)."""
from __future__ import annotations

import pytest

import radmetrics
from radmetrics.data import steps

REPORTS = ["No acute cardiopulmonary process. Heart size normal.", "Small left effusion. NEVER satisfied."]


def test_standardize_uses_the_rexamine_prompt(fake_judge):
    judge = radmetrics.get_judge("fake", cache=False)
    out = steps.standardize(judge, REPORTS[:1])
    assert out[0].output.startswith("Findings: No acute") and "Impression:" in out[0].output
    assert steps.STANDARDIZE_PROMPT.startswith("Pretend you are a radiologist and format the content")


def test_inject_validates_and_retries_up_to_five_attempts(fake_judge):
    judge = radmetrics.get_judge("fake", cache=False)
    out = steps.inject_errors(judge, REPORTS, "a", k=2, modality="XR", region="chest")
    first, second = out
    # attempt 1: a thyroid finding on a chest X-ray -> rejected by the validation prompt; attempt 2: accepted
    assert first.attempts == 2 and first.output.endswith("Lung nodule number 0. Lung nodule number 1.")
    assert len(first.details["changes"]) == 2
    # always k + 1 changes -> never exactly k: failed after 5 attempts, with the reason
    assert second.output is None and second.attempts == 5
    assert second.reason == "no valid injection after 5 attempts: 3 changes instead of exactly 2"


def test_inject_rejects_unknown_error_type(fake_judge):
    with pytest.raises(radmetrics.InputError, match="'a' or 'b'"):
        steps.inject_errors(radmetrics.get_judge("fake", cache=False), REPORTS, "c", k=1)


def test_green_modify_is_seeded(fake_judge):
    judge = radmetrics.get_judge("fake", cache=False)
    one = steps.green_modify(judge, REPORTS * 3, seed=5)
    two = steps.green_modify(judge, REPORTS * 3, seed=5)
    assert [r.details for r in one] == [r.details for r in two]
    assert one[0].output.endswith("Possible small effusion.")
    prompt = steps.green_modify_prompt("Ref.", "no errors", subtle=False)
    assert "slightly rephrased" in prompt and prompt.endswith("[Candidate]: <Candidate Report>")


def test_cli_transform_writes_a_dataset_with_provenance(tmp_path, monkeypatch):
    """Through the CLI entry point in-process (the fake judge is registered in this process)."""
    import json

    import datasets
    from click.testing import CliRunner

    from radmetrics.cli import cli
    from radmetrics.plugins import register_plugin, unregister_plugin

    import fake_judge

    register_plugin(fake_judge, name="fake-judge-cli")
    try:
        src = tmp_path / "reports.jsonl"
        src.write_text("\n".join(json.dumps({"reference": r, "candidate": "x"}) for r in REPORTS))
        out = tmp_path / "injected"
        result = CliRunner().invoke(cli, ["data", "transform", "inject", "-i", str(src), "-o", str(out), "--k", "1",
                                          "--modality", "XR", "--region", "chest", "--backend", "fake"])
        assert result.exit_code == 0, result.output
        assert "1/2 rows done, 1 failed" in result.output
        data = datasets.load_from_disk(str(out))
        assert data[0]["reference_inject"].endswith("Lung nodule number 0.") and data[0]["step_attempts"] == 2
        assert data[1]["reference_inject"] is None and "instead of exactly 1" in data[1]["step_failure"]
        provenance = json.loads(data[0]["provenance"])
        assert provenance["step"] == "inject" and provenance["k"] == 1 and provenance["judge"]["backend"] == "fake"
    finally:
        unregister_plugin(name="fake-judge-cli")


def test_transform_never_sends_a_row_it_could_not_read_and_reads_a_file_of_reports(tmp_path):
    """Review findings: `data transform` needed a candidate column in a file of reports (and named a flag it lacks);
    an unreadable line and a null reference reached the judge as the text "None", bytes that are not UTF-8 as
    U+FFFD, an empty reference was "transformed", and every such row passed for done; a folder that is not a
    dataset was a traceback."""
    import json
    import os
    import subprocess
    import sys

    import datasets
    from openai_server import FakeOpenAIServer

    src = tmp_path / "reports.jsonl"
    lines = [json.dumps({"id": "r0", "report": "Small left effusion."}).encode(), b"{oops",
             json.dumps({"id": "r2", "report": None}).encode(), json.dumps({"id": "r3", "report": ""}).encode(),
             b'{"id": "r4", "report": "Caf\xe9 effusion."}', json.dumps({"id": "r5", "report": 7}).encode(),
             json.dumps({"id": "r6", "report": "Mild cardiomegaly."}).encode()]
    src.write_bytes(b"\n".join(lines) + b"\n")

    def transform(*args):
        return subprocess.run([sys.executable, "-m", "radmetrics.cli", "data", "transform", "standardize",
                               *map(str, args)], capture_output=True, text=True, cwd=tmp_path, env=os.environ.copy())

    with FakeOpenAIServer(lambda prompt: "Findings: done.\n\nImpression: done.") as server:
        run = transform("-i", src, "--column", "report", "-o", tmp_path / "std", "--backend", "openai",
                        "--base-url", server.base_url, "--judge", "x", "--no-cache")
        prompts = [r["body"]["messages"][-1]["content"] for r in server.requests]
    assert run.returncode == 0 and "2/7 rows done, 5 failed" in run.stdout, run.stderr[-2000:]
    assert len(prompts) == 2 and not any("None" in p or "\ufffd" in p for p in prompts)
    data = datasets.load_from_disk(str(tmp_path / "std"))
    failures = data["step_failure"]
    assert failures[0] is None and failures[6] is None and data[0]["report_standardize"] == "Findings: done.\n\nImpression: done."
    assert failures[1].startswith("input line 2: ") and failures[2] == "input line 3: report is missing (None)"
    assert failures[3] == "input line 4: report is empty" and failures[4].startswith("input line 5: not UTF-8")
    # review 12: a transform where every row failed exited 0, as if done (score exits 1 then)
    with FakeOpenAIServer(lambda prompt: "") as server:
        none = transform("-i", src, "--column", "report", "-o", tmp_path / "none", "--backend", "openai",
                         "--base-url", server.base_url, "--judge", "x", "--no-cache", "--judge-option", "max_retries=0")
    assert none.returncode == 1 and "0/7 rows done, 7 failed" in none.stdout, none.stderr[-2000:]
    assert "Error: no row was transformed" in none.stderr and (tmp_path / "none").is_dir()
    assert failures[5] == "input line 6: report is int, not text" and data[5]["report_as_given"] == "7"
    assert all(data[i]["report_standardize"] is None for i in range(1, 6))

    (tmp_path / "adir").mkdir()
    run = transform("-i", tmp_path / "adir", "-o", tmp_path / "o2", "--backend", "replay", "--replay", src)
    assert run.returncode == 2 and "a folder that is not a saved dataset" in run.stderr, run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    run = transform("-i", src, "-o", tmp_path / "o3", "--backend", "replay", "--replay", src)
    assert run.returncode == 2 and "no column 'reference' to transform; columns are: id, report (--column NAME)" \
        in run.stderr, run.stderr[-2000:]


def test_transform_sends_no_missing_value_marker_warns_on_replaced_bytes_and_can_be_chained(tmp_path):
    """Review 25 L5: a reference that is exactly "NA" was sent to the judge and "standardized" (`score` reads it as
    a missing-value marker); a non-UTF-8 row kept 'caf\ufffd' in its text column without a word. And a transform of a
    transform's output was a ValueError traceback after the judging (duplicated column 'provenance')."""
    import json
    import os
    import subprocess
    import sys

    import datasets
    from openai_server import FakeOpenAIServer

    src = tmp_path / "mixed.jsonl"
    src.write_bytes(b'{"reference": "Mild cardiomegaly."}\n{"reference": "NA"}\n{"reference": " N/A "}\n'
                    b'{"reference": "caf\xe9"}\n' + json.dumps({"reference": float("nan")}).encode() + b"\n")

    def transform(*args):
        return subprocess.run([sys.executable, "-m", "radmetrics.cli", "data", "transform", *map(str, args)],
                              capture_output=True, text=True, cwd=tmp_path, env=os.environ.copy())

    def answer(prompt):
        return "[Candidate]: Heart mildly enlarged." if "[Objective]" in prompt else "Findings: done.\n\nImpression: done."

    with FakeOpenAIServer(answer) as server:
        run = transform("standardize", "-i", src, "-o", tmp_path / "std", "--backend", "openai",
                        "--base-url", server.base_url, "--judge", "x", "--no-cache")
        prompts = [r["body"]["messages"][-1]["content"] for r in server.requests]
        assert run.returncode == 0 and "1/5 rows done, 4 failed" in run.stdout, run.stderr[-2000:]
        assert len(prompts) == 1 and prompts[0].endswith("Mild cardiomegaly.")
        assert "Warning: 1 row(s) are not UTF-8 (input line 4): not sent; their text columns hold U+FFFD" \
            in run.stderr and "iconv" in run.stderr
        data = datasets.load_from_disk(str(tmp_path / "std"))
        assert data["step_failure"][1:] == ["input line 2: reference is 'NA', a missing-value marker, not a report",
                                            "input line 3: reference is 'N/A', a missing-value marker, not a report",
                                            data["step_failure"][3], "input line 5: reference is missing (NaN)"]
        assert data["step_failure"][3].startswith("input line 4: not UTF-8")
        assert data.features["step_attempts"] == datasets.Value("int64") and data["step_attempts"] == [1, 0, 0, 0, 0]
        # standardize, then GREEN's modification of the standardized text: the first run's provenance is kept, renamed
        run = transform("green-modify", "-i", tmp_path / "std", "--column", "reference_standardize",
                        "-o", tmp_path / "chain", "--backend", "openai", "--base-url", server.base_url, "--judge", "x",
                        "--no-cache")
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr[-2000:]
    assert "kept as provenance_1, step_attempts_1, step_failure_1, step_details_1" in run.stderr
    chained = datasets.load_from_disk(str(tmp_path / "chain"))
    assert json.loads(chained[0]["provenance_1"])["step"] == "standardize"
    assert json.loads(chained[0]["provenance"])["step"] == "green-modify" and chained["step_attempts"][0] == 1



def test_transform_names_the_other_reference_columns_it_did_not_read(tmp_path):
    """A file of two exports merged (``ground_truth`` and ``GT_Report`` beside ``reference``) was transformed from
    one of them without a word, where `score` and `compare` name the others; naming the column silences it."""
    import json
    import os
    import subprocess
    import sys

    from openai_server import FakeOpenAIServer

    src = tmp_path / "merged.jsonl"
    src.write_text("".join(json.dumps({"ground_truth": f"old {i}", "reference": f"Effusion {i}.",
                                       "GT_Report": f"older {i}", "candidate": f"model {i}"}) + "\n" for i in range(2)))

    def transform(*args):
        return subprocess.run([sys.executable, "-m", "radmetrics.cli", "data", "transform", "standardize",
                               "-i", str(src), *map(str, args), "--backend", "openai", "--base-url", server.base_url,
                               "--judge", "x", "--no-cache"], capture_output=True, text=True, cwd=tmp_path,
                              env=os.environ.copy())

    with FakeOpenAIServer(lambda prompt: "Findings: done.\n\nImpression: done.") as server:
        run = transform("-o", tmp_path / "std")
        prompts = [r["body"]["messages"][-1]["content"] for r in server.requests]
        assert run.returncode == 0 and "2/2 rows done" in run.stdout, run.stderr[-2000:]
        assert sorted(p.rsplit("\n", 1)[-1] for p in prompts) == ["Effusion 0.", "Effusion 1."]
        # the line `train` prints, through the same helper; the candidate column is no reference: not named
        assert (f"Reading {src}: reference = 'reference'; the file also has 'ground_truth', 'GT_Report', not read "
                "(pass --column to choose)\n") in run.stderr
        chosen = transform("--column", "ground_truth", "-o", tmp_path / "gt")
    assert chosen.returncode == 0 and "2/2 rows done" in chosen.stdout, chosen.stderr[-2000:]
    assert "not read" not in chosen.stderr


@pytest.mark.parametrize("verdict, plausible", [
    ('{"plausible": true, "reason": "ok"}', True),
    ('{"plausible": false, "reason": "thyroid on a chest X-ray"}', False),
    # review 29b: bool() of a drifted value kept implausible injections ("false" and "no" are true strings)
    ('{"plausible": "false", "reason": "thyroid on a chest X-ray"}', False),
    ('```json\n{"plausible": "No", "reason": "thyroid"}\n```', False),
    ('{"plausible": "yes", "reason": "ok"}', True),
    ('{"plausible": 0, "reason": "thyroid"}', False),
    ('{"plausible": "maybe", "reason": "unsure"}', False),
    ('{"reason": "ok"}', False),
    ('<think>{"plausible": true}</think>\n{"plausible": false, "reason": "thyroid"}', False),
])
def test_a_validation_verdict_is_plausible_only_when_it_says_so(verdict, plausible):
    assert steps.read_plausibility(verdict)[0] is plausible
