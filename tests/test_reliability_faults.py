"""Faults of the second adversarial round, each provoked through the real CLI against a real local
OpenAI-compatible server (tests/openai_server.py): key leaks across every fault kind, Ctrl-C / SIGTERM,
unusable answers and the cache, corrupt caches, concurrent runs sharing one cache, exit codes, atomic
outputs, the total request deadline, wrong-schema bodies. Figures are recorded in RELIABILITY.md."""
from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import sqlite3
import string
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO
from fake_judge import analysis_for
from openai_server import FakeOpenAIServer

from radmetrics.judge.cache import ResponseCache

FAST = ["--judge-option", "backoff=0.01", "--judge-option", "max_backoff=0.05"]


def write_pairs(path: Path, n: int, tag: str = "", rotate: int = 0) -> list[dict]:
    rows = [{"id": i, "reference": f"finding {i}{tag} left effusion stable", "candidate": f"finding {i}{tag} right effusion"}
            for i in range(n)]
    rows = rows[rotate:] + rows[:rotate]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def cli_args(src, out, server_url, cache, *extra, concurrency=2):
    cache_args = ["--no-cache"] if cache is None else ["--cache", str(cache)]
    return [sys.executable, "-m", "radmetrics.cli", "score", "-m", "green", "-i", str(src), "-o", str(out),
            "--backend", "openai", "--base-url", server_url, "--judge", "judge-model", *cache_args,
            "--judge-option", f"concurrency={concurrency}", "--no-progress", *map(str, extra)]


def run(args, env=None, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, cwd=REPO, env=env or os.environ.copy(), **kwargs)


def prompts_of(server) -> list[str]:
    return [r["body"]["messages"][-1]["content"] for r in server.requests]


# -- secrets ---------------------------------------------------------------------------------------------------
def longest_fragment(secret: str, blobs: list[bytes]) -> int:
    """Length of the longest piece of SECRET found in any blob (0 when not even 4 characters match)."""
    best = 0
    for size in range(4, len(secret) + 1):
        pieces = {secret[i:i + size].encode() for i in range(len(secret) - size + 1)}
        if any(piece in blob for blob in blobs for piece in pieces):
            best = size
        else:
            break
    return best


def artifacts(tmp_path: Path, *texts: str) -> list[bytes]:
    files = [p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and not p.name.endswith(".jsonl.in")]
    return files + [t.encode() for t in texts]


FAULTS = ["400", "401", "429", "500", "garbage", "truncated", "empty", "schema", "blank", "nontext", "reset",
          "timeout", "huge", "trickle"]


@pytest.mark.parametrize("key_kind", ["text", "numeric"])
def test_planted_key_never_leaks_across_every_fault_kind(tmp_path, key_kind):
    rng = random.Random()
    if key_kind == "text":
        key = "sk-" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(32))
        key_args, env = [], {**os.environ, "OPENAI_API_KEY": key}
    else:  # --judge-option api_key=<digits> is read as JSON: an int (it used to crash redact)
        key = str(rng.randint(10**19, 10**20 - 1))
        key_args, env = ["--judge-option", f"api_key={key}"], {k: v for k, v in os.environ.items()
                                                                if k != "OPENAI_API_KEY"}
    src = tmp_path / "pairs.jsonl.in"
    write_pairs(src, 2 * len(FAULTS))

    def answer(prompt):  # a judge that repeats the key in its answer
        return analysis_for(prompt) + f"\n(request signed with {key})"

    with FakeOpenAIServer(answer, script=FAULTS * 2, echo_key=True) as server:
        out = run(cli_args(src, tmp_path / "out.jsonl", server.base_url, tmp_path / "cache.sqlite", *key_args,
                           "--judge-option", "max_retries=1", "--judge-option", "timeout=1", *FAST,
                           concurrency=1), env=env)
        wrong_texts = []
        if key_kind == "text":  # an option of the wrong type is an error that must not echo the value
            wrong = run(cli_args(src, tmp_path / "wrong.jsonl", server.base_url, None, "--judge-option",
                                 f'api_key=["{key}"]'), env=env)
            assert wrong.returncode == 2 and "Option 'api_key' of the openai backend must be" in wrong.stderr
            wrong_texts = [wrong.stdout, wrong.stderr]
    assert out.returncode == 0, out.stderr[-3000:]
    sent = [r["headers"].get("Authorization") for r in server.requests]
    assert sent and all(s == f"Bearer {key}" for s in sent)  # the server did get (and echo) the key
    rows = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    reasons = Counter((r["reason"] or "scored").split(" (")[0] for r in rows)
    assert any(r["parsed"] for r in rows) and not all(r["parsed"] for r in rows), reasons
    texts = [out.stdout, out.stderr, *wrong_texts]
    fragment = longest_fragment(key, artifacts(tmp_path, *texts))
    assert fragment < 8, f"{fragment} characters of the key leaked"
    (tmp_path / "outcome.json").write_text(json.dumps({"requests": len(server.requests), "fragment": fragment}))
    print(f"\n{key_kind} key, {len(FAULTS)} fault kinds x2, {len(server.requests)} requests: longest key fragment in "
          f"output, summary, cache, stdout, stderr: {fragment} characters; reasons {dict(reasons)}")


# -- Ctrl-C / SIGTERM ---------------------------------------------------------------------------------------------
def with_ctrl_c(args: list[str]) -> list[str]:
    """The CLI as `python -m radmetrics.cli` runs it, with Ctrl-C delivered as a terminal would: a shell starts
    background jobs (CI, this sandbox) with SIGINT ignored, and Python then leaves it ignored. (No preexec_fn:
    it is unsafe in a test process with server threads.)"""
    assert args[1:3] == ["-m", "radmetrics.cli"]
    code = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "sys.argv[0] = 'radmetrics'; from radmetrics.cli import main; main()")
    return [args[0], "-c", code, *args[3:]]


@pytest.mark.slow
@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_stops_fast_sends_nothing_new_and_caches_every_answer(tmp_path, signum, code):
    n, concurrency = 300, 8
    src, out, cache = tmp_path / "pairs.jsonl", tmp_path / "out.jsonl", tmp_path / "cache.sqlite"
    write_pairs(src, n)
    with FakeOpenAIServer(analysis_for, delay=0.4) as server:
        proc = subprocess.Popen(with_ctrl_c(cli_args(src, out, server.base_url, cache, concurrency=concurrency)),
                                cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while sum(r["t_done"] is not None for r in server.requests) < 3 * concurrency and time.time() < deadline:
            time.sleep(0.01)
        done_before = sum(r["t_done"] is not None for r in server.requests)
        sent_at = time.time()
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=30)
        took = time.time() - sent_at
        # Python runs a signal handler when the main thread next gets the interpreter: on a loaded machine a
        # worker may start one more request in that gap; after it, nothing new may start.
        late = [r for r in server.requests if r["t_start"] > sent_at + 0.25]
        gap = [r for r in server.requests if sent_at < r["t_start"] <= sent_at + 0.25]
        asked_before = len(server.requests)
        assert proc.returncode == code, (proc.returncode, stderr[-3000:])
        line = stderr.strip().splitlines()[-1]
        m = re.fullmatch(r"interrupted: (\d+) answered, (\d+) cached; rerun to resume", line)
        assert m, stderr[-3000:]
        answered, cached = int(m.group(1)), int(m.group(2))
        assert "Traceback" not in stderr
        assert took <= 2.0, f"took {took:.2f}s to exit"
        assert not late, f"{len(late)} requests started after the signal"
        assert answered == cached == len(ResponseCache(cache)) >= done_before
        assert not out.exists()
        rerun = run(cli_args(src, out, server.base_url, cache, concurrency=concurrency))
        assert rerun.returncode == 0, rerun.stderr[-3000:]
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == n and all(r["parsed"] for r in rows)
    asked = Counter(prompts_of(server))
    twice = sum(c - 1 for c in asked.values())
    assert len(asked) == n and twice <= concurrency  # only requests cancelled in flight are asked again
    (tmp_path / "outcome.json").write_text(json.dumps({"exit_s": took, "cached": cached, "asked_before": asked_before,
                                                       "twice": twice, "in_handler_gap": len(gap)}))
    print(f"\n{signal.Signals(signum).name}: exit {code} after {took:.2f}s; {asked_before} requests, {cached} answers "
          f"cached, {len(gap)} started before the handler ran, 0 after; rerun asked {len(server.requests) - asked_before}, {twice} twice")


# -- cache ---------------------------------------------------------------------------------------------------------
def test_only_usable_answers_are_cached_and_wrong_schema_is_retried(tmp_path):
    src, cache = tmp_path / "pairs.jsonl", tmp_path / "cache.sqlite"
    write_pairs(src, 5)
    with FakeOpenAIServer(analysis_for, script=["blank", "nontext", "huge", "schema", "truncated"]) as server:
        first = run(cli_args(src, tmp_path / "a.jsonl", server.base_url, cache, "--judge-option", "max_retries=0",
                             concurrency=1))
        assert first.returncode == 1, first.stderr[-3000:]  # every row failed because of the judge
        reasons = [json.loads(x)["reason"] for x in (tmp_path / "a.jsonl").read_text().splitlines()]
        assert reasons == [
            "judge call failed: gave up after 1 attempt: unusable response body (the answer is empty)",
            "judge call failed: gave up after 1 attempt: unusable response body (choices[0].message.content is int, "
            "not text)",
            "judge call failed: gave up after 1 attempt: unusable response body (the body is over 2000000 bytes)",
            "judge call failed: gave up after 1 attempt: unusable response body ('choices' is a str, not a list)",
            reasons[4]]
        assert reasons[4].startswith("judge call failed: gave up after 1 attempt: unusable response body (not JSON")
        assert len(ResponseCache(cache)) == 0  # none of it kept
        server.script = ["schema", "blank", "huge"]  # with retries the same faults are asked again in the run
        second = run(cli_args(src, tmp_path / "b.jsonl", server.base_url, cache, *FAST, concurrency=1))
        assert second.returncode == 0, second.stderr[-3000:]
    rows = [json.loads(x) for x in (tmp_path / "b.jsonl").read_text().splitlines()]
    assert all(r["parsed"] for r in rows) and len(server.requests) == 5 + 5 + 3
    assert len(ResponseCache(cache)) == 5


def test_retry_unscored_asks_again_for_cached_unreadable_answers(tmp_path):
    src, cache = tmp_path / "pairs.jsonl", tmp_path / "cache.sqlite"
    write_pairs(src, 6)
    state = {"readable": False}

    def answer(prompt):
        return analysis_for(prompt) if state["readable"] else "I am unable to compare these reports."

    with FakeOpenAIServer(answer) as server:
        first = run(cli_args(src, tmp_path / "a.jsonl", server.base_url, cache))
        assert first.returncode == 1 and "no row was scored: 6 of 6" in first.stderr, first.stderr[-3000:]
        assert len(ResponseCache(cache)) == 6  # readable text, not a call failure: cached
        state["readable"] = True
        again = run(cli_args(src, tmp_path / "b.jsonl", server.base_url, cache))
        assert again.returncode == 1 and len(server.requests) == 6  # cached answers come back as they were
        retried = run(cli_args(src, tmp_path / "c.jsonl", server.base_url, cache, "--retry-unscored"))
        assert retried.returncode == 0 and len(server.requests) == 12, retried.stderr[-3000:]
        last = run(cli_args(src, tmp_path / "d.jsonl", server.base_url, cache))
        assert last.returncode == 0 and len(server.requests) == 12
    assert all(json.loads(x)["parsed"] for x in (tmp_path / "d.jsonl").read_text().splitlines())


def _truncated_cache(path: Path) -> Path:
    cache = ResponseCache(path)
    cache.put_many([(f"k{i}", "openai", "m", "answer " * 200) for i in range(300)])
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    return path


@pytest.mark.parametrize("kind", ["folder", "garbage", "truncated"])
def test_corrupt_cache_is_a_one_line_error_naming_file_and_remedy(tmp_path, kind):
    src, cache = tmp_path / "pairs.jsonl", tmp_path / "cache.sqlite"
    write_pairs(src, 3)
    if kind == "folder":
        cache.mkdir()
    elif kind == "garbage":
        cache.write_bytes(b"this is not a database, just bytes " * 100)
    else:
        _truncated_cache(cache)
    with FakeOpenAIServer(analysis_for) as server:  # a live judge: the cache is what fails
        out = run(cli_args(src, tmp_path / "o.jsonl", server.base_url, cache))
    assert out.returncode == 2, out.stderr[-3000:]
    assert not server.requests
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) <= 2, out.stderr
    line = out.stderr.strip().splitlines()[-1]
    assert f"cache file {cache} cannot be used" in line and "--no-cache" in line and "delete the file" in line


def test_four_concurrent_runs_on_overlapping_prompts_ask_each_once(tmp_path):
    n = 300
    cache = tmp_path / "cache.sqlite"
    srcs = []
    for k in range(4):  # the same 300 pairs, each run starting at a different place
        srcs.append(tmp_path / f"run{k}.jsonl")
        write_pairs(srcs[-1], n, rotate=75 * k)
    with FakeOpenAIServer(analysis_for, delay=0.05) as server:
        started = time.time()
        procs = [subprocess.Popen(cli_args(src, tmp_path / f"out{k}.jsonl", server.base_url, cache, concurrency=4),
                                  cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for k, src in enumerate(srcs)]
        errors = [p.communicate(timeout=600)[1] for p in procs]
        took = time.time() - started
    assert [p.returncode for p in procs] == [0, 0, 0, 0], [e[-2000:] for e in errors]
    for k in range(4):
        rows = [json.loads(x) for x in (tmp_path / f"out{k}.jsonl").read_text().splitlines()]
        assert len(rows) == n and all(r["parsed"] for r in rows)
    asked = len(server.requests)
    assert asked <= 330, asked
    assert ResponseCache(cache).integrity_ok() and len(ResponseCache(cache)) == n
    (tmp_path / "outcome.json").write_text(json.dumps({"requests": asked, "seconds": took}))
    print(f"\n4 concurrent runs x {n} overlapping prompts: {asked} requests ({len(set(prompts_of(server)))} distinct) "
          f"in {took:.1f}s")


@pytest.mark.slow
def test_stale_leases_expire_and_dead_local_owners_hold_nothing(tmp_path, monkeypatch):
    src, cache = tmp_path / "pairs.jsonl", tmp_path / "cache.sqlite"
    write_pairs(src, 6)
    with FakeOpenAIServer(analysis_for) as probe:  # learn the prompts' cache keys from one uncached run
        run(cli_args(src, tmp_path / "probe.jsonl", probe.base_url, cache))
        port = probe.httpd.server_address[1]  # the same server address, so the same cache keys
    keys = [k for (k,) in sqlite3.connect(cache).execute("SELECT key FROM responses")]
    con = sqlite3.connect(cache)
    con.execute("DELETE FROM responses")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    now = time.time()
    con.executemany("INSERT INTO claims VALUES (?, ?, ?)",
                    [(k, "another-host:1:run", now + 15) for k in keys[:3]]  # alive elsewhere, lease ends in 15 s
                    + [(k, f"{socket.gethostname()}:{dead.stdout.strip()}:run", now + 3600) for k in keys[3:]])
    con.commit()
    con.close()
    with FakeOpenAIServer(analysis_for, port=port) as server:
        out = run(cli_args(src, tmp_path / "o.jsonl", server.base_url, cache))
        assert out.returncode == 0, out.stderr[-3000:]
        starts = [r["t_start"] for r in server.requests]
    assert len(starts) == 6
    assert sum(t < now + 15 for t in starts) == 3  # the dead process's claims were taken at once
    assert sum(t >= now + 15 for t in starts) == 3  # waited for the live lease to expire, then asked
    assert max(starts) < now + 30


# -- exit codes ----------------------------------------------------------------------------------------------------
def test_exit_code_when_the_judge_fails_every_row_or_more_than_max_failures(tmp_path):
    src = tmp_path / "pairs.jsonl"
    write_pairs(src, 4)
    with FakeOpenAIServer(analysis_for, script=["500"] * 8) as broken:  # reachable, but every request fails
        dead = run(cli_args(src, tmp_path / "dead.jsonl", broken.base_url, None, "--judge-option", "max_retries=1",
                            *FAST))
    assert dead.returncode == 1, dead.stderr[-3000:]
    line = dead.stderr.strip().splitlines()[-1]
    assert line.startswith("Error: no row was scored: 4 of 4 judged rows failed because of the judge (4 × judge "
                           "call failed: gave up after 2 attempts: HTTP 500)"), line
    assert line.endswith("Results were written; rerun to ask again the 4 rows whose judge call failed."), line
    assert len((tmp_path / "dead.jsonl").read_text().splitlines()) == 4  # results are still written
    # answers in the wrong format: cached, so a plain rerun asks nothing; the advice says so (review finding)
    cache = tmp_path / "c.sqlite"
    with FakeOpenAIServer(lambda prompt: "I cannot assess these reports.") as chatty:
        first = run(cli_args(src, tmp_path / "u.jsonl", chatty.base_url, cache))
        again = run(cli_args(src, tmp_path / "u.jsonl", chatty.base_url, cache))
        asked_again = len(chatty.requests) - 4
    for out in (first, again):
        assert out.returncode == 1 and out.stderr.strip().splitlines()[-1].endswith(
            "Results were written; 4 answers could not be read and are cached (a plain rerun gives the same): check "
            "the judge and the answer format it was trained for; --retry-unscored asks them again."), out.stderr[-2000:]
    assert asked_again == 0
    with FakeOpenAIServer(analysis_for) as server:
        server.script = ["401"]
        strict = run(cli_args(src, tmp_path / "s.jsonl", server.base_url, None, "--max-failures", "0.2",
                              concurrency=1))
        assert strict.returncode == 1 and "1 of 4 judged rows (25%) failed because of the judge, over " \
            "--max-failures 0.2" in strict.stderr, strict.stderr[-3000:]
        server.script = ["401"]
        lenient = run(cli_args(src, tmp_path / "l.jsonl", server.base_url, None, "--max-failures", "0.5",
                               concurrency=1))
        assert lenient.returncode == 0, lenient.stderr[-3000:]
        # under the threshold the run succeeds, but says what the mean leaves out
        assert "Warning: 1 of 4 judged rows (25%) are unscored because of the judge (1 × judge call failed" \
            in lenient.stderr and "the scores cover the other 3" in lenient.stderr, lenient.stderr[-3000:]
        bad_input = tmp_path / "empty_refs.jsonl"
        bad_input.write_text(json.dumps({"reference": "", "candidate": "x"}) + "\n")
        assert run(cli_args(bad_input, tmp_path / "e.jsonl", server.base_url, None)).returncode == 0


# -- atomic outputs ------------------------------------------------------------------------------------------------
def test_outputs_are_atomic_paired_by_run_id_and_never_written_through_links(tmp_path):
    src = tmp_path / "pairs.jsonl"
    write_pairs(src, 3)
    out = tmp_path / "out.jsonl"
    stale = tmp_path / ".out.jsonl.999999999.abc123.tmp"  # left by a killed run (no such process)
    stale.write_text("half")
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me")
    with FakeOpenAIServer(analysis_for) as server:
        done = run(cli_args(src, out, server.base_url, None))
        assert done.returncode == 0, done.stderr[-3000:]
        assert not stale.exists() and not list(tmp_path.glob(".*.tmp"))
        rows = [json.loads(x) for x in out.read_text().splitlines()]
        summary = json.loads((tmp_path / "out.jsonl.summary.json").read_text())
        assert {r["run_id"] for r in rows} == {summary["run_id"]} and len(summary["run_id"]) == 32

        link = tmp_path / "other.jsonl.summary.json"
        link.symlink_to(victim)
        planted = run(cli_args(src, tmp_path / "other.jsonl", server.base_url, None))
        assert planted.returncode == 2 and "is a symbolic link" in planted.stderr, planted.stderr[-3000:]
        assert victim.read_text() == "keep me" and not (tmp_path / "other.jsonl").exists()

        before = src.read_bytes()
        same = run(cli_args(src, src, server.base_url, None))
        assert same.returncode == 2 and "would overwrite the input" in same.stderr
        assert src.read_bytes() == before
        # review 11: an input named like a file the run writes beside OUTPUT (an interrupted run's part file fed
        # back in) was emptied and deleted, with exit 0
        for side in ("q.jsonl.part", "q.jsonl.part.json", "q.jsonl.summary.json"):
            kept = tmp_path / side
            kept.write_bytes(before)
            refused = run(cli_args(kept, tmp_path / "q.jsonl", server.base_url, None))
            assert refused.returncode == 2 and f"would overwrite the input {kept}" in refused.stderr, side
            assert kept.read_bytes() == before and not (tmp_path / "q.jsonl").exists()
        asked = len(server.requests)
    assert asked == 3  # the refused runs asked nothing



def paused_at_rename(args: list[str], pause_when: str, marker: Path) -> list[str]:
    """The CLI (as `with_ctrl_c` runs it) with os.rename / os.replace patched to stop, the first time
    `pause_when` (a Python expression of `src` and `dst`, the paths as text) holds, for two minutes before
    renaming, after creating MARKER: a signal sent once MARKER exists lands at exactly that point of the write.
    (Racing a poll against the write lost on a loaded CI machine: the files were in place before it looked.)"""
    patch = ("import os, time, pathlib\n"
             "def _pausing(rename):\n"
             "    def pausing(src, dst, *a, **k):\n"
             "        src, dst_ = os.fspath(src), os.fspath(dst)\n"
             f"        if not pathlib.Path({str(marker)!r}).exists() and (lambda src, dst: {pause_when})(src, dst_):\n"
             f"            pathlib.Path({str(marker)!r}).touch(); time.sleep(120)\n"
             "        return rename(src, dst, *a, **k)\n"
             "    return pausing\n"
             "os.rename, os.replace = _pausing(os.rename), _pausing(os.replace)\n")
    ctrl_c = with_ctrl_c(args)
    return [ctrl_c[0], "-c", patch + ctrl_c[2], *ctrl_c[3:]]


def signal_at_pause(args: list[str], pause_when: str, marker: Path, signum) -> subprocess.CompletedProcess:
    """Run ARGS paused as `paused_at_rename` says and send SIGNUM there; fails if it never gets there."""
    proc = subprocess.Popen(paused_at_rename(args, pause_when, marker), cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while proc.poll() is None and not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    reached = marker.exists()
    proc.send_signal(signum if reached else signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=60)
    assert reached, f"never reached the rename ({pause_when}): rc {proc.returncode}\n{stderr[-3000:]}"
    return subprocess.CompletedProcess(args, proc.returncode, stdout, stderr)


def compare_args(tmp_path: Path, server_url: str, out: Path) -> list[str]:
    return [sys.executable, "-m", "radmetrics.cli", "compare", "-s", f"A={tmp_path / 'a.jsonl'}", "-s",
            f"B={tmp_path / 'b.jsonl'}", "-m", "green", "--backend", "openai", "--base-url", server_url,
            "--judge", "judge-model", "--cache", str(tmp_path / "cache.sqlite"), "-o", str(out)]


#: where in ReportWriter.finish the run is stopped: every file staged, nothing in the folder yet; or results.json
#: already says "being written" and the staged files are being moved in
REPORT_WRITE_POINTS = {"staged": "dst.endswith('results.json')",
                       "moving": "'.radmetrics-report-staging.' in src and not src.endswith('results.json')"}


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGINT])
@pytest.mark.parametrize("point", sorted(REPORT_WRITE_POINTS))
def test_a_report_interrupted_while_it_is_written_leaves_no_half_file_and_the_rerun_replaces_it(tmp_path, point,
                                                                                                 signum):
    """Review 28: `compare` (and meta-eval, preference-eval, rexamine) wrote its report's files in place, results.json
    last: a kill or Ctrl-C while writing left a truncated per_row.csv (0 bytes) and no results.json, and the same
    command then refused the folder ("holds per_row.csv, which no radmetrics compare report there wrote"), after
    Ctrl-C had said "rerun to resume". Now the files are staged and moved in, results.json first marked as being
    written and replaced last: stopped before the moves, nothing is in view; during them, results.json says the
    report is half-written and the rerun replaces it."""
    from radmetrics.meta.report_folder import INCOMPLETE, REPORT_KEY, is_output

    rows = write_pairs(tmp_path / "a.jsonl", 40)
    (tmp_path / "b.jsonl").write_text("".join(json.dumps({"id": r["id"], "candidate": r["candidate"] + " b"}) + "\n"
                                              for r in rows))
    out = tmp_path / "report"
    with FakeOpenAIServer(analysis_for) as server:
        whole = run(compare_args(tmp_path, server.base_url, tmp_path / "whole"))  # judges and caches every row
        assert whole.returncode == 0, whole.stderr[-3000:]
        asked = len(server.requests)
        stopped = signal_at_pause(compare_args(tmp_path, server.base_url, out), REPORT_WRITE_POINTS[point],
                                  tmp_path / "paused", signum)
        assert stopped.returncode == (130 if signum == signal.SIGINT else -9), stopped.stderr[-3000:]
        if signum == signal.SIGINT:
            assert "Traceback" not in stopped.stderr and stopped.stderr.strip().splitlines()[-1].startswith(
                "interrupted:"), stopped.stderr[-3000:]
        in_view = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
        if point == "staged":
            assert not in_view  # nothing half-written in view
        else:
            assert "results.json" in in_view and all(is_output("compare", name) for name in in_view), in_view
            record = json.loads((out / "results.json").read_text())[REPORT_KEY]
            assert INCOMPLETE in record and "run the same radmetrics compare command again" in record[INCOMPLETE]
            assert not [name for name in in_view if name != "results.json"
                        and (out / name).read_bytes() != (tmp_path / "whole" / name).read_bytes()]  # each whole
        again = run(compare_args(tmp_path, server.base_url, out))
        assert again.returncode == 0, again.stderr[-3000:]
        if point == "moving":
            assert "holds a report a run was stopped while writing; this run replaces it" in again.stderr
        assert len(server.requests) == asked  # every answer came from the cache
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in (tmp_path / "whole").iterdir())
    for name in ("per_row.csv", "results.json"):
        assert (out / name).read_text() == (tmp_path / "whole" / name).read_text(), name


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGINT])
@pytest.mark.parametrize("command", ["convert", "transform"])
def test_a_dataset_interrupted_while_it_is_written_is_written_whole_by_the_rerun(tmp_path, command, signum):
    """Review 28: `data convert` / `data transform` saved the dataset into -o in place: a kill during save_to_disk
    left half a shard (or a dataset without its card) that loaded or looked like a dataset, and the same command was
    refused ("--output ... is not empty"). Now it is written beside -o and renamed into place."""
    import datasets

    out = tmp_path / "ds"
    if command == "convert":
        args = [sys.executable, "-m", "radmetrics.cli", "data", "convert", "rexval", str(FIXTURES / "rexval"),
                "-o", str(out)]
        server = None
    else:
        src = tmp_path / "reports.jsonl"
        src.write_text("".join(json.dumps({"id": i, "report": f"finding {i}: small left effusion."}) + "\n"
                               for i in range(30)))
        server = FakeOpenAIServer(analysis_for).__enter__()
        args = [sys.executable, "-m", "radmetrics.cli", "data", "transform", "standardize", "-i", str(src),
                "--column", "report", "--backend", "openai", "--base-url", server.base_url, "--judge", "judge-model",
                "--cache", str(tmp_path / "cache.sqlite"), "-o", str(out)]
        first = run([*args[:-1], str(tmp_path / "whole")])  # judges and caches every row
        assert first.returncode == 0, first.stderr[-3000:]
        asked = len(server.requests)
    try:
        # stopped with the dataset (and its card) saved beside -o, just before the rename that puts it in place
        stopped = signal_at_pause(args, "src.endswith('.staging')", tmp_path / "paused", signum)
        assert stopped.returncode == (130 if signum == signal.SIGINT else -9), stopped.stderr[-3000:]
        assert not out.exists() or not any(out.iterdir()), sorted(p.name for p in out.iterdir())
        again = run(args)
        assert again.returncode == 0, again.stderr[-3000:]
        if server is not None:
            assert len(server.requests) == asked  # every answer came from the cache
    finally:
        if server is not None:
            server.__exit__(None, None, None)
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".ds.")]  # no staging folder left
    assert len(datasets.load_from_disk(str(out))) == (20 if command == "convert" else 30)
    if command == "convert":
        assert (out / "README.md").is_file()


def test_overwrite_replaces_an_earlier_dataset_whole_in_one_step(tmp_path):
    """`data convert ... --overwrite` over a folder holding an earlier dataset moved the new files in one by one: the
    earlier dataset's shards the new one does not name stayed beside it, and a kill between two renames left a
    state.json naming shards not yet there. Now the staged folder and the old one are exchanged in one atomic step
    (renameat2), and the old one is removed; a folder that also holds the user's own files keeps them."""
    import datasets

    out, fresh = tmp_path / "ds", tmp_path / "fresh"
    datasets.Dataset.from_dict({"x": list(range(40))}).save_to_disk(str(out), num_shards=2)
    (out / "README.md").write_text("# an earlier dataset\n")
    args = [sys.executable, "-m", "radmetrics.cli", "data", "convert", "rexval", str(FIXTURES / "rexval")]
    assert run([*args, "-o", str(fresh)]).returncode == 0
    refused = run([*args, "-o", str(out)])
    assert refused.returncode == 2 and "--overwrite" in refused.stderr
    replaced = run([*args, "-o", str(out), "--overwrite"])
    assert replaced.returncode == 0, replaced.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in fresh.iterdir())  # no old shard left
    assert len(datasets.load_from_disk(str(out))) == 20
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".ds.")]  # the old dataset is gone

    (out / "notes.txt").write_text("mine\n")  # not a dataset's file: replaced file by file, the rest kept
    assert run([*args, "-o", str(out), "--overwrite"]).returncode == 0
    assert (out / "notes.txt").read_text() == "mine\n" and len(datasets.load_from_disk(str(out))) == 20


def test_the_staged_dataset_becomes_the_output_folder_itself(tmp_path):
    """The exchange swaps whole folders: the folder written in is the one left at OUTPUT (same inode), so no reader
    ever saw a mix of the two datasets' files."""
    from radmetrics.io import staged_folder

    out = tmp_path / "ds"
    out.mkdir()
    (out / "state.json").write_text("{}")
    (out / "data-00000-of-00001.arrow").write_text("old")
    with staged_folder(out) as staging:
        (staging / "state.json").write_text('{"new": 1}')
        written_in = staging.stat().st_ino
    assert out.stat().st_ino == written_in and [p.name for p in out.iterdir()] == ["state.json"]
    assert not [p for p in tmp_path.iterdir() if p.name != "ds"]


def test_an_output_over_the_response_cache_or_the_input_is_refused_before_any_work(tmp_path):
    """Review 18 (3): `-o X --cache X` (or $RADMETRICS_CACHE=X) judged every row, then renamed the results over the
    cache: every judgment of every earlier run gone, "an earlier run's results" said of it. And reward-check wrote
    its report over its input. Both stop now, in seconds, with one line naming what would be lost."""
    src = tmp_path / "pairs.jsonl"
    write_pairs(src, 3)
    cache = tmp_path / "cache.jsonl"  # a cache whose name looks like an output
    with FakeOpenAIServer(analysis_for) as server:
        assert run(cli_args(src, tmp_path / "first.jsonl", server.base_url, cache)).returncode == 0
        held = cache.read_bytes()
        asked = len(server.requests)
        refused = [run(cli_args(src, cache, server.base_url, cache)),
                   run(cli_args(src, tmp_path / "cache.jsonl-wal", server.base_url, cache)),
                   run([arg for arg in cli_args(src, cache, server.base_url, None) if arg != "--no-cache"],
                       env={**os.environ, "RADMETRICS_CACHE": str(cache)})]  # no cache flag: the default cache
        for r in refused:
            assert r.returncode == 2 and "would overwrite the response cache" in r.stderr, r.stderr[-2000:]
            assert "Traceback" not in r.stderr
        assert len(server.requests) == asked and cache.read_bytes() == held
        rows = [json.dumps({"prompt": "A", "reference": "Normal chest.", "completion": "Normal chest."})] * 2
        completions = tmp_path / "completions.jsonl"
        completions.write_text("\n".join(rows) + "\n")
        over_input = run([sys.executable, "-m", "radmetrics.cli", "reward-check", "-m", "green", "-i", completions,
                          "--completions", "--backend", "openai", "--base-url", server.base_url, "--judge", "m",
                          "--no-cache", "-o", completions])
        assert over_input.returncode == 2 and f"would overwrite the input {completions}" in over_input.stderr
        assert completions.read_text() == "\n".join(rows) + "\n" and len(server.requests) == asked



def test_a_cache_that_names_the_input_is_refused_without_advice_to_delete_it(tmp_path):
    """Review 33: `--cache pairs.jsonl` with `-i pairs.jsonl` (a slip between two file arguments) said "cache file
    pairs.jsonl cannot be used (not an SQLite file): run with --no-cache, or delete the file": advice to delete the
    input. Now the run stops before any work with one line saying the cache needs a file of its own."""
    src = tmp_path / "pairs.jsonl"
    write_pairs(src, 3)
    held = src.read_bytes()
    with FakeOpenAIServer(analysis_for) as server:
        r = run(cli_args(src, tmp_path / "out.jsonl", server.base_url, src))
        assert not server.requests
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    line = r.stderr.strip().splitlines()[-1]
    assert f"--cache {src} is the input" in line and "delete" not in line, line
    assert src.read_bytes() == held


# -- requests ------------------------------------------------------------------------------------------------------
def test_total_deadline_bounds_a_trickling_server(tmp_path):
    src = tmp_path / "pairs.jsonl"
    write_pairs(src, 2)
    with FakeOpenAIServer(analysis_for, script=["trickle", "trickle"]) as server:
        out = run(cli_args(src, tmp_path / "o.jsonl", server.base_url, None, "--judge-option", "timeout=1",
                           "--judge-option", "max_retries=0", concurrency=2))
        time.sleep(0.5)  # the server notices the client left on its next byte
        held = [r["t_done"] - r["t_start"] for r in server.requests if r["t_done"]]
    assert out.returncode == 1, out.stderr[-3000:]
    reasons = {json.loads(x)["reason"] for x in (tmp_path / "o.jsonl").read_text().splitlines()}
    assert reasons == {"judge call failed: gave up after 1 attempt: no complete answer within the 1s request "
                       "deadline"}
    assert len(held) == 2 and max(held) < 2.0, held
    (tmp_path / "outcome.json").write_text(json.dumps({"held": held}))
    print(f"\ntrickling server, timeout=1: requests held {max(held):.2f}s at most")


def test_a_stalled_server_is_announced_on_stderr_then_rows_fail_with_the_reason(tmp_path):
    # A server that takes the connection and the request and never answers: the user hears about it within
    # notice_after seconds (30 by default; 0.3 here), not after every attempt has timed out.
    src = tmp_path / "pairs.jsonl"
    write_pairs(src, 2)
    with FakeOpenAIServer(analysis_for, script=["stall", "stall"]) as server:
        started = time.monotonic()
        out = run(cli_args(src, tmp_path / "o.jsonl", server.base_url, None, "--judge-option", "timeout=1.5",
                           "--judge-option", "max_retries=0", "--judge-option", "notice_after=0.3", concurrency=2))
        took = time.monotonic() - started
    assert out.returncode == 1, out.stderr[-3000:]
    lines = out.stderr.splitlines()
    notices = [k for k, line in enumerate(lines) if line.startswith(f"no answer yet from {server.base_url} after ")]
    assert notices, out.stderr[-3000:]
    assert lines[notices[0]].endswith("(2 requests in flight; timeout 1.5 s per request, 0 retries: a row fails after "
                                      "about 1.5 s): the server is slow or stuck; --judge-option timeout=SECONDS "
                                      "(and max_retries=N) to fail sooner"), lines[notices[0]]
    assert len(notices) <= 3 and lines[-1].startswith("Error: no row was scored: 2 of 2"), out.stderr[-3000:]
    reasons = {json.loads(x)["reason"] for x in (tmp_path / "o.jsonl").read_text().splitlines()}
    assert reasons == {"judge call failed: gave up after 1 attempt: no complete answer within the 1.5s request "
                       "deadline"}
    print(f"\nstalled server, timeout=1.5, notice_after=0.3: {len(notices)} notices, run ended after {took:.1f}s")


@pytest.mark.parametrize("retries,cached", [("slow", True), ("fast", True), ("fast", False)])
def test_a_server_that_goes_down_mid_run_stops_the_run_and_the_rerun_resumes(tmp_path, retries, cached):
    """Review finding: a server killed mid-run was announced as "slow or stuck" (a row fails after about 13
    min), and every remaining row went through its 6 attempts: ~50 min of failures for 200 rows. Refused
    connections are now named as such, and the run stops, keeping every answer, after `unreachable_after`
    seconds of them with nothing heard ("slow": retries that outlast it), or once as many rows as run at once
    have had every attempt refused ("fast": short backoffs fail rows sooner); the same command resumes. With
    --no-cache the message does not point at a cache (review 10, F24): rows already written are what is kept."""
    n = 40
    src, out = tmp_path / "pairs.jsonl", tmp_path / "out.jsonl"
    cache = tmp_path / "cache.sqlite" if cached else None
    write_pairs(src, n)
    slow = ["--judge-option", "max_retries=50", "--judge-option", "backoff=0.2", "--judge-option", "max_backoff=0.2",
            "--judge-option", "notice_after=0.5"]
    options = ["--chunk-rows", "10", "--judge-option", "unreachable_after=2", *(slow if retries == "slow" else FAST)]
    server = FakeOpenAIServer(analysis_for, delay=0.05).__enter__()
    port = server.httpd.server_address[1]
    args = cli_args(src, out, server.base_url, cache, *options, concurrency=2)
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while sum(r["t_done"] is not None for r in server.requests) < 15 and time.time() < deadline:
        time.sleep(0.01)
    server.__exit__(None, None, None)  # the server dies: nothing listens on the port any more
    down_at = time.monotonic()
    _, stderr = proc.communicate(timeout=60)
    took = time.monotonic() - down_at
    answered = sum(r["t_done"] is not None for r in server.requests)
    assert proc.returncode == 2, stderr[-3000:]
    if retries == "slow":  # the notice while it waits: down, not slow
        assert re.search(re.escape(f"{server.base_url} has refused connections for ") + r"[^(]+ \(2 requests in "
                         r"flight(, \d+ queued)?\): is the server running\? The run stops if it still does after 2 s, "
                         r"keeping the answers received\.", stderr), \
            stderr[-3000:]
    assert "slow or stuck" not in stderr and "Traceback" not in stderr
    # stopped by the seconds ("slow") or by rows that failed every attempt first ("fast")
    how = "for " if retries == "slow" else "to 2 rows through every retry"
    assert stderr.strip().splitlines()[-1].startswith(f"Error: the judge server at {server.base_url} has refused "
                                                      f"connections {how}"), stderr[-3000:]
    # 2 s of refusals, then the interrupt path (in-flight grace) and the interpreter's exit; loaded CI is slower
    assert took < 12, f"stopped {took:.1f} s after the server went down (before: each row ~30 s of retries)"
    last = stderr.strip().splitlines()[-1]
    if cached:
        assert len(ResponseCache(cache)) == answered  # every answer received is kept
        assert last.endswith("the answers received are in the response cache. Start it again and run again: "
                             "cached answers are not asked again"), last
    else:
        assert "response cache" not in last.replace("no response cache is in use", "") and last.endswith(
            "no response cache is in use (--no-cache), so only rows already written are kept. Start it again and "
            "run again"), last
    written = len(list(out.parent.glob(out.name + "*")))  # the part file of rows written so far
    with FakeOpenAIServer(analysis_for, port=port) as again:  # back on the same address
        rerun = run(args)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == n and all(r["parsed"] for r in rows)
    if cached:
        assert len(again.requests) == n - answered  # only what had no answer
    else:  # the rows the stopped run had written are not asked again
        assert written and len(again.requests) < n
    print(f"\nserver down after {answered} answers: run stopped after {took:.1f}s (unreachable_after=2); "
          f"rerun asked {len(again.requests)}")


@pytest.mark.parametrize("chunk_rows", [1, 2])
def test_a_server_down_stops_the_run_also_when_each_call_has_no_more_rows_than_run_at_once(tmp_path, chunk_rows):
    """Review 30a: the stop was checked only while a call still had rows waiting, and its count of refused rows
    started again at each call, so calls of at most `concurrency` rows (--chunk-rows 2 here; `--engine ray` with a
    small chunk per actor; a GRPO reward batch) never stopped: every later row failed after its retries and the run
    exited 0 with them unscored. The refused rows now count across calls, and a call that ends on them stops."""
    n = 30
    src, out = tmp_path / "pairs.jsonl", tmp_path / "out.jsonl"
    write_pairs(src, n)
    server = FakeOpenAIServer(analysis_for, delay=0.05).__enter__()
    port = server.httpd.server_address[1]
    args = cli_args(src, out, server.base_url, tmp_path / "cache.sqlite", "--chunk-rows", chunk_rows,
                    "--judge-option", "unreachable_after=30", "--judge-option", "max_retries=1", *FAST, concurrency=2)
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while sum(r["t_done"] is not None for r in server.requests) < 6 and time.time() < deadline:
        time.sleep(0.01)
    server.__exit__(None, None, None)  # nothing listens on the port any more
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 2, stderr[-3000:]
    # stopped by the rows that failed every attempt (a fraction of a second, which said "for 0.0012 s")
    assert re.match(rf"Error: the judge server at {re.escape(server.base_url)} has refused connections to \d+ rows "
                    "through every retry: it is down", stderr.strip().splitlines()[-1]), stderr[-3000:]
    with FakeOpenAIServer(analysis_for, port=port):  # back on the same address: the same command finishes
        rerun = run(args)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == list(range(n)) and all(r["parsed"] for r in rows)


# -- model files -----------------------------------------------------------------------------------------------------
class _Payload:
    """Unpickling this runs code (writes a file): what a hostile head file on the Hub would carry."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (Path(self.marker), "code ran"))


def test_er2score_head_file_is_never_unpickled_as_code(tmp_path):
    import torch

    from radmetrics.er2score.model import CONFIG_FILE, HEAD_FILE, MultiRewardModel
    from radmetrics.errors import RadmetricsError

    marker = tmp_path / "pwned.txt"
    (tmp_path / CONFIG_FILE).write_text(json.dumps({"criteria": ["a"], "base_model": "never-loaded"}))
    torch.save({"weight": _Payload(str(marker))}, tmp_path / HEAD_FILE)
    with pytest.raises(RadmetricsError, match="is not plain tensors: refused to unpickle it"):
        MultiRewardModel.load(tmp_path)
    assert not marker.exists()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_between_caching_and_counting_waits_for_both(tmp_path, monkeypatch, signum, fake_judge):
    """The interrupt lands in the main thread right after the cache's commit, before the tally's update (seen in
    CI under load: "31 answered, 31 cached" over a cache of 32): it takes effect once both are done."""
    from radmetrics import judge as judge_module
    from radmetrics.cli.exit_status import Terminated, raise_terminated
    from radmetrics.judge.cache import ResponseCache

    import radmetrics

    monkeypatch.setattr(judge_module, "run_tally", {"answered": 0, "cached": 0})
    # the handlers a CLI run has (a background job, CI's, starts with SIGINT ignored: Python then keeps it so)
    previous = signal.signal(signal.SIGTERM, raise_terminated), signal.signal(signal.SIGINT, signal.default_int_handler)
    real_put_many = ResponseCache.put_many

    def put_many_then_signal(self, rows, **kwargs):
        real_put_many(self, rows, **kwargs)
        os.kill(os.getpid(), signum)  # the handler would run at the next bytecode, before the tally's update
        time.sleep(0.05)

    monkeypatch.setattr(ResponseCache, "put_many", put_many_then_signal)
    cache = tmp_path / "cache.sqlite"
    judge = radmetrics.get_judge("fake", cache=str(cache))
    try:
        with pytest.raises(Terminated if signum == signal.SIGTERM else KeyboardInterrupt):
            judge.generate(["p1", "p2", "p3"], radmetrics.GenerationConfig(), progress=False)
    finally:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])
    tally = judge_module.run_tally
    assert tally["answered"] == tally["cached"] == len(ResponseCache(cache)) == 1


def test_failure_lines_cut_long_reasons_at_a_word_and_count_the_reasons_left_out():
    from radmetrics.cli.exit_status import FailureTally
    from radmetrics.types import Judgment

    tally = FailureTally()
    long = "judge call failed: " + "word " * 60 + "end"
    for reason, n in [(long, 5), ("b", 3), ("c", 2), ("d", 1), ("e", 1), ("input line 9: candidate is missing", 1)]:
        for _ in range(n):
            tally.add(Judgment.unscored(reason))
    line = tally.message(None)
    assert line.startswith("no row was scored: 12 of 12 judged rows failed because of the judge (5 × judge call "
                           "failed: word word"), line
    assert "word…; 3 × b; 2 × c; 2 more with 2 other reasons)" in line and "end" not in line
    assert tally.input_warning().startswith("1 input row could not be judged")


def test_a_continued_run_asks_again_the_rows_whose_judge_calls_failed(tmp_path):
    """Review finding: the server went down mid-run (rows failed with "judge call failed"), the user pressed
    Ctrl-C, restarted the server and reran as told ("rerun to resume"): the failed rows were read back from the
    part file as final, 20% unscored. A continued run now first asks them again (nothing was cached for them),
    so its output equals an uninterrupted run against a working judge; answered rows are not asked again."""
    n = 12
    src, out, cache = tmp_path / "pairs.jsonl", tmp_path / "out.jsonl", tmp_path / "cache.sqlite"
    rows = write_pairs(src, n)
    # rows 0-3 answered, 4-7 refused (a 400 is not retried: the calls fail at once), row 8 stalls: interrupted
    with FakeOpenAIServer(analysis_for, script=["ok"] * 4 + ["400"] * 4 + ["stall"]) as server:
        args = cli_args(src, out, server.base_url, cache, "--chunk-rows", "4", concurrency=1)
        proc = subprocess.Popen(with_ctrl_c(args), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        deadline = time.time() + 120
        while len(server.requests) < 9 and time.time() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 130, stderr[-3000:]
        part = [json.loads(x) for x in (tmp_path / "out.jsonl.part").read_text().splitlines()]
        assert [r["parsed"] for r in part] == [True] * 4 + [False] * 4
        assert all(r["reason"].startswith("judge call failed: ") for r in part[4:])
        first = len(server.requests)
        again = run(args)  # the server works again
        asked = prompts_of(server)[first:]
    assert again.returncode == 0, again.stderr[-3000:]
    assert "8 rows were already written; the judge calls of 4 of them had failed and were made again" in again.stderr
    assert len(asked) == 8 and not set(asked) & set(prompts_of(server)[:4])  # rows 4-11, each once
    result = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in result] == [r["id"] for r in rows] and all(r["parsed"] for r in result)
    with FakeOpenAIServer(analysis_for) as server:  # an uninterrupted run: the same rows
        clean = run(cli_args(src, tmp_path / "clean.jsonl", server.base_url, None, concurrency=1))
    assert clean.returncode == 0, clean.stderr[-3000:]
    strip = [{k: v for k, v in r.items() if k not in ("fingerprint", "run_id")} for r in result]
    assert strip == [{k: v for k, v in json.loads(x).items() if k not in ("fingerprint", "run_id")}
                     for x in (tmp_path / "clean.jsonl").read_text().splitlines()]


def test_an_interrupted_run_without_a_cache_says_its_answers_will_be_asked_again(tmp_path):
    """Review finding: with --no-cache, Ctrl-C said "101 answered, 0 cached; rerun to resume" though the rerun
    asked all 101 again (paid calls to a hosted judge): the line now says so."""
    src = tmp_path / "pairs.jsonl"
    write_pairs(src, 30)
    with FakeOpenAIServer(analysis_for, delay=0.1) as server:
        proc = subprocess.Popen(with_ctrl_c(cli_args(src, tmp_path / "o.jsonl", server.base_url, None)), cwd=REPO,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while sum(r["t_done"] is not None for r in server.requests) < 6 and time.time() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr[-3000:]
    line = stderr.strip().splitlines()[-1]
    m = re.fullmatch(r"interrupted: (\d+) answered, 0 cached; rerun to resume \((\d+) answers not cached: without a "
                     r"cache only the rows already written to the output's part file are kept; the others are asked "
                     r"again\)", line)
    assert m and m.group(1) == m.group(2) and int(m.group(1)) >= 6, line


def test_a_full_disk_while_writing_results_is_one_line_and_the_rerun_continues(tmp_path):
    """Review 18 (9): no space left while writing the part file gave three chained tracebacks (closing the file
    flushed onto the full disk again) and exit 1, the code for a failed judge. Now: one line naming the file and
    the rows kept, exit 2; the same command with room continues after them and writes what an uninterrupted run
    writes. The disk fills here through a real file-size limit (RLIMIT_FSIZE: writes past it fail, EFBIG)."""
    import resource

    src = tmp_path / "pairs.jsonl"
    write_pairs(src, 12)
    out, whole = tmp_path / "o.jsonl", tmp_path / "whole.jsonl"

    def small_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (6000, 6000))

    with FakeOpenAIServer(analysis_for) as server:
        args = cli_args(src, out, server.base_url, None, "--chunk-rows", "2")
        full = subprocess.run(args, capture_output=True, text=True, cwd=REPO, preexec_fn=small_disk)
        assert full.returncode == 2 and "Traceback" not in full.stderr, full.stderr[-3000:]
        (error,) = [line for line in full.stderr.splitlines() if line.startswith("Error:")]
        kept = out.with_name("o.jsonl.part").read_bytes().count(b"\n")  # whole rows (a cut last line is dropped)
        assert 2 <= kept < 12 and f"cannot write {out}.part (File too large)" in error
        assert "rerun the same command to continue" in error
        asked = len(server.requests)
        again = run(args)
        assert again.returncode == 0 and f"{kept} rows were already written" in again.stderr, again.stderr[-3000:]
        assert len(server.requests) - asked <= 12 - kept + 2  # the rows not written (and the chunk that failed)
        assert run(cli_args(src, whole, server.base_url, None)).returncode == 0

    def scored(path):
        return [(r["id"], r["green"], r["judge_output"]) for r in map(json.loads, path.read_text().splitlines())]

    assert scored(out) == scored(whole) and len(scored(out)) == 12
