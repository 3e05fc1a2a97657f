"""The openai backend against a real HTTP server on 127.0.0.1: answers, retries, faults, key hygiene."""
from __future__ import annotations

import json
import logging

import pytest
from fake_judge import analysis_for, expected_score
from openai_server import FakeOpenAIServer

import radmetrics

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
    reasons = [j.reason for j in result.judgments]
    assert reasons[0].startswith("judge call failed: gave up after 4 attempts: HTTP 500")
    assert result.judgments[1].score is not None and result.judgments[2].score is not None
    # The failure was not cached: a second run asks again for that row only.
    with FakeOpenAIServer(analysis_for) as server:
        again = score_via(server, tmp_path, concurrency=1)
    assert len(server.requests) == 1 and again.summary["num_unscored"] == 0


def test_client_error_is_not_retried_and_key_is_redacted(tmp_path):
    def echo_key(prompt):
        return "x"

    with FakeOpenAIServer(echo_key, script=["401"] * 3) as server:
        result = score_via(server, tmp_path, api_key=SECRET, concurrency=1)
    assert len(server.requests) == 3  # one request per row, no retries on 401
    assert all("HTTP 401" in j.reason for j in result.judgments)
    assert SECRET not in json.dumps([j.to_dict() for j in result.judgments])


def test_completions_mode(tmp_path):
    with FakeOpenAIServer(analysis_for) as server:
        result = score_via(server, tmp_path, mode="completions")
    assert server.requests[0]["path"] == "/v1/completions"
    assert result.summary["num_unscored"] == 0


def test_no_base_url_means_no_network(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(radmetrics.JudgeError, match="base_url"):
        radmetrics.get_judge("openai", model="m")
