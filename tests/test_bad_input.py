"""Bad input: clear errors naming the row/column, or unscored rows with reasons; nothing lost."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO, SAMPLE
from fake_judge import expected_score

import radmetrics


def test_none_empty_and_non_string_rows_are_unscored_but_an_empty_candidate_is_judged(fake_judge):
    refs = ["left effusion", None, "  ", "ok", 42, "cardiomegaly", float("nan")]
    cands = ["left effusion", "x", "y", "", "z", "cardiomegaly mild", "w"]
    result = radmetrics.score("green", refs, cands, backend="fake", cache=False, progress=False)
    reasons = [j.reason for j in result.judgments]
    # NaN (pandas' missing value, JSON's non-standard NaN) is a missing report (review 18: "float, not text")
    assert reasons == [None, "row 1: reference is missing (None)", "row 2: reference is empty",
                       None, "row 4: reference is int, not text", None, "row 6: reference is missing (NaN)"]
    # the empty generated report is judged as the official GREEN code judges it: nothing matches, GREEN 0,
    # and it counts in the mean against its generator
    assert result.scores[3] == 0.0 and result.judgments[3].details["empty_candidate"] is True
    # identical reports: no error, GREEN 1; "cardiomegaly mild": 1 matched, seeded errors in every category
    expected_5 = expected_score(refs[5], cands[5])
    assert result.scores[0] == 1.0 and result.scores[5] == pytest.approx(expected_5) and 0 < expected_5 < 1
    assert result.summary["num_unscored"] == 4 and fake_judge.calls == 3
    assert result.summary["num_empty_candidates"] == 1
    assert result.summary["green"] == pytest.approx((1.0 + 0.0 + expected_5) / 3)


def test_mismatched_lengths_is_a_clear_error(fake_judge):
    with pytest.raises(radmetrics.InputError, match="3 candidates .* but 2 references"):
        radmetrics.score("green", ["a", "b"], ["a", "b", "c"], backend="fake", cache=False)


def test_replay_missing_prompt_fails_only_that_row(tmp_path):
    replay = tmp_path / "r.jsonl"
    system = radmetrics.get_scoring_system("green")
    answer = "[Clinically Significant Errors]:\n(a) x: 1. y\n\n[Matched Findings]:\n1. z"
    replay.write_text(json.dumps({"prompt": system.build_prompt("a b", "a"), "response": answer}) + "\n")
    result = radmetrics.score("green", ["a b", "c d"], ["a", "c"], backend="replay", judge_options={"path": str(replay)},
                              progress=False)
    # row 0 has its recorded answer and is scored; row 1 has none: unscored with why, not the whole run stopped
    assert result.scores == [0.5, None] and result.summary["num_unscored"] == 1
    assert result.judgments[1].reason == (f"judge call failed: replay file {replay} has no response for this row's "
                                          "prompt; prompts must match exactly, including whitespace")


def test_replay_file_with_two_different_responses_to_a_prompt_leaves_that_row_unscored(tmp_path):
    """Review 18 (5): a replay file made of two recordings (another judge, a rerun) answered a prompt with whichever
    response came last, without a word (GREEN 0.0 became 0.5). A prompt with two different responses is unscored,
    naming both lines; an identical repeat is fine. A byte-order mark at the start was refused; it is skipped."""
    replay = tmp_path / "r.jsonl"
    system = radmetrics.get_scoring_system("green")
    one = "[Clinically Significant Errors]:\n(a) x: 1. y\n\n[Matched Findings]:\n1. z"
    two = "[Clinically Significant Errors]:\n(a) x: 0.\n\n[Matched Findings]:\n1. z"
    lines = [(system.build_prompt("a b", "a"), one), (system.build_prompt("c d", "c"), one),
             (system.build_prompt("a b", "a"), two), (system.build_prompt("c d", "c"), one)]
    replay.write_text("\ufeff" + "".join(json.dumps({"prompt": p, "response": r}) + "\n" for p, r in lines),
                      encoding="utf-8")
    result = radmetrics.score("green", ["a b", "c d"], ["a", "c"], backend="replay", judge_options={"path": str(replay)},
                              progress=False, cache=False)
    assert result.scores == [None, 0.5]
    assert result.judgments[0].reason == (f"judge call failed: replay file {replay} has different responses for this "
                                          "row's prompt (lines 1 and 3); keep one")


def cli(*args):
    return subprocess.run([sys.executable, "-m", "radmetrics.cli", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, env=os.environ.copy())


def test_replay_without_the_rows_answers_does_not_advise_a_rerun(tmp_path):
    """Review finding: a replay run whose file lacked the rows' prompts ended with "rerun to ask again the 2 rows
    whose judge call failed", though a replay rerun reads the same file and gives the same."""
    replay, src = tmp_path / "r.jsonl", tmp_path / "p.jsonl"
    replay.write_text(json.dumps({"prompt": "another prompt", "response": "x"}) + "\n")
    src.write_text("".join(json.dumps({"reference": r, "candidate": c}) + "\n" for r, c in [("a b", "a"), ("c", "d")]))
    out = cli("score", "-m", "green", "-i", src, "-o", tmp_path / "o.jsonl", "--backend", "replay", "--replay", replay)
    assert out.returncode == 1, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.endswith("Results were written; the replay file has no answer for 2 rows (a rerun gives the same): "
                         "record their answers with a live judge, or check that the prompts match."), last
    assert "rerun to ask again" not in out.stderr


def test_cli_csv_missing_column_is_one_line_error(tmp_path):
    src = tmp_path / "p.csv"
    src.write_text("reference,notes\nabc,def\n")
    out = cli("score", "-m", "green", "-i", src, "-o", tmp_path / "o.jsonl", "--backend", "replay",
              "--replay", SAMPLE / "green_replay.jsonl")
    assert out.returncode == 2
    assert "no candidate column" in out.stderr and "columns are: reference, notes" in out.stderr
    assert "Traceback" not in out.stderr


def test_cli_unknown_metric_suggests(tmp_path):
    out = cli("score", "-m", "gren", "-i", tmp_path / "x.jsonl", "-o", tmp_path / "o.jsonl")
    assert out.returncode == 2 and "Did you mean 'green'" in out.stderr


def test_cli_keeps_malformed_empty_huge_and_non_utf8_rows(tmp_path):
    """Malformed JSON lines, empty reports, a 100k-character report and bad bytes: all rows come out, each
    unscored row naming its line of the input file; the row with a byte that is not UTF-8 is never judged."""
    sample = [json.loads(x) for x in (SAMPLE / "pairs.jsonl").read_text().splitlines()]
    huge = "effusion " * 12000  # ~108k characters: cut to 300 words by the GREEN prompt, with a warning
    lines = [json.dumps(sample[5]).encode(), b"{not json", json.dumps({"reference": "", "candidate": "x"}).encode(),
             json.dumps({"reference": huge, "candidate": "effusion"}).encode(),
             json.dumps({"id": "latin", "reference": "caf\u00e9 effusion", "candidate": "effusion"}).encode()[:-2]
             + b"\xff\"}",
             b"[1, 2]"]
    src = tmp_path / "bad.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    # Answers for the rows that reach the judge: the A.2 one from the sample replay, the huge one unparseable.
    # The row with the bad byte has no answer: were it judged, the replay would stop the run.
    system = radmetrics.get_scoring_system("green")
    replay = tmp_path / "replay.jsonl"
    sample_replay = (SAMPLE / "green_replay.jsonl").read_text().splitlines()
    extra = [{"prompt": system.build_prompt(huge, "effusion"), "response": "[Explanation]: cut"}]
    replay.write_text("\n".join(sample_replay + [json.dumps(e) for e in extra]) + "\n")
    out_path = tmp_path / "out.jsonl"
    out = cli("score", "-m", "green", "-i", src, "-o", out_path, "--replay", replay)
    assert out.returncode == 0, out.stderr
    assert ("Warning: 1 row was not UTF-8 and left unscored (first: line 5); re-encode the file, e.g. "
            "iconv -f latin1 -t utf-8 bad.jsonl > bad.utf8.jsonl") in out.stderr
    rows = [json.loads(x) for x in out_path.read_text().splitlines()]
    assert len(rows) == 6
    assert rows[0]["green"] == 0.75
    assert rows[1]["reason"] == "input line 2: not JSON (Expecting property name enclosed in double quotes at position 2)"
    assert rows[1]["_line"] == 2 and rows[1]["_raw"] == "{not json"  # enough of the line to find it
    assert rows[2]["reason"] == "input line 3: reference is empty"
    assert rows[3]["details"]["warnings"] == ["reference cut from 12000 to 300 words (GREEN prompt limit)"]
    assert rows[3]["green"] is None
    assert rows[4]["green"] is None and rows[4]["judge_output"] == "" and rows[4]["id"] == "latin"
    # nothing lost: the line as read, its bad byte shown as \xff (the columns hold U+FFFD in its place)
    assert rows[4]["_line"] == 5 and rows[4]["_raw"] == lines[4].decode("utf-8", errors="backslashreplace")
    assert "\\xff" in rows[4]["_raw"]
    position = lines[4].index(b"\xff") + 1  # 1-based, in bytes, as an editor's column counter shows it
    assert rows[4]["reason"] == (f"input line 5: not UTF-8 (byte 0xFF at position {position}); re-encode the file, e.g. "
                                 "iconv -f latin1 -t utf-8 IN > OUT")
    assert rows[5]["reason"].startswith("input line 6: a JSON list, not an object (a file holding one JSON array?") and rows[5]["_raw"] == "[1, 2]"
    # the run's end says how many input rows the scores leave out, and where to look
    assert ("Warning: 4 input rows could not be judged (their reasons name the input lines: `reason` in the "
            "results) and are unscored.") in out.stderr
    # json's "Unterminated string starting at" is followed by the position once, not "at at"
    unterminated = tmp_path / "unterminated.jsonl"
    unterminated.write_text(json.dumps(sample[0]) + '\n{"reference": "x", "candidate": "no end\n')
    cli("score", "-m", "green", "-i", unterminated, "-o", tmp_path / "u.jsonl", "--replay", replay)
    reason = json.loads((tmp_path / "u.jsonl").read_text().splitlines()[1])["reason"]
    assert reason == "input line 2: not JSON (Unterminated string starting at position 33)", reason
    nan = cli("score", "-m", "green", "-i", src, "-o", tmp_path / "n.jsonl", "--replay", replay, "--max-failures", "nan")
    assert nan.returncode == 2 and "'--max-failures': nan is not a finite number" in nan.stderr


def test_duplicate_rows_are_judged_once_and_all_kept(fake_judge):
    refs = ["left effusion", "left effusion", "cardiomegaly", "left effusion"]
    cands = ["left effusion small", "left effusion small", "cardiomegaly", "left effusion small"]
    result = radmetrics.score("green", refs, cands, backend="fake", cache=False, progress=False)
    assert fake_judge.calls == 2  # identical prompts are asked once per run
    assert result.scores[0] == result.scores[1] == result.scores[3] and len(result.judgments) == 4


def test_cli_a_report_line_named_in_a_judge_answer_is_the_judges_failure_not_an_input_problem(tmp_path):
    """FineRadScore's reasons name lines of the candidate report ("line 0: ..."); only "input line N: ..." and
    "row N: ..." are the input's. Every answer unreadable: the judge failed every row, exit 1 (not 0, as if
    every row were the user's mistake)."""
    system = radmetrics.get_scoring_system("finerad_score")
    pairs = [("Heart normal.", "Heart normal. Small effusion."), ("Clear lungs.", "Large effusion.")]
    bad = json.dumps({"0": {"corrections": "Fixed.", "clinical severity": "Serious"}})  # not a severity it knows
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps({"prompt": system.build_prompt(r, c), "response": bad}) + "\n"
                              for r, c in pairs))
    src = tmp_path / "pairs.jsonl"
    src.write_text("".join(json.dumps({"reference": r, "candidate": c}) + "\n" for r, c in pairs))
    out = cli("score", "-m", "finerad_score", "-i", src, "-o", tmp_path / "o.jsonl", "--replay", replay,
              "--no-progress", "--system-option", "max_retries=0")  # the replay file holds no re-asks
    assert out.returncode == 1, out.stderr
    assert "no row was scored: 2 of 2 judged rows failed because of the judge" in out.stderr
    rows = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert [r["reason"] for r in rows] == ["line 0: unknown clinical severity 'Serious'"] * 2
