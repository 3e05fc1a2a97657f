"""The openai backend against a real HTTP server on 127.0.0.1: answers, retries, faults, key hygiene."""
from __future__ import annotations

import json
import logging
import os
import re

import pytest
from fake_judge import UNREADABLE, analysis_for, expected_score
from openai_server import FakeOpenAIServer

import radmetrics
from radmetrics.errors import RadmetricsError

REFS = ["Small left effusion. No pneumothorax.", "Cardiomegaly with edema.", "Normal chest."]
CANDS = ["Small left effusion.", "Cardiomegaly.", "Normal chest. Tiny nodule."]
SECRET = "sk-test-THIS-MUST-NOT-LEAK-1234"


def score_via(server, tmp_path, **options):
    options = {"base_url": server.base_url, "backoff": 0.01, "max_retries": 3, "timeout": 1.0, **options}
    return radmetrics.score("green", REFS, CANDS, backend="openai", judge="judge-model", progress=False,
                            cache=tmp_path / "cache.sqlite", judge_options=options)


def test_scores_through_local_server_with_key_from_env(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    with FakeOpenAIServer(analysis_for) as server:
        result = score_via(server, tmp_path)
    assert result.scores == pytest.approx([expected_score(r, c) for r, c in zip(REFS, CANDS)])
    assert all(r["headers"]["Authorization"] == f"Bearer {SECRET}" for r in server.requests)
    body = server.requests[0]["body"]
    assert body["model"] == "judge-model" and body["temperature"] == 0.0
    assert body["messages"][-1]["content"].startswith("Objective: Evaluate the accuracy")
    dumped = json.dumps({"fp": result.fingerprint, "j": [j.to_dict() for j in result.judgments]})
    assert SECRET not in dumped and SECRET not in caplog.text
    assert SECRET not in repr(radmetrics.get_judge("openai", model="judge-model", base_url=server.base_url))


def test_retries_429_500_reset_garbage_then_succeeds(tmp_path):
    script = ["429", "500", "reset", "garbage", "truncated", "empty"]
    with FakeOpenAIServer(analysis_for, script=script) as server:
        result = score_via(server, tmp_path, concurrency=1, max_retries=8)
    assert result.summary["num_unscored"] == 0
    assert len(server.requests) == len(REFS) + len(script)


def test_timeout_is_retried(tmp_path):
    with FakeOpenAIServer(analysis_for, script=["timeout"]) as server:
        result = score_via(server, tmp_path, concurrency=1, timeout=0.5)
    assert result.summary["num_unscored"] == 0


def test_persistent_failure_is_an_unscored_row_and_run_continues(tmp_path):
    # The first prompt fails every attempt (4 = 1 + max_retries 3); the rest succeed.
    with FakeOpenAIServer(analysis_for, script=["500"] * 4) as server:
        result = score_via(server, tmp_path, concurrency=1)
        port = server.httpd.server_address[1]
    reasons = [j.reason for j in result.judgments]
    assert reasons[0].startswith("judge call failed: gave up after 4 attempts: HTTP 500")
    assert result.judgments[1].score is not None and result.judgments[2].score is not None
    # The failure was not cached: a second run (the server restarted at its address) asks again for that row only.
    with FakeOpenAIServer(analysis_for, port=port) as server:
        again = score_via(server, tmp_path, concurrency=1)
    assert len(server.requests) == 1 and again.summary["num_unscored"] == 0


def test_two_servers_serving_one_model_name_never_share_cached_answers(tmp_path):
    """Review 12: servers serve different checkpoints under one name (vLLM --served-model-name judge); a run
    against a second server was answered from the first one's cache (its GREEN 0.43 for the true 0.17)."""
    with FakeOpenAIServer(analysis_for) as first, FakeOpenAIServer(lambda prompt: UNREADABLE) as second:
        one = score_via(first, tmp_path, concurrency=1)
        other = score_via(second, tmp_path, concurrency=1)
        again = score_via(first, tmp_path, concurrency=1)
    assert one.summary["num_unscored"] == 0 and len(second.requests) == len(REFS)
    assert other.summary["num_unscored"] == len(REFS)  # its own answers, not the first server's
    assert len(first.requests) == len(REFS) and again.scores == one.scores  # the same server: from the cache
    assert one.fingerprint["judge"]["server"] == first.base_url != other.fingerprint["judge"]["server"]


def test_client_error_is_not_retried_and_key_is_redacted(tmp_path):
    def echo_key(prompt):
        return "x"

    with FakeOpenAIServer(echo_key, script=["401"] * 3) as server:
        result = score_via(server, tmp_path, api_key=SECRET, concurrency=1)
    assert len(server.requests) == 3  # one request per row, no retries on 401
    assert all("HTTP 401" in j.reason for j in result.judgments)
    assert SECRET not in json.dumps([j.to_dict() for j in result.judgments])


def test_completions_mode_sends_green_prompts_in_greens_chat_format(tmp_path):
    """Review 12 R16: in completions mode GREEN prompts went as raw text, without the chat format the GREEN models
    were trained on (the in-process backends apply it): now as upstream feeds them, unless chat_format=none."""
    from radmetrics.judge.chat_formats import render_text

    before, after = render_text("\x00", "green").split("\x00")
    assert before == "<|user|>\n" and after.endswith("<|assistant|>\n</s>")

    def unwrap(text):
        return analysis_for(text[len(before):-len(after)] if text.startswith(before) and text.endswith(after) else text)

    with FakeOpenAIServer(unwrap) as server:
        result = score_via(server, tmp_path, mode="completions")
        raw = score_via(server, tmp_path, mode="completions", chat_format="none")
    assert server.requests[0]["path"] == "/v1/completions"
    assert result.summary["num_unscored"] == 0 and raw.scores == result.scores
    sent = [r["body"]["prompt"] for r in server.requests]
    assert all(p.startswith(before) and p.endswith(after) for p in sent[:3])
    assert not any(p.startswith(before) for p in sent[3:]) and len(sent) == 6  # another format: asked again
    with pytest.raises(RadmetricsError, match="chat_format applies to mode=completions"):
        radmetrics.get_judge("openai", model="m", base_url=server.base_url, chat_format="green")
    with pytest.raises(RadmetricsError, match="system_prompt applies to mode=chat"):  # review 13: it was dropped
        radmetrics.get_judge("openai", model="m", base_url=server.base_url, mode="completions", system_prompt="Be brief.")


def test_no_base_url_means_no_network(monkeypatch):
    """No server chosen: no lookup, no connection, from `get_judge` and through a whole scoring call (whose judge
    preflight probed https://api.openai.com/v1 before; review finding), and the error says what is missing."""
    import socket

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    network = []
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: network.append(a) or [])
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: network.append(a))
    with pytest.raises(radmetrics.JudgeError, match="base_url"):
        radmetrics.get_judge("openai", model="m")
    with pytest.raises(radmetrics.JudgeError, match=r"needs a server address: --base-url.*Nothing is sent anywhere by default"):
        radmetrics.score("green", ["No effusion."], ["No effusion."], backend="openai", judge="gpt-4o", cache=False,
                         progress=False)
    assert network == []


def test_a_server_address_without_http_is_one_line_before_any_request(tmp_path):
    """Review 29c: `--base-url 127.0.0.1:8000/v1` (no http://) passed the connection probe, which assumes a scheme;
    then every row's request failed after 6 attempts with "connection error (UnsupportedProtocol)", the results were
    written with every row unscored, and the run exited 1. Now it is a one-line error (exit 2) saying what to write,
    with the address's credentials left out, from the CLI and from Python, and nothing is written."""
    import subprocess
    import sys

    from conftest import SAMPLE

    with FakeOpenAIServer(lambda prompt: analysis_for(prompt)) as server:
        bare = server.base_url.removeprefix("http://")
        run = subprocess.run([sys.executable, "-m", "radmetrics.cli", "score", "-m", "green", "-i",
                              str(SAMPLE / "pairs.jsonl"), "-o", str(tmp_path / "o.jsonl"), "--backend", "openai",
                              "--judge", "m", "--base-url", f"user:{SECRET}@{bare}?key={SECRET}", "--no-cache"],
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-2000:]
        assert run.stderr.strip().splitlines()[-1] == (
            f"Error: The judge server address has no http:// or https:// in front (--base-url): e.g. http://{bare}")
        assert SECRET not in run.stderr and server.requests == [] and list(tmp_path.iterdir()) == []
        with pytest.raises(radmetrics.JudgeError, match="does not start with http:// or https://"):
            radmetrics.get_judge("openai", model="m", base_url=f"ftp://{bare}")
        with pytest.raises(radmetrics.JudgeError, match=re.escape("no http:// or https:// in front (judge_options=")):
            radmetrics.get_judge("openai", model="m", base_url=bare)
        assert server.requests == []


@pytest.mark.parametrize("endpoint", ["/chat/completions", "/completions", "/chat/completions/"])
def test_a_server_address_that_names_the_endpoint_is_one_line_before_any_request(tmp_path, endpoint):
    """Review 34: the README gives lm_eval's base_url as `http://127.0.0.1:8000/v1/chat/completions` (lm_eval wants
    the endpoint); copied to `radmetrics score --base-url`, every request went to `.../v1/chat/completions/chat/
    completions`, a real server answered 404 and each row was unscored with `HTTP 404: {"detail":"Not Found"}`.
    Now the address is refused in one line saying to stop at /v1, before any request."""
    import subprocess
    import sys

    from conftest import SAMPLE

    with FakeOpenAIServer(analysis_for) as server:  # this server answers any path ending in the endpoint
        run = subprocess.run([sys.executable, "-m", "radmetrics.cli", "score", "-m", "green", "-i",
                              str(SAMPLE / "pairs.jsonl"), "-o", str(tmp_path / "o.jsonl"), "--backend", "openai",
                              "--judge", "m", "--base-url", server.base_url + endpoint, "--no-cache"],
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-2000:]
        assert run.stderr.strip().splitlines()[-1] == (
            f"Error: The judge server address ends in the endpoint {endpoint.rstrip('/')} (--base-url): give the "
            f"server's base address, e.g. {server.base_url} (radmetrics adds the endpoint)")
        with pytest.raises(radmetrics.JudgeError, match=re.escape(f"e.g. {server.base_url} (radmetrics adds")):
            radmetrics.get_judge("openai", model="m", base_url=server.base_url + endpoint + "?api-version=1")
        assert server.requests == [] and list(tmp_path.iterdir()) == []


def test_a_key_in_the_server_url_never_reaches_an_error_or_a_result_file(tmp_path, monkeypatch):
    """Review finding: the unreachable-server error printed --base-url as given, user:key@ and ?key= included, and
    `compare` wrote it into results.json, report.html and every row of per_row.csv."""
    import subprocess
    import sys

    from conftest import REPO

    key = "sk-review-secret-0123456789"
    pairs = tmp_path / "a.jsonl"
    pairs.write_text(json.dumps({"id": "r1", "reference": "No effusion.", "candidate": "No effusion."}) + "\n")
    env = {**os.environ, "OPENAI_API_KEY": key, "HF_HUB_OFFLINE": "1"}
    for url in (f"http://user:{key}@127.0.0.1:9/v1", f"http://127.0.0.1:9/v1?key={key}"):
        for args in (["score", "-i", pairs, "-o", tmp_path / "o.jsonl"],
                     ["compare", "-s", f"A={pairs}", "-s", f"B={pairs}", "-o", tmp_path / "cmp"]):
            out = subprocess.run([sys.executable, "-m", "radmetrics.cli", *map(str, args), "-m", "green", "--backend",
                                  "openai", "--base-url", url, "--judge", "m", "--no-cache"],
                                 capture_output=True, text=True, env=env, cwd=REPO)
            assert out.returncode == 2 and "Cannot connect to the judge server at http://127.0.0.1:9/v1:" in out.stderr
            assert "sk-review" not in out.stdout + out.stderr, out.stderr
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != pairs]
    assert not any(b"sk-review" in p.read_bytes() for p in written), written


NOTICE = re.compile(r"no answer (yet )?from (\S+) (after|for) ([\d.]+) s \((\d+) requests? in flight(?:, \d+ queued)?; timeout ([\d.]+) s "
                    r"per request, (\d+) retr(y|ies): a row fails after about [\d.]+ s\): the server is slow or stuck; "
                    r"--judge-option timeout=SECONDS \(and max_retries=N\) to fail sooner$")


def test_a_stalled_server_is_said_so_then_its_rows_are_unscored_with_the_reason(tmp_path, monkeypatch, caplog):
    # The server takes every request and answers none. Before: silence until every attempt ran out (120 s x 6 at
    # the defaults). Now: a warning after notice_after seconds, then at a growing interval, then the rows fail.
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    caplog.set_level(logging.WARNING, logger="radmetrics.judge.openai_backend")
    with FakeOpenAIServer(analysis_for, script=["stall"] * 3) as server:
        result = score_via(server, tmp_path, concurrency=3, timeout=1.2, max_retries=0, notice_after=0.2)
    notices = [r.getMessage() for r in caplog.records if r.name == "radmetrics.judge.openai_backend"]
    found = [NOTICE.match(n) for n in notices]
    assert notices and all(found), notices
    first = found[0]
    assert first.group(1) == "yet " and first.group(2) == server.base_url and first.group(5) == "3"
    assert (first.group(6), first.group(7)) == ("1.2", "0")
    silences = [float(m.group(4)) for m in found]
    # notices at 0.2, 0.4, 0.8 s of silence (each step doubles); never more often than that
    assert silences[0] >= 0.2 and all(b >= 1.8 * a for a, b in zip(silences, silences[1:])), silences
    assert len(notices) <= 3, notices
    assert [j.reason for j in result.judgments] == [
        "judge call failed: gave up after 1 attempt: no complete answer within the 1.2s request deadline"] * 3
    assert all(j.score is None for j in result.judgments)
    assert SECRET not in caplog.text


def test_silence_notices_grow_apart_and_a_slow_working_server_is_not_nagged():
    from radmetrics.judge.silence import SilenceWatch, span

    now = [0.0]
    watch = SilenceWatch(30, clock=lambda: now[0])
    watch.start()
    due = []
    for t in range(0, 1000):  # stuck for 1000 s: notices at 30, 60, 120, 240, 480, 960 s
        now[0] = float(t)
        if watch.due() is not None:
            due.append(t)
    assert due == [30, 60, 120, 240, 480, 960]
    # a server answering once a minute: one notice in the first minute, none after (thresholds are kept)
    slow = SilenceWatch(30, clock=lambda: now[0])
    now[0] = 0.0
    slow.start()
    said = 0
    for t in range(0, 600):
        now[0] = float(t)
        if t and t % 60 == 0:
            slow.heard()
        said += slow.due() is not None
    assert said == 1 and slow.heard_any
    # a new batch right after the last one continues the silence; one after an idle gap starts afresh
    slow.stop()
    now[0] += 0.5
    slow.start()
    assert slow.heard_any
    slow.stop()
    now[0] += 5
    slow.start()
    assert not slow.heard_any and slow.silent_for() == 0
    off = SilenceWatch(0, clock=lambda: now[0])
    now[0] += 10_000
    assert off.due() is None and off.wait_s(cap=5.0) == 5.0
    assert [span(s) for s in (0.25, 3, 30, 120, 751)] == ["0.25 s", "3 s", "30 s", "2 min", "13 min"]


def test_every_entry_point_names_a_missing_or_dead_server_in_seconds_in_its_own_terms(tmp_path):
    """Review findings: `compare` with no server address wrote reports full of per-row failures; `reward-check`
    had no reachability check and its stop said "rerun the same command to resume" (it has no resume);
    evaluate users were told to fix `--base-url`. Now each stops before any work with one line that names the
    command-line flag and the Python argument."""
    import subprocess
    import sys
    import time

    import evaluate

    pairs = tmp_path / "a.jsonl"
    pairs.write_text(json.dumps({"id": "r1", "reference": "No effusion.", "candidate": "No effusion.",
                                 "prompt": "P", "completion": "No effusion."}) + "\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_BASE_URL"} | {"HF_HUB_OFFLINE": "1"}
    dead = "http://127.0.0.1:9/v1"
    cases = [(["compare", "-s", f"A={pairs}", "-s", f"B={pairs}", "-o", tmp_path / "cmp"], None,
              "needs a server address: --base-url URL on the command line, judge_options={'base_url': URL} in Python"),
             (["reward-check", "-i", pairs, "--completions"], dead, f"Cannot connect to the judge server at {dead}:"),
             (["compare", "-s", f"A={pairs}", "-s", f"B={pairs}", "-o", tmp_path / "cmp"], dead,
              f"Cannot connect to the judge server at {dead}:")]
    for args, url, expected in cases:
        started = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "radmetrics.cli", *map(str, args), "-m", "green", "--backend",
                              "openai", *(["--base-url", url] if url else []), "--judge", "m", "--no-cache"],
                             capture_output=True, text=True, env=env, cwd=tmp_path)
        assert out.returncode == 2 and expected in out.stderr, (args, out.stderr)
        assert "Traceback" not in out.stderr and time.monotonic() - started < 30
    assert not (tmp_path / "cmp").exists()  # nothing half-written

    green = evaluate.load(radmetrics.evaluate_module_path("green"), backend="openai", judge="m",
                          judge_options={"base_url": dead}, cache=False, progress=False)
    with pytest.raises(radmetrics.JudgeError) as caught:
        green.compute(predictions=["No effusion."], references=["No effusion."])
    assert "judge_options={'base_url': URL} in Python" in str(caught.value)
    assert "backend='transformers', judge=FOLDER" in str(caught.value)
