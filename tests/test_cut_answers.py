"""Review 15 (T1): a judge answer that ran into the token limit was read as if complete. A GREEN answer whose
matched-findings list was cut after item 3 of 5 scored 0.75 for 0.833, with no word. Now every backend that knows
why generation stopped hands on a `CutAnswer`; its row is unscored with the reason (the text kept), the response
cache does not keep it, and data steps and judge training refuse it."""
from __future__ import annotations

import json
import re
import os
import subprocess
import sys

import pytest
from fake_judge import HeldAfter, analysis_for, readable_the_second_time_for_even_rows, write_finding_pairs
from openai_server import FakeOpenAIServer

import radmetrics
from radmetrics.types import CutAnswer, GenerationConfig

REFS = ["Small left pleural effusion.", "Heart size normal. No effusion."]
CANDS = ["Small left effusion.", "Heart size normal."]
CUT = ("the judge's answer reached the token limit (max_new_tokens={}) before it ended: what it says last may be "
       "cut (a list, a number); raise --max-new-tokens (max_new_tokens= in evaluate.load)")


def test_an_answer_the_server_stopped_at_max_tokens_is_unscored_kept_and_asked_again(tmp_path):
    src = tmp_path / "pairs.jsonl"
    src.write_text("".join(json.dumps({"id": i, "reference": r, "candidate": c}) + "\n"
                           for i, (r, c) in enumerate(zip(REFS, CANDS))))
    with FakeOpenAIServer(analysis_for, script=["length", "ok", "length"]) as server:
        def run(out):
            return subprocess.run([sys.executable, "-m", "radmetrics.cli", "score", "-m", "green", "-i", src, "-o", out,
                                   "--backend", "openai", "--base-url", server.base_url, "--judge", "m",
                                   "--judge-option", "concurrency=1", "--max-new-tokens", "300", "--cache",
                                   tmp_path / "cache.sqlite", "--no-progress"],
                                  capture_output=True, text=True, cwd=tmp_path, env=os.environ.copy())

        first = run(tmp_path / "o1.jsonl")
        assert "Traceback" not in first.stderr, first.stderr[-3000:]
        rows = [json.loads(x) for x in (tmp_path / "o1.jsonl").read_text().splitlines()]
        assert rows[0]["green"] is None and rows[0]["reason"] == CUT.format(300)
        assert rows[0]["judge_output"] == analysis_for(server.requests[0]["body"]["messages"][-1]["content"])  # kept to read
        assert rows[1]["green"] is not None and rows[1]["reason"] is None
        # the cut answer was not cached: a rerun asks that row again (and only it)
        again = run(tmp_path / "o2.jsonl")
        assert "Traceback" not in again.stderr, again.stderr[-3000:]
        assert len(server.requests) == 3
        rows = [json.loads(x) for x in (tmp_path / "o2.jsonl").read_text().splitlines()]
        assert rows[0]["reason"] == CUT.format(300) and rows[1]["green"] is not None


@pytest.mark.parametrize("engine", [True, False], ids=["engine", "generate"])
def test_the_transformers_backend_marks_rows_that_reached_max_new_tokens(tiny_judge, engine):
    """The tiny GREEN judge's answers are 50+ tokens: at 24 every row is cut, at the shipped limit none is. Both
    the greedy engine and HF generate say so; a stop string that ends an answer is not a cut."""
    from radmetrics.judge.transformers_backend import TransformersJudge

    judge = TransformersJudge(str(tiny_judge), engine=engine)
    prompts = [radmetrics.get_scoring_system("green").build_prompt(r, c) for r, c in zip(REFS, CANDS)]
    cut = judge.generate(prompts, GenerationConfig(max_new_tokens=24), progress=False)
    assert all(isinstance(a, CutAnswer) and a.limit == 24 for a in cut)
    whole = judge.generate(prompts, GenerationConfig(), progress=False)
    assert not any(isinstance(a, CutAnswer) for a in whole)
    assert [w[: len(c)] for w, c in zip(whole, cut)] == list(cut)  # the same text, as far as it got
    stop = whole[0].split()[3]  # a word early in the answer: it ends there, by the stop string
    stopped = judge.generate(prompts[:1], GenerationConfig(max_new_tokens=24, stop=(stop,)), progress=False)
    assert not isinstance(stopped[0], CutAnswer) and stop not in stopped[0]

    result = radmetrics.score("green", REFS, CANDS, judge=str(tiny_judge), cache=False, progress=False,
                              judge_options={"engine": engine}, config=GenerationConfig(max_new_tokens=24))
    assert result.scores == [None, None]
    assert [j.reason for j in result.judgments] == [CUT.format(24)] * 2
    assert result.judgments[0].raw == str(cut[0])


def test_data_steps_and_judge_training_refuse_a_cut_answer():
    from radmetrics.data.steps import standardize
    from radmetrics.train.judge_sft import green_examples

    class Judge:
        def __init__(self, answers):
            self.answers = answers

        def generate(self, prompts, config=None, progress=False):
            return self.answers[: len(prompts)]

    results = standardize(Judge([CutAnswer("Heart size normal. Small left", 40), "Heart size normal."]), ["a", "b"])
    assert results[0].output is None and results[0].reason == CUT.format(40)
    assert results[1].output == "Heart size normal."
    green = radmetrics.get_scoring_system("green")
    answer = type(green).sample_answer(green, REFS[0], CANDS[0])
    rows, dropped = green_examples(REFS, CANDS, Judge([CutAnswer(answer, 300), answer]))
    assert len(rows) == 1 and dropped == [f"row 1: {CUT.format(300)}"]


def _score_cli(server, src, out, *extra):
    return [sys.executable, "-m", "radmetrics.cli", "score", "-m", "green", "-i", str(src), "-o", str(out),
            "--backend", "openai", "--base-url", server.base_url, "--judge", "m", "--no-progress", *map(str, extra)]


def _kill_once_written(args, part, cwd, rows: int = 4) -> int:
    """Run ``args``, SIGKILL it once its part file holds ``rows`` rows; the rows written."""
    import signal
    import time

    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
    deadline = time.time() + 60
    while time.time() < deadline and (not part.exists() or len(part.read_text().splitlines()) < rows):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return len(part.read_text().splitlines())


def test_cut_rows_get_their_own_advice_and_retry_unscored_does_not_ask_them_twice(tmp_path):
    """Review 16 (T2): the closing advice said the cut answers "could not be read and are cached"; they are not
    cached and their format is fine. --retry-unscored asked each one twice per run, at the same limit."""
    src = tmp_path / "pairs.jsonl"
    src.write_text("".join(json.dumps({"reference": r, "candidate": c}) + "\n" for r, c in zip(REFS, CANDS)))
    with FakeOpenAIServer(analysis_for, script=["length"] * 20) as server:
        run = subprocess.run(_score_cli(server, src, tmp_path / "o.jsonl", "--cache", tmp_path / "c.sqlite",
                                        "--retry-unscored"), capture_output=True, text=True, cwd=tmp_path)
        assert len(server.requests) == 2  # each cut row asked once
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert ("2 answers reached the token limit before they ended (not cached): rerun with a higher --max-new-tokens"
            in run.stderr)
    assert "could not be read" not in run.stderr


def test_an_empty_answer_stopped_at_the_limit_is_a_cut_answer_not_a_failed_call():
    """Review 17 (T1): a reasoning model that spent every token thinking answers nothing with finish_reason "length":
    that was "the answer is empty", retried at full cost, then a failed call. It is a cut answer, asked once."""
    with FakeOpenAIServer(analysis_for, script=["length-empty"] * 5) as server:
        result = radmetrics.score("green", REFS[:1], CANDS[:1], backend="openai", judge="m", cache=False,
                                  progress=False, judge_options={"base_url": server.base_url})
        assert len(server.requests) == 1
    assert result.scores == [None] and result.judgments[0].reason == CUT.format(1024)


def test_python_score_warns_of_cut_rows(caplog):
    """Review 16 (T3): radmetrics.score and evaluate's compute left cut rows out of the mean without a word."""
    import logging

    with FakeOpenAIServer(analysis_for, script=["length"]) as server, \
            caplog.at_level(logging.WARNING, logger="radmetrics"):
        result = radmetrics.score("green", REFS, CANDS, backend="openai", judge="m", cache=False, progress=False,
                                  judge_options={"base_url": server.base_url, "concurrency": 1})
    assert result.scores[0] is None and result.scores[1] is not None
    assert [r.getMessage() for r in caplog.records if "token limit" in r.getMessage()] == [
        "green: the judge's answer reached the token limit (max_new_tokens=1024) for 1 of 2 rows; they are unscored: "
        "raise max_new_tokens (config=GenerationConfig(max_new_tokens=...) in radmetrics.score, max_new_tokens= in "
        "evaluate.load)"]  # review 27 (L2): evaluate's option is named too


def test_a_resumed_run_keeps_cut_rows_unscored_and_counts_what_it_read_back(tmp_path):
    """Review 16 (R1, R2): a continued run read the written rows' judge text back as if complete: the cut rows it had
    left unscored were scored in summary.json, the table and the exit code (an uninterrupted run exits 1: no row
    scored). And the rows read back lost their empty-candidate mark, so the summary counted fewer."""
    import time

    src, out = tmp_path / "pairs.jsonl", tmp_path / "o.jsonl"
    rows = [{"id": i, "reference": f"Finding {i}: small left effusion.", "candidate": "" if i == 0 else f"Finding {i}."}
            for i in range(10)]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def slow(prompt):
        time.sleep(0.15)
        return analysis_for(prompt)

    part = tmp_path / "o.jsonl.part"
    with FakeOpenAIServer(slow, script=["length"] * 40) as server:
        args = _score_cli(server, src, out, "--no-cache", "--chunk-rows", "2", "--judge-option", "concurrency=1")
        written = _kill_once_written(args, part, tmp_path)
        assert 4 <= written < 10
        again = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path)
    assert "Continued an interrupted run" in again.stderr, again.stderr[-2000:]
    assert again.returncode == 1 and "no row was scored: 10 of 10" in again.stderr
    summary = json.loads((tmp_path / "o.jsonl.summary.json").read_text())["summary"]
    assert summary["num_scored"] == 0 and summary["num_empty_candidates"] == 1
    assert all(json.loads(x)["reason"].startswith("the judge's answer reached the token limit")
               for x in out.read_text().splitlines())


def test_retry_unscored_on_a_continued_run_asks_the_written_rows_too(tmp_path):
    """Review 16 (R3): a continued run with --retry-unscored asked again only the rows it judged itself; the
    unreadable rows the interrupted run had written stayed as written."""
    import time
    from collections import Counter

    from fake_judge import UNREADABLE

    src, out = tmp_path / "pairs.jsonl", tmp_path / "o.jsonl"
    write_finding_pairs(src, 8)
    asked: Counter = Counter()

    def first_unreadable(prompt):  # the first answer to each prompt cannot be read, a second one can
        time.sleep(0.15)
        asked[prompt] += 1
        return UNREADABLE if asked[prompt] == 1 else analysis_for(prompt)

    part = tmp_path / "o.jsonl.part"
    with FakeOpenAIServer(first_unreadable) as server:
        args = _score_cli(server, src, out, "--cache", tmp_path / "c.sqlite", "--chunk-rows", "2",
                          "--judge-option", "concurrency=1")
        written = _kill_once_written(args, part, tmp_path)
        assert 4 <= written < 8 and all(not json.loads(x)["parsed"] for x in part.read_text().splitlines())
        again = subprocess.run(args + ["--retry-unscored"], capture_output=True, text=True, cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"{written} of them had unreadable answers and were asked again (--retry-unscored)" in again.stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == list(range(8)) and all(r["parsed"] for r in rows)


def test_a_continued_run_killed_while_asking_the_written_rows_again_costs_its_rerun_no_third_ask(tmp_path):
    """ray43b: a run continued with --retry-unscored asks the unreadable rows the interrupted run wrote again before it
    goes on; it dropped their cached answers first (`forget`), so a second kill, before those rows were rewritten,
    made the next run drop the new answers too and ask those rows a third time (30 written rows, 10 asked again before
    the kill: the next run asked all 30 again). They are asked anew now, under the part file's token: the next run
    reads what the killed one had asked again (it asks 20, and the one in flight at the kill), and marks it so."""
    import signal
    import time
    from collections import Counter


    src, out, part = tmp_path / "pairs.jsonl", tmp_path / "o.jsonl", tmp_path / "o.jsonl.part"
    write_finding_pairs(src, 12)
    asked: Counter = Counter()

    with FakeOpenAIServer(readable_the_second_time_for_even_rows(lambda: asked)) as server:
        args = _score_cli(server, src, out, "--cache", tmp_path / "c.sqlite", "--chunk-rows", "2",
                          "--judge-option", "concurrency=1")
        written = _kill_once_written(args, part, tmp_path, rows=6)
        assert 6 <= written < 12
        first = sum(asked.values())
        proc = subprocess.Popen(args + ["--retry-unscored"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                cwd=tmp_path)
        deadline = time.time() + 60
        while time.time() < deadline and sum(asked.values()) < first + 3:  # 3 written rows asked again
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        again = subprocess.run(args + ["--retry-unscored"], capture_output=True, text=True, cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    per_row = {int(re.search(r"Finding (\d+): small", prompt).group(1)): n for prompt, n in asked.items()}
    # the written rows asked twice in all (3 of them three times before); the one in flight at the kill may be once more
    assert sorted(per_row[i] for i in range(written)).count(2) >= written - 1, per_row
    assert all(per_row[i] <= 3 for i in range(written)), per_row
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == list(range(12)) and all(r["details"]["asked_again"] for r in rows[:written])
    assert [r["id"] for r in rows[:written] if r["parsed"]] == list(range(0, written, 2))


def test_a_continued_retry_unscored_run_does_not_ask_a_third_time(tmp_path):
    """Review 17 (R1): a --retry-unscored run killed and continued with --retry-unscored asked the rows the first run
    had already asked twice a third time (every further interruption one more). The second answer is written with
    details.asked_again; a continued run keeps it. An uninterrupted run asks each prompt twice; so does this one."""
    import time
    from collections import Counter

    from fake_judge import UNREADABLE

    src, out = tmp_path / "pairs.jsonl", tmp_path / "o.jsonl"
    write_finding_pairs(src, 8)
    asked: Counter = Counter()

    def never_readable(prompt):
        time.sleep(0.1)
        asked[prompt] += 1
        return UNREADABLE

    part = tmp_path / "o.jsonl.part"
    with FakeOpenAIServer(never_readable) as server:
        args = _score_cli(server, src, out, "--cache", tmp_path / "c.sqlite", "--chunk-rows", "2",
                          "--judge-option", "concurrency=1", "--retry-unscored")
        written = _kill_once_written(args, part, tmp_path)
        assert 4 <= written < 8
        first = [json.loads(x) for x in part.read_text().splitlines()]
        assert all(r["details"]["asked_again"] and not r["parsed"] for r in first)
        again = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path)
    assert "Continued an interrupted run" in again.stderr and "asked again" not in again.stderr, again.stderr[-2000:]
    per_row = {int(re.search(r"Finding (\d+): small", prompt).group(1)): n for prompt, n in asked.items()}
    assert sorted(per_row) == list(range(8))
    # the written rows: asked twice in all (a third time before the fix); the rows the kill caught between the
    # forgetting of a first answer and the arrival of the second (at most one chunk) may be asked once more
    assert all(per_row[i] == 2 for i in range(written)), per_row
    assert all(2 <= per_row[i] <= 3 for i in range(written, 8)) and sum(per_row.values()) <= 16 + 2, per_row
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == list(range(8))
    assert all(r["details"]["asked_again"] and not r["parsed"] for r in rows)


def test_a_retry_unscored_run_killed_before_its_second_answers_costs_the_rerun_no_more_than_itself(tmp_path):
    """Review 40a: --retry-unscored deleted the unreadable answers from the cache before asking again. Killed before
    the second answers came (an in-process judge answers a whole chunk, 4,096 rows, in one call), the rerun found
    nothing cached for those rows, asked them, and then asked them again as unreadable: 221 + 221 prompts where an
    uninterrupted retry asks 221. The first answers now stay cached until the second ones replace them. And the rerun
    asked all 8 again, the 2 the killed run had asked again a third time (ray43b): it now reads their second answers,
    so the two runs ask what one uninterrupted retry asks, and the one in flight at the kill."""
    import signal
    import time
    from collections import Counter

    from fake_judge import UNREADABLE

    src, out, cache = tmp_path / "pairs.jsonl", tmp_path / "o.jsonl", tmp_path / "c.sqlite"
    write_finding_pairs(src, 8)
    asked: Counter = Counter()

    def never_readable(prompt):
        asked[prompt] += 1
        time.sleep(0.2)
        return UNREADABLE

    # two rows asked again, the third held until the kill: the run cannot end first
    held = HeldAfter(never_readable, lambda: sum(asked.values()), 8 + 2)
    with FakeOpenAIServer(held) as server:
        args = _score_cli(server, src, out, "--cache", cache, "--judge-option", "concurrency=1")
        first = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path)
        assert first.returncode == 1 and sum(asked.values()) == 8, first.stderr[-2000:]
        proc = subprocess.Popen(args + ["--retry-unscored"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                cwd=tmp_path)
        assert held.reached()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        held.release()
        before = sum(asked.values())
        again = subprocess.run(args + ["--retry-unscored"], capture_output=True, text=True, cwd=tmp_path)
    assert again.returncode == 1, again.stderr[-2000:]
    # each row asked again once in the two runs, as an uninterrupted retry asks (the rerun asked all 8 before), but
    # for those in flight at the kill: the one asked, and on a loaded machine one answered but not yet cached
    assert 8 <= (before - 8) + (sum(asked.values()) - before) <= 8 + 2, sorted(asked.values())
    assert sorted(asked.values()).count(3) <= 2, sorted(asked.values())
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == list(range(8)) and all(r["details"]["asked_again"] for r in rows)


def _one_at_a_time(server, src):
    """`radmetrics score` of ``src`` against ``server``, one request at a time: (output, cache, *flags) -> argv."""
    return lambda out, cache, *extra: _score_cli(server, src, out, "--cache", cache, "--judge-option", "concurrency=1",
                                                 *extra)


def _held_in_the_first_run(asked: dict, run: list[str], after: int) -> HeldAfter:
    """The fake judge of the kill tests: unreadable first answers, readable second ones for even rows, each run's asks
    counted in ``asked[run[0]]``; the first run's request after ``after`` of them held until released."""
    first = next(iter(asked))
    return HeldAfter(readable_the_second_time_for_even_rows(lambda: asked[run[0]]),
                     lambda: sum(asked[first].values()) if run[0] == first else 0, after)


@pytest.mark.parametrize("stop, rerun_chunks", [("SIGKILL", ()), ("SIGINT", ()), ("SIGKILL", ("--chunk-rows", "4"))])
def test_a_retry_unscored_run_killed_while_asking_again_gives_its_rerun_the_uninterrupted_runs_rows(tmp_path, stop,
                                                                                                    rerun_chunks):
    """ray43b: a --retry-unscored run killed while it asked a chunk's unreadable rows again, rerun: the rows it had asked
    again were asked a third time (40 rows, 20 asked again before the kill: 40 asked by the rerun, 60 for an
    uninterrupted run's 40) and those whose second answer could be read lost their asked_again mark. The chunk's asks
    are now recorded in the cache under a name the rerun shares (the part file's token and the chunk's first line):
    it reads the second answers and asks the rest; its rows are the uninterrupted run's. Review 44: so after Ctrl-C
    (SIGINT) too, in the run's first chunk (the whole run under 4,096 rows): the part file and its stamp, token and
    all, were deleted as a run's stopped before its first row are, and the rerun, under a token of its own, asked the
    rows again a third time (12 rows, 6 asked again: the rerun asked 9, rows 0, 2 and 4 without asked_again). Session
    36: a rerun in smaller chunks (`--chunk-rows`, not part of the run's identity) too: the name was the chunk's first
    line, so the rerun's chunks past the first found no record and asked their rows a third time."""
    import signal
    from collections import Counter

    src, cache = tmp_path / "pairs.jsonl", tmp_path / "c.sqlite"
    write_finding_pairs(src, 12)
    asked: dict[str, Counter] = {"killed": Counter(), "uninterrupted": Counter()}
    run = ["killed"]

    # six rows asked again, the seventh held until the signal: the run cannot end first
    held = _held_in_the_first_run(asked, run, 12 + 6)
    with FakeOpenAIServer(held) as server:
        score = _one_at_a_time(server, src)

        out = tmp_path / "o.jsonl"
        assert subprocess.run(score(out, cache), capture_output=True, cwd=tmp_path).returncode == 1
        # Ctrl-C's default action in the run, whatever this process's: a shell's background job, as CI runs the
        # suite, ignores SIGINT, and a child inherits that (the run then went on to its end, exit 0)
        proc = subprocess.Popen(score(out, cache, "--retry-unscored"), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, cwd=tmp_path,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        assert held.reached()
        os.kill(proc.pid, getattr(signal, stop))
        held.release()  # a run stopped by Ctrl-C waits for the answer in flight
        assert proc.wait() == (130 if stop == "SIGINT" else -signal.SIGKILL)
        before = sum(asked["killed"].values())
        again = subprocess.run(score(out, cache, "--retry-unscored", *rerun_chunks), capture_output=True, text=True,
                               cwd=tmp_path)
        run[0] = "uninterrupted"
        reference = tmp_path / "reference.jsonl"
        for extra in ((), ("--retry-unscored",)):
            subprocess.run(score(reference, tmp_path / "fresh.sqlite", *extra), capture_output=True, cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert sum(asked["uninterrupted"].values()) == 24
    # the rerun asks what was not asked again, and those in flight at the kill: the one asked, and on a loaded
    # machine one answered but not yet cached (CI of session 35)
    assert before - 12 >= 6 and sum(asked["killed"].values()) - before <= 12 - (before - 12) + 2, \
        sorted(asked["killed"].values())
    rows, expected = ([json.loads(x) for x in path.read_text().splitlines()] for path in (out, reference))
    assert sum(r["parsed"] for r in rows) == 6 and all(r["details"]["asked_again"] for r in rows)
    assert rows == expected


def test_a_pair_given_in_two_chunks_is_asked_again_once_whatever_the_chunks_and_after_a_stop(tmp_path):
    """Review 45: `score --retry-unscored` dropped what a chunk recorded as asked again once the chunk was written, so a
    pair given again in a later chunk found no record, read its second, unreadable answer as a first one and asked it a
    third time: the rows and the asks depended on --chunk-rows (12 rows, pairs 1 and 3 given twice: 12 asks again in one
    chunk, 14 in chunks of 4), and a run stopped in its one chunk and rerun with --chunk-rows 4 asked pairs 1 and 3 a
    third time though the stopped run had asked them again (session 36's rerun in smaller chunks, a pair given twice).
    The records are now kept until the run's rows are all written."""
    import signal
    from collections import Counter

    src = tmp_path / "pairs.jsonl"
    given = [0, 1, 2, 3, 4, 5, 1, 7, 8, 3, 10, 11]  # pair 1 at rows 1 and 6, pair 3 at rows 3 and 9
    src.write_text("".join(json.dumps({"id": k, "reference": f"Finding {i}: small left effusion.",
                                       "candidate": f"Finding {i}."}) + "\n" for k, i in enumerate(given)))
    asked: dict[str, Counter] = {"stopped": Counter(), "chunks of 4": Counter()}
    run = ["stopped"]
    # five pairs asked again, the sixth held until Ctrl-C (which waits for it: no answer is lost to the stop)
    held = _held_in_the_first_run(asked, run, 10 + 5)
    with FakeOpenAIServer(held) as server:
        score = _one_at_a_time(server, src)

        out, cache = tmp_path / "o.jsonl", tmp_path / "c.sqlite"
        assert subprocess.run(score(out, cache), capture_output=True, cwd=tmp_path).returncode == 1
        proc = subprocess.Popen(score(out, cache, "--retry-unscored"), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, cwd=tmp_path,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        assert held.reached()
        os.kill(proc.pid, signal.SIGINT)
        held.release()
        assert proc.wait() == 130
        again = subprocess.run(score(out, cache, "--retry-unscored", "--chunk-rows", "4"), capture_output=True,
                               text=True, cwd=tmp_path)
        run[0] = "chunks of 4"  # uninterrupted
        reference = tmp_path / "reference.jsonl"
        for extra in ((), ("--retry-unscored",)):
            subprocess.run(score(reference, tmp_path / "fresh.sqlite", "--chunk-rows", "4", *extra), capture_output=True,
                           cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    # each of the 10 pairs asked twice in all, as in one chunk (pairs 1 and 3 three times before): in chunks of 4, and
    # by the run stopped in one chunk and its rerun in chunks of 4 together
    assert {name: sorted(counts.values()) for name, counts in asked.items()} == {name: [2] * 10 for name in asked}
    rows, expected = ([json.loads(x) for x in path.read_text().splitlines()] for path in (out, reference))
    assert [r["id"] for r in rows if r["parsed"]] == [0, 2, 4, 8, 10] and all(r["details"]["asked_again"] for r in rows)
    assert rows == expected


def test_a_retry_unscored_run_stopped_once_its_rows_are_written_leaves_no_record_after_its_rerun(tmp_path):
    """Review 45: a --retry-unscored run stopped after writing its last chunk but before dropping what the chunk had
    recorded as asked again left those records to its rerun, which had no chunk left to judge and kept them for a
    week (8 rows: 8 records). The rerun drops them now."""
    import sqlite3
    from collections import Counter

    src, out, cache = tmp_path / "pairs.jsonl", tmp_path / "o.jsonl", tmp_path / "c.sqlite"
    write_finding_pairs(src, 8)
    asked: Counter = Counter()
    # the run ends right after its rows are written (a kill in that instant)
    stop_once_written = ("import os, sys; import radmetrics.streaming as s; write = s.OrderedPartWriter.write; "
                         "s.OrderedPartWriter.write = lambda self, rows: (write(self, rows), os._exit(9)); "
                         "from radmetrics.cli import main; sys.argv = ['radmetrics'] + sys.argv[1:]; main()")
    with FakeOpenAIServer(readable_the_second_time_for_even_rows(lambda: asked)) as server:
        args = _score_cli(server, src, out, "--cache", cache, "--judge-option", "concurrency=1")
        assert subprocess.run(args, capture_output=True, cwd=tmp_path).returncode == 1
        stopped = subprocess.run([sys.executable, "-c", stop_once_written, *args[3:], "--retry-unscored"],
                                 capture_output=True, text=True, cwd=tmp_path)
        assert stopped.returncode == 9, stopped.stderr[-2000:]
        again = subprocess.run(args + ["--retry-unscored"], capture_output=True, text=True, cwd=tmp_path)
    assert again.returncode == 0 and "Continued an interrupted run: 8 rows" in again.stderr, again.stderr[-2000:]
    assert sorted(asked.values()) == [2] * 8
    with sqlite3.connect(cache) as con:
        assert con.execute("SELECT COUNT(*) FROM written_for_batch").fetchone() == (0,)


def test_two_runs_asking_one_prompt_again_at_once_read_the_new_answer_not_the_old(tmp_path):
    """Review 41a: two --retry-unscored runs at once on one cache (green and green_f1 share their prompts): the run
    that found the prompt held by the other read its old, unreadable answer at once (still cached while the other
    asked again) and wrote it as asked again; with `forget` it had waited for the new one. It waits again now."""
    import threading
    import time

    from radmetrics.judge import CachedJudge
    from radmetrics.judge.base import JudgeBackend
    from radmetrics.judge.cache import ResponseCache

    asking, answers = threading.Event(), iter(["old, unreadable", "new"])

    class Slow(JudgeBackend):
        backend_name = "fake"

        def _generate(self, prompts, config, on_result, progress):
            asking.set()
            text = next(answers)
            time.sleep(0.5)
            on_result(0, text)
            return [text]

    first, second = (CachedJudge(Slow("m"), ResponseCache(tmp_path / "c.sqlite")) for _ in range(2))
    assert first.generate(["P"], progress=False) == ["old, unreadable"]
    asking.clear()
    first.ask_anew(["P"])
    second.ask_anew(["P"])
    got = {}
    thread = threading.Thread(target=lambda: got.update(first=first.generate(["P"], progress=False)))
    thread.start()
    assert asking.wait(10)  # the first run holds the prompt and asks it again
    got["second"] = second.generate(["P"], progress=False)
    thread.join()
    assert got == {"first": ["new"], "second": ["new"]}
    assert (first.calls, second.calls) == (2, 0)



def test_a_batch_done_again_whole_asks_again_only_what_its_first_try_had_not(tmp_path):
    """Review 42: a Ray actor killed while it asked prompts again (--retry-unscored) is restarted and given its batch
    again whole; the restarted judge took the answers the dead one had just given as those to ask again, and asked
    them a third time. Under the batch's name the first try records, in its cache file, which answers were to be
    asked again: a later try of that batch reads the new ones and asks the rest. A try on another cache file (an
    actor restarted on another node) has no record and asks all again; so does one after `batch_done`."""
    from radmetrics.judge import CachedJudge
    from radmetrics.judge.base import JudgeBackend
    from radmetrics.judge.cache import ResponseCache

    asked: dict[str, int] = {}

    class Counting(JudgeBackend):
        backend_name = "fake"

        def _generate(self, prompts, config, on_result, progress):
            for i, prompt in enumerate(prompts):
                asked[prompt] = asked.get(prompt, 0) + 1
                on_result(i, f"{prompt} answer {asked[prompt]}")
            return [f"{prompt} answer {asked[prompt]}" for prompt in prompts]

    def judge(path):  # a new judge on the file, as a restarted actor's
        return CachedJudge(Counting("m"), ResponseCache(path))

    here, elsewhere = tmp_path / "c.sqlite", tmp_path / "other-node.sqlite"
    for path in (here, elsewhere):
        judge(path).generate(["P1", "P2"], progress=False)
    dead = judge(here)
    dead.ask_anew(["P1", "P2"], batch="b")
    assert dead.generate(["P1"], progress=False) == ["P1 answer 3"]  # P1 asked again, then the actor is killed
    restarted = judge(here)
    restarted.ask_anew(["P1", "P2"], batch="b")
    assert restarted.generate(["P1", "P2"], progress=False) == ["P1 answer 3", "P2 answer 3"]
    assert restarted.calls == 1  # P2 alone; P1 was asked a third time before
    on_another_node = judge(elsewhere)
    on_another_node.ask_anew(["P1", "P2"], batch="b")
    assert on_another_node.generate(["P1", "P2"], progress=False) == ["P1 answer 4", "P2 answer 4"]
    ResponseCache(here).batch_done("b")
    again = judge(here)
    again.ask_anew(["P1", "P2"], batch="b")
    assert again.generate(["P1", "P2"], progress=False) == ["P1 answer 5", "P2 answer 5"]

def test_a_run_continued_with_other_system_options_starts_over(tmp_path):
    """Review 18 (4): system options (FineRadScore's report_score, VERT's variant...) were in neither the results'
    fingerprint nor the identity a continued run is matched on: a run killed with report_score=sum and rerun with
    report_score=max kept the first rows' sums beside the later maxima, and the summary described neither. The
    options set are now in the fingerprint: the rerun starts over, and every row says which options made it."""
    import time

    answer = json.dumps({"0": {"corrections": "[delete]", "clinical severity": "Urgent error", "comments": "extra",
                               "error category": ["False prediction of finding"]},
                         "1": {"corrections": "small", "clinical severity": "Not actionable", "comments": "size",
                               "error category": ["Incorrect severity of finding"]}})

    def slow(prompt):
        time.sleep(0.1)
        return answer

    src, out = tmp_path / "pairs.jsonl", tmp_path / "o.jsonl"
    src.write_text("".join(json.dumps({"id": i, "reference": f"Finding {i}: small left effusion.",
                                       "candidate": f"Heart normal in case {i} today. Large right effusion."}) + "\n" for i in range(8)))
    with FakeOpenAIServer(slow) as server:
        args = [a if a != "green" else "finerad_score" for a in _score_cli(server, src, out, "--no-cache",
                "--chunk-rows", "2", "--judge-option", "concurrency=1")]
        written = _kill_once_written(args + ["--system-option", "report_score=sum"], out.with_name("o.jsonl.part"),
                                     tmp_path)
        assert 4 <= written < 8
        again = subprocess.run(args + ["--system-option", "report_score=max"], capture_output=True, text=True,
                               cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "another input or settings: starting over" in again.stderr and "Continued" not in again.stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["finerad_score"] for r in rows] == [3.0] * 8  # the max of 3 and 1, every row (the sum was 4)
    assert all(r["fingerprint"]["options"] == {"report_score": "max"} for r in rows)
    summary = json.loads((tmp_path / "o.jsonl.summary.json").read_text())
    assert summary["summary"]["finerad_score"] == 3.0 and summary["fingerprint"]["options"] == {"report_score": "max"}


def test_an_answer_the_server_stopped_early_is_not_scored_and_is_asked_again(tmp_path):
    """Review 18 (8): an answer ended by the server's content filter (`finish_reason: "content_filter"`, with the
    text up to the cut, as OpenAI and Azure send it) was read as complete, scored and cached: a GREEN analysis cut
    in its matched-findings list scored lower, and no rerun asked again. It is now a failed call (unscored, not
    cached, asked again on a rerun, no retries against the same filter); "max_tokens" is a cut answer as "length"."""
    src, out, cache = tmp_path / "pairs.jsonl", tmp_path / "o.jsonl", tmp_path / "c.sqlite"
    pairs = [*zip(REFS, CANDS), ("Cardiomegaly. Small right effusion.", "Cardiomegaly.")]
    src.write_text("".join(json.dumps({"reference": r, "candidate": c}) + "\n" for r, c in pairs))
    with FakeOpenAIServer(analysis_for, script=["content_filter", "max_tokens"]) as server:
        args = _score_cli(server, src, out, "--cache", cache, "--judge-option", "concurrency=1")
        first = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path)
        assert len(server.requests) == 3  # the filtered answer was not retried
        rows = [json.loads(x) for x in out.read_text().splitlines()]
        assert rows[0]["reason"] == ("judge call failed: the server stopped the answer before it ended (finish_reason "
                                     "'content_filter'); the text so far is not scored")
        assert rows[0]["green"] is None and rows[0]["judge_output"] in ("", None)
        assert rows[1]["reason"].startswith("the judge's answer reached the token limit") and rows[1]["green"] is None
        assert rows[2]["parsed"] and first.returncode == 0, first.stderr[-2000:]
        again = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path)
        assert len(server.requests) == 5  # rows 0 and 1 asked again; row 2 from the cache
    assert again.returncode == 0 and all(json.loads(x)["parsed"] for x in out.read_text().splitlines())


@pytest.mark.parametrize("engine", [True, False], ids=["engine", "generate"])
def test_a_prompt_longer_than_the_judges_context_is_not_judged(tiny_judge, engine):
    """Review 33: a RadCliQ-rubric prompt of thousands of tokens (a long reference; GREEN and VERT cut reports at
    300 words, FineRadScore and the RadCliQ rubric do not) went to the tiny judge, whose positions end at 2,048,
    with no word; a judge answering in format would have been scored on text read past its context. A server refuses such a prompt (HTTP 400, an unscored row);
    now the in-process backend leaves it unscored too, with the reason, and judges the other prompts as before."""
    from radmetrics.judge.transformers_backend import TransformersJudge
    from radmetrics.types import GenerationFailure

    judge = TransformersJudge(str(tiny_judge), engine=engine)
    long_reference = "Small left pleural effusion with adjacent atelectasis. " * 500
    system = radmetrics.get_scoring_system("radcliq_rubric")
    prompts = [system.build_prompt(REFS[0], CANDS[0]), system.build_prompt(long_reference, CANDS[0])]
    judge.load()
    context = judge._model.config.max_position_embeddings
    assert len(judge.encode(prompts[1])) > context > len(judge.encode(prompts[0]))
    seen = []
    answers = judge.generate(prompts, GenerationConfig(max_new_tokens=32), progress=False,
                             on_result=lambda i, text: seen.append(i))
    assert answers[0] and not isinstance(answers[0], GenerationFailure)
    assert isinstance(answers[1], GenerationFailure) and f"more than the judge's context of {context:,}" in \
        answers[1].reason
    assert sorted(seen) == [0, 1]
    result = radmetrics.score("radcliq_rubric", [REFS[0], long_reference], [CANDS[0]] * 2, judge=judge,
                              progress=False)
    assert result.judgments[1].score is None and "context" in result.judgments[1].reason


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _reference_leaving(judge, room: int, system: str = "radcliq_rubric") -> tuple[str, int]:
    """A reference whose prompt (``system``'s, which does not cut reports) leaves the judge's context at most
    ``room`` and at least 1 position for the answer; and the positions it leaves."""
    build = radmetrics.get_scoring_system(system).build_prompt
    context = judge._model.config.max_position_embeddings

    def left(words: int) -> int:
        return context - len(judge.encode(build("Small left pleural effusion. " * words, CANDS[0])))

    low, high = 1, 2 * context  # left(low) > room >= left(high) (more words, fewer positions left)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if left(middle) > room else (low, middle)
    assert 1 <= left(high) <= room, left(high)
    return "Small left pleural effusion. " * high, left(high)


@pytest.mark.parametrize("engine,device", [
    (True, "cpu"), (False, "cpu"),
    pytest.param(True, "cuda", marks=pytest.mark.skipif(not _cuda(), reason="no CUDA device: the engine's CUDA "
                                                        "path (decode steps replayed from CUDA graphs) runs where one is"))],
    ids=["engine", "generate", "engine-cuda"])
def test_an_answer_that_reaches_the_end_of_the_judges_context_is_cut_there_and_unscored(tiny_judge, engine, device,
                                                                                        caplog):
    """Review 35's open point: a prompt that fit the judge's context but left less room than max_new_tokens was
    answered past the positions the model was trained on, and the answer scored. Now each row stops where its
    prompt + answer fill the context (a server's max_model_len, generate's max_length): its text is what generate
    with that many new tokens gives, it is a `CutAnswer` naming the context (unscored, not advice to raise
    max_new_tokens), and the other rows are answered as before. On CUDA (fp32, TF32 off: no near-tie flips between
    kernels) the per-row limit holds inside decode steps replayed from CUDA graphs, where the host checks rows
    only every few steps."""
    import torch
    from transformers import AutoTokenizer

    from radmetrics.judge.transformers_backend import TransformersJudge
    from radmetrics.types import answer_reached_context, answer_was_cut

    torch.backends.cuda.matmul.allow_tf32 = False
    judge = TransformersJudge(str(tiny_judge), engine=engine, device=device, dtype="fp32")
    judge.load()
    context = judge._model.config.max_position_embeddings
    reference, room = _reference_leaving(judge, 12)
    system = radmetrics.get_scoring_system("radcliq_rubric")
    prompts = [system.build_prompt(reference, CANDS[0]), system.build_prompt(REFS[1], CANDS[1])]
    config = GenerationConfig(max_new_tokens=64, min_new_tokens=64)  # no end token before the limit: a sure cut
    answers = judge.generate(prompts, config, progress=False)
    assert isinstance(answers[0], CutAnswer) and (answers[0].limit, answers[0].context) == (room, context)
    ids = torch.tensor([judge.encode(prompts[0])], device=device)
    with torch.inference_mode():
        expected = judge._model.generate(ids, max_new_tokens=room, min_new_tokens=room, do_sample=False)
    tok = AutoTokenizer.from_pretrained(str(tiny_judge))
    assert str(answers[0]) == tok.decode(expected[0, ids.shape[1]:], skip_special_tokens=True)
    assert answers[1] == judge.generate(prompts[1:], config, progress=False)[0]  # its 64 tokens, as alone
    assert answer_was_cut(answers[0].reason) and answer_reached_context(answers[0].reason)
    assert f"judge's context ({context:,} tokens; the prompt left {room} to the answer)" in answers[0].reason
    assert "capture failed" not in caplog.text  # on CUDA: the steps ran as graphs, not eagerly

    result = radmetrics.score("radcliq_rubric", [reference], [CANDS[0]], judge=judge, config=config, progress=False)
    assert result.scores == [None] and answer_reached_context(result.judgments[0].reason)
    assert result.judgments[0].raw == str(answers[0])


@pytest.mark.parametrize("engine", [True, False], ids=["engine", "generate"])
def test_a_judge_with_learned_positions_stops_at_its_context_instead_of_crashing(tiny_judge, engine):
    """A GPT-2-style judge (a table of n_positions position embeddings): a prompt of 52 tokens and max_new_tokens
    30 against 64 positions stopped the whole call with "IndexError: index out of range in self", on the engine
    (drafts included) and on generate. Now the row ends at the 12 positions it has, a cut answer; the engine and
    generate give the same text, and a short prompt beside it gets all its 30 tokens."""
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    from radmetrics.judge.transformers_backend import TransformersJudge

    tok = AutoTokenizer.from_pretrained(str(tiny_judge))
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=len(tok), n_positions=64,
                                       eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id)).eval()
    judge = TransformersJudge.from_objects(model, tok, "tiny-gpt2", engine=engine, chat_template="none")
    prompt = "word " * 17
    assert len(judge.encode(prompt)) == 52
    answers = judge.generate([prompt, "short"], GenerationConfig(max_new_tokens=30, min_new_tokens=30),
                             progress=False)
    assert isinstance(answers[0], CutAnswer) and (answers[0].limit, answers[0].context) == (12, 64)
    assert len(tok(str(answers[0]))["input_ids"]) <= 12
    assert isinstance(answers[1], CutAnswer) and answers[1].limit == 30 and answers[1].context is None
    other = TransformersJudge.from_objects(model, tok, "tiny-gpt2", engine=not engine, chat_template="none")
    assert other.generate([prompt, "short"], GenerationConfig(max_new_tokens=30, min_new_tokens=30),
                          progress=False) == answers


def test_the_closing_advice_for_answers_at_the_end_of_the_context_is_not_to_raise_max_new_tokens(tiny_judge,
                                                                                                   tmp_path):
    """`score` with the in-process judge: a row whose answer reached the end of the judge's context is unscored
    with that reason, and the closing advice says what helps (shorter reports, a longer context), not "rerun
    with a higher --max-new-tokens", which would give the same cut."""
    from radmetrics.judge.transformers_backend import TransformersJudge

    judge = TransformersJudge(str(tiny_judge))
    judge.load()
    reference, room = _reference_leaving(judge, 6)
    src = tmp_path / "pairs.jsonl"
    src.write_text(json.dumps({"id": "long", "reference": reference, "candidate": CANDS[0]}) + "\n")
    out = tmp_path / "o.jsonl"
    run = subprocess.run([sys.executable, "-m", "radmetrics.cli", "score", "-m", "radcliq_rubric", "-i", src, "-o",
                          out, "--backend", "transformers", "--judge", str(tiny_judge), "--no-progress", "--no-cache"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    row = json.loads(out.read_text())
    assert row["reason"].startswith("the judge's answer reached the token limit of the judge's context")
    assert "1 answer reached the end of the judge's context before it ended" in run.stderr
    assert "rerun with a higher --max-new-tokens" not in run.stderr


def test_python_score_says_an_answer_at_the_end_of_the_context_needs_shorter_reports(tiny_judge, caplog):
    """radmetrics.score (and evaluate's compute, which calls it) warned of a row whose answer reached the end of the
    judge's context as cut at "max_new_tokens=1024", with "raise max_new_tokens": advice that gives the same cut.
    Now that row is said apart, with what helps; a row cut at max_new_tokens keeps its own warning."""
    import logging

    from radmetrics.judge.transformers_backend import TransformersJudge

    judge = TransformersJudge(str(tiny_judge))
    judge.load()
    reference, _ = _reference_leaving(judge, 6)
    with caplog.at_level(logging.WARNING, logger="radmetrics"):
        result = radmetrics.score("radcliq_rubric", [reference], [CANDS[0]], judge=judge, progress=False)
    assert result.scores == [None]
    said = [r.getMessage() for r in caplog.records if "token limit" in r.getMessage() or "context" in r.getMessage()]
    assert said == [
        "radcliq_rubric: the judge's answer reached the end of the judge's context for 1 of 1 rows (the prompt left "
        "it fewer tokens than max_new_tokens); they are unscored: shorten the reports, or use a judge with a longer "
        "context (a higher max_new_tokens does not help)"]


def test_rows_whose_answers_reached_the_end_of_the_context_are_counted_under_one_reason(tiny_judge):
    """Each such row's reason names the positions its prompt left the answer, which differ from row to row: the
    summary counted every row as a reason of its own (the CLI's table listed the same truncated line once per row,
    each "1"), and past 1,000 of them other reasons were lumped together. They are counted under one reason now;
    each row keeps its own."""
    from radmetrics.judge.transformers_backend import TransformersJudge
    from radmetrics.types import CONTEXT_CUT_REASON

    judge = TransformersJudge(str(tiny_judge))
    judge.load()
    (near, near_room), (far, far_room) = _reference_leaving(judge, 6), _reference_leaving(judge, 12)
    assert near_room != far_room
    result = radmetrics.score("radcliq_rubric", [near, far], [CANDS[0]] * 2, judge=judge, progress=False)
    assert [f"the prompt left {room} to the answer" in j.reason for j, room in
            zip(result.judgments, (near_room, far_room))] == [True, True]
    context = judge._model.config.max_position_embeddings
    [(reason, count)] = result.summary["unscored_reasons"].items()
    assert count == 2 and reason.startswith(f"{CONTEXT_CUT_REASON} ({context:,} tokens) before it ended")


def test_a_prompt_longer_than_the_context_is_not_advised_a_rerun(tiny_judge, tmp_path, caplog):
    """A prompt with no room for an answer in the judge's context is not sent and fails as a judge call; score's
    closing advice counted it among failed calls, "rerun to ask again the 1 row whose judge call failed", and
    radmetrics.score warned "a rerun with a cache asks only them": a rerun fails it the same. Now both say what
    helps (shorter reports, a longer-context judge)."""
    import logging

    long_reference = "Small left pleural effusion with adjacent atelectasis. " * 500
    src = tmp_path / "pairs.jsonl"
    src.write_text("".join(json.dumps({"id": n, "reference": r, "candidate": CANDS[0]}) + "\n"
                           for n, r in (("long", long_reference), ("short", REFS[0]))))
    out = tmp_path / "o.jsonl"
    run = subprocess.run([sys.executable, "-m", "radmetrics.cli", "score", "-m", "radcliq_rubric", "-i", src, "-o",
                          out, "--judge", str(tiny_judge), "--max-new-tokens", "32", "--no-progress", "--no-cache"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[0]["reason"].startswith("judge call failed: the prompt is ") and rows[1]["reason"] != rows[0]["reason"]
    assert "rerun to ask again" not in run.stderr
    assert ("1 prompt left no room for an answer in the judge's context and was not sent (a rerun gives the same): "
            "shorten the reports, or use a judge with a longer context") in run.stderr

    with caplog.at_level(logging.WARNING, logger="radmetrics"):
        radmetrics.score("radcliq_rubric", [long_reference], [CANDS[0]], judge=str(tiny_judge), cache=False,
                         config=GenerationConfig(max_new_tokens=32), progress=False)
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "a rerun with a cache asks only them" not in said and "1 of 1 prompts left no room" in said


def _cache_as_an_older_radmetrics_did(path, rows) -> None:
    """Write answers into a cache file as radmetrics did before session 31 (and as an older install sharing the
    file still does): the five-value insert into `responses` alone, with no mark that the judge stopped at its
    context."""
    import sqlite3
    import time

    from radmetrics.judge.cache import ResponseCache

    ResponseCache(path)  # the tables
    con = sqlite3.connect(path)
    with con:
        con.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)",
                        [(*row, time.time()) for row in rows])
    con.close()


def test_an_answer_cached_past_the_end_of_the_context_is_asked_again(tiny_judge, tmp_path):
    """Review 36a: answers cached before rows stopped at the end of the judge's context (a longer answer went on
    past the positions the model was trained on) were served from the cache and scored. A cached answer that
    may run past its prompt's room is now dropped from the cache and asked again (here: a cut answer, unscored);
    one that fits is served as before, and a fully cached run still loads no weights to tell which is which."""
    from radmetrics.judge.cache import ResponseCache

    judge = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=tmp_path / "c.sqlite")
    judge.backend.load()
    reference, room = _reference_leaving(judge.backend, 6)
    system = radmetrics.get_scoring_system("radcliq_rubric")
    near, far = system.build_prompt(reference, CANDS[0]), system.build_prompt(REFS[1], CANDS[1])
    config = GenerationConfig(max_new_tokens=64)
    long_answer = "Small left pleural effusion is present in the candidate report. " * 8  # well past 6 tokens
    _cache_as_an_older_radmetrics_did(tmp_path / "c.sqlite", [(key, "transformers", str(tiny_judge), long_answer)
                                                              for key in judge.keys([near, far], config)])
    cache = ResponseCache(tmp_path / "c.sqlite")

    from radmetrics.judge import CachedJudge
    from radmetrics.judge.transformers_backend import TransformersJudge

    fresh = CachedJudge(TransformersJudge(str(tiny_judge)), cache)  # its own instance: no weights loaded yet
    assert fresh.keys([near, far], config) == judge.keys([near, far], config)
    answers = fresh.generate([far], config, progress=False)
    assert answers == [long_answer] and fresh.calls == 0 and fresh.backend._model is None  # fits: served, no weights
    answers = fresh.generate([near, far], config, progress=False)
    assert fresh.calls == 1 and isinstance(answers[0], CutAnswer) and answers[0].context and answers[1] == long_answer
    assert judge.keys([near], config)[0] not in cache.get_many(judge.keys([near], config))  # dropped, not kept


def test_an_answer_this_version_cached_near_the_end_of_the_context_is_served_on_every_run(tiny_judge, tmp_path):
    """The check of cached answers re-encodes them with a slack of 8 tokens (a text re-encoded can come out a few
    tokens longer than generated): an answer that really ended within 8 tokens of its prompt's room was dropped and
    asked again on every run, and cached again each time. Answers written since rows stop at the context carry a
    mark (`answers_within_context`, with the answer's `created`) and are served; one written by an older radmetrics
    is still checked, and one an older install rewrites over a marked answer loses the mark."""
    from radmetrics.judge import CachedJudge
    from radmetrics.judge.cache import ResponseCache
    from radmetrics.judge.transformers_backend import TransformersJudge

    path = tmp_path / "c.sqlite"
    judge = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=path)
    judge.backend.load()
    reference, room = _reference_leaving(judge.backend, 12)
    near = radmetrics.get_scoring_system("radcliq_rubric").build_prompt(reference, CANDS[0])
    config = GenerationConfig(max_new_tokens=64)
    tokenizer = judge.backend._tokenizer
    answer = next(text for words in range(1, 40) for text in [" ".join(["effusion"] * words)]
                  if len(tokenizer(text, add_special_tokens=False)["input_ids"]) == room - 4)  # fits, within the slack
    key = judge.keys([near], config)[0]

    def fresh() -> CachedJudge:  # a new process's judge: no weights loaded, the cache file as left
        return CachedJudge(TransformersJudge(str(tiny_judge)), ResponseCache(path))

    context = judge.backend.context_tokens()
    # as this version's store writes it: marked, with the context it was written under
    ResponseCache(path).put_many([(key, "transformers", str(tiny_judge), answer)], context=context)
    for _ in range(2):  # every run: served, no weights loaded, nothing asked
        again = fresh()
        assert again.generate([near], config, progress=False) == [answer] and again.calls == 0
        assert again.backend._model is None and ResponseCache(path).get_many([key]) == {key: answer}

    # marked under a longer context than the judge's now (review 37: how the context is read changed, e.g. the
    # smallest of several stated lengths): checked, and within the slack, so asked again
    ResponseCache(path).put_many([(key, "transformers", str(tiny_judge), answer)], context=context + 100)
    longer = fresh()
    longer.generate([near], config, progress=False)
    assert longer.calls == 1

    # the same answer written by an older radmetrics (over a marked one: the mark no longer matches): checked too
    ResponseCache(path).put_many([(key, "transformers", str(tiny_judge), answer)], context=context)
    _cache_as_an_older_radmetrics_did(path, [(key, "transformers", str(tiny_judge), answer)])
    assert ResponseCache(path).get_many_marked([key]) == {key: (answer, False, None)}
    older = fresh()
    older.generate([near], config, progress=False)
    assert older.calls == 1


def test_the_judge_marks_what_it_caches_with_its_context_and_checks_answers_other_runs_write(tiny_judge, tmp_path):
    """What the judge caches carries the context it was answered under. An answer another process writes while
    this run waits for it (it held the claim) is read as this run's own cached answers are: one an older radmetrics
    wrote past the prompt's room is dropped and asked here, not served (review 37: answers from other runs were
    never checked)."""
    import socket
    import threading
    import time

    from radmetrics.judge import CachedJudge
    from radmetrics.judge.cache import ResponseCache
    from radmetrics.judge.transformers_backend import TransformersJudge

    path = tmp_path / "c.sqlite"
    judge = CachedJudge(TransformersJudge(str(tiny_judge)), ResponseCache(path))
    short = radmetrics.get_scoring_system("green").build_prompt(REFS[1], CANDS[1])  # the tiny judge ends these
    assert not isinstance(judge.generate([short], GenerationConfig(), progress=False)[0], CutAnswer)
    key = judge.keys([short], GenerationConfig())[0]
    assert ResponseCache(path).get_many_marked([key])[key][1:] == (True, judge.backend.context_tokens())

    config = GenerationConfig(max_new_tokens=16)
    reference, _ = _reference_leaving(judge.backend, 6)
    near = radmetrics.get_scoring_system("radcliq_rubric").build_prompt(reference, CANDS[0])
    near_key = judge.keys([near], config)[0]
    other = ResponseCache(path)
    with other._write() as con:  # another live process on this host (pid 1) holds the claim
        con.execute("INSERT INTO claims VALUES (?, ?, ?)", (near_key, f"{socket.gethostname()}:1:other",
                                                            time.time() + 600))
    waiting = CachedJudge(TransformersJudge(str(tiny_judge)), ResponseCache(path))
    waiting.poll_seconds = 0.05
    result = {}
    thread = threading.Thread(target=lambda: result.update(answers=waiting.generate([near], config, progress=False)))
    thread.start()
    time.sleep(0.5)
    past_the_room = "Small left pleural effusion is present in the candidate report. " * 8
    _cache_as_an_older_radmetrics_did(path, [(near_key, "transformers", str(tiny_judge), past_the_room)])
    other.release(f"{socket.gethostname()}:1:other")
    thread.join(120)
    assert not thread.is_alive() and waiting.calls == 1  # asked here, not served
    assert isinstance(result["answers"][0], CutAnswer) and result["answers"][0].context


def test_compare_and_meta_eval_count_a_too_short_context_apart_from_failed_calls_and_max_new_tokens():
    """Review 36a (7): compare said "a rerun with a cache asks only them" of a prompt the judge's context cannot
    hold, and named --max-new-tokens first for answers stopped by the end of the context; neither helps. Rows whose
    context was too short are now counted apart (results entries' `past_context`), with what helps."""
    from radmetrics.cli.data import _without_verdict
    from radmetrics.judge.base import context_failure
    from radmetrics.meta.compare import _LEFT_OUT
    from radmetrics.meta.runs import MetricRun
    from radmetrics.types import JUDGE_CALL_FAILED

    reasons = [JUDGE_CALL_FAILED + "HTTP 500", JUDGE_CALL_FAILED + context_failure(3000, 2048, "max_position_embeddings").reason,
               CutAnswer("x", 1024).reason, CutAnswer("x", 5, 2048).reason, None]
    run = MetricRun("green", [None] * 4 + [0.5], True, [], {}, reasons)
    assert run.rows_without_verdict() == {"judge_calls_failed": 1, "answers_cut": 1, "past_context": 2}
    counted = {what: sum(map(which, reasons)) for which, what, _ in _LEFT_OUT}
    assert list(counted.values()) == [1, 1, 2]
    problems = _without_verdict("green", run.rows_without_verdict(), True, "row(s)", "left out")
    assert problems[-1] == ("green: the judge's context was too short for 2 row(s), left out; shorten the reports, "
                            "or use a judge with a longer context")
    assert "max-new-tokens" not in problems[-1] and "rerun" not in problems[-1]


def test_the_context_of_a_multimodal_or_other_named_judge_is_found():
    """Review 36a (suspected): the context was read only from the top config's max_position_embeddings or
    n_positions, so a multimodal judge (its decoder's positions in the text config) or a config naming them
    max_seq_len had no limit, and its rows were not stopped at the end of the context."""
    from types import SimpleNamespace

    from transformers import GPT2Config, LlamaConfig, LlavaConfig, PretrainedConfig

    from radmetrics.judge.transformers_backend import TransformersJudge

    def context(config):
        judge = TransformersJudge("unused")
        judge._model = SimpleNamespace(config=config)
        return judge.context_tokens()

    assert context(LlavaConfig(text_config=LlamaConfig(max_position_embeddings=1234).to_dict())) == 1234
    assert context(GPT2Config(n_positions=77)) == 77 and context(LlamaConfig(max_position_embeddings=99)) == 99
    assert context(PretrainedConfig(max_seq_len=2048)) == 2048 and context(PretrainedConfig()) is None


def test_a_rope_scaled_judges_context_is_what_vllm_gives_it():
    """Session 30's open point: a judge with linear or dynamic RoPE scaling (vicuna-7b-v1.5-16k: 4,096 positions,
    linear x 4) was cut at max_position_embeddings, a quarter of what it was trained for and of what a vLLM server
    of it allows: its longer answers were unscored. The context is now derived as vLLM derives max_model_len:
    linear and dynamic scaling multiply it; Llama 3.1 ("llama3"), YaRN and LongRoPE configs state it scaled already.
    `tests/test_vllm_backend.py` asks vLLM itself for the same configs."""
    from types import SimpleNamespace

    from transformers import LlamaConfig

    from radmetrics.judge.transformers_backend import TransformersJudge

    def context(config):
        judge = TransformersJudge("unused")
        judge._model = SimpleNamespace(config=config)
        return judge.context_tokens()

    cases = [
        (LlamaConfig(max_position_embeddings=4096, rope_scaling={"type": "linear", "factor": 4.0}), 16384),
        (LlamaConfig(max_position_embeddings=4096, rope_scaling={"rope_type": "dynamic", "factor": 2.0}), 8192),
        (LlamaConfig(max_position_embeddings=131072, rope_scaling={
            "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192}), 131072),
        (LlamaConfig(max_position_embeddings=32768, rope_scaling={
            "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192}), 32768),
        (LlamaConfig(max_position_embeddings=2048), 2048),
    ]
    for config, expected in cases:
        assert context(config) == expected, config.to_dict().get("rope_scaling")
    judge = TransformersJudge("unused")
    judge._model = SimpleNamespace(config=cases[0][0])  # a prompt with no room names where the number comes from
    assert judge._context() == (16384, "max_position_embeddings x its RoPE scaling factor of 4")
    # per layer type (transformers 5 nests them): the factor applies as for one
    nested = LlamaConfig(max_position_embeddings=1000)
    nested.rope_parameters = {"full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4},
                              "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}
    assert context(nested) == 2000


def test_a_config_stating_several_lengths_has_the_smallest_as_vllm_takes_it():
    """Review 37: the context was the first length the config named (max_position_embeddings before n_positions,
    max_seq_len), so a config with max_position_embeddings 4,096 and n_positions 1,024 let answers run to 4,096
    positions where a vLLM server of the same judge stops at 1,024 (vLLM 0.32's ModelConfig on these config files:
    1,024 / 2,048 / 2,048): the rows past 1,024 were scored. vLLM takes the smallest, then applies RoPE scaling."""
    from types import SimpleNamespace

    from transformers import LlamaConfig

    from radmetrics.judge.transformers_backend import TransformersJudge

    def context(extra, rope=None):
        config = LlamaConfig(max_position_embeddings=4096, rope_scaling=rope)
        for name, value in extra.items():
            setattr(config, name, value)
        judge = TransformersJudge("unused")
        judge._model = SimpleNamespace(config=config)
        return judge._context()

    assert context({"n_positions": 1024}) == (1024, "n_positions")
    assert context({"max_seq_len": 2048}) == (2048, "max_seq_len")
    assert context({"model_max_length": 2048}) == (2048, "model_max_length")
    assert context({"n_positions": 8192}) == (4096, "max_position_embeddings")
    assert context({"n_positions": 1024}, {"rope_type": "linear", "factor": 4.0}) == (
        4096, "n_positions x its RoPE scaling factor of 4")


def test_checking_cached_answers_against_the_context_makes_no_network_call(tmp_path):
    """The check of cached answers against the judge's context reads the judge's config and tokenizer from local
    files only: a fully cached run of a Hub judge whose files are not here, in a process without HF_HUB_OFFLINE,
    makes no connection (it made one, and retried for ~20 s offline) and serves its cached answers as before."""
    code = f"""
import json, socket
tried = []
def refuse(self, address):
    tried.append(str(address))
    raise OSError("blocked by the test")
socket.socket.connect = refuse
def no_lookup(host, *args, **kwargs):
    tried.append(str(host))
    raise OSError("blocked by the test")
socket.getaddrinfo = no_lookup
from radmetrics.judge import CachedJudge
from radmetrics.judge.cache import ResponseCache
from radmetrics.judge.transformers_backend import TransformersJudge
from radmetrics.types import GenerationConfig
judge = CachedJudge(TransformersJudge("radmetrics-tests/not-a-local-model"), ResponseCache({str(tmp_path / "c.sqlite")!r}))
config = GenerationConfig(max_new_tokens=64)
prompt = "Findings: " + "small effusion " * 300  # long enough to need the check
import sqlite3, time  # written as an older radmetrics did (no mark): the answer is checked against the context
with sqlite3.connect({str(tmp_path / "c.sqlite")!r}) as con:
    con.execute("INSERT INTO responses VALUES (?, ?, ?, ?, ?)",
                (judge.keys([prompt], config)[0], "transformers", judge.model, "cached answer", time.time()))
assert judge.cache.get_many_marked(judge.keys([prompt], config))[judge.keys([prompt], config)[0]][1] is False
print(json.dumps({{"answers": judge.generate([prompt], config, progress=False), "calls": judge.calls, "tried": tried}}))
"""
    env = {k: v for k, v in os.environ.items() if "OFFLINE" not in k}  # as a user runs it: online
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"answers": ["cached answer"], "calls": 0, "tried": []}
