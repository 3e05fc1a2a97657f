"""Review 15 (T1): a judge answer that ran into the token limit was read as if complete. A GREEN answer whose
matched-findings list was cut after item 3 of 5 scored 0.75 for 0.833, with no word. Now every backend that knows
why generation stopped hands on a `CutAnswer`; its row is unscored with the reason (the text kept), the response
cache does not keep it, and data steps and judge training refuse it."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from fake_judge import analysis_for
from openai_server import FakeOpenAIServer

import radmetrics
from radmetrics.types import CutAnswer, GenerationConfig

REFS = ["Small left pleural effusion.", "Heart size normal. No effusion."]
CANDS = ["Small left effusion.", "Heart size normal."]
CUT = ("the judge's answer reached the token limit (max_new_tokens={}) before it ended: what it says last may be "
       "cut (a list, a number); raise --max-new-tokens")


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
    assert len(rows) == 1 and dropped == [f"row 0: {CUT.format(300)}"]
