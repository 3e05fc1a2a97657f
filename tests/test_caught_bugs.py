"""Bugs an independent audit injected and the suite missed (issue 18), each now caught on the path a user takes.

Every test here was proven by re-introducing its bug by hand and watching it fail (TESTING.md lists bug ->
test and the edit used). Expected values are written from the papers (tests/green_answers.py), never
recomputed with radmetrics' own parser.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO
from green_answers import ERROR_TYPES, formula_score, green_answer, green_score
from openai_server import FakeOpenAIServer

import radmetrics

PAIR = ("Small left pleural effusion. No pneumothorax.", "Small left pleural effusion. Mild cardiomegaly.")
# A GREEN answer that does not depend on the prompt: 1 significant (a), 2 matched -> GREEN 2/3.
FIXED_ANSWER = green_answer({"a": 1}, {}, 2)


def write_replay(path, system_name, pairs, answers):
    system = radmetrics.get_scoring_system(system_name)
    path.write_text("".join(json.dumps({"prompt": system.build_prompt(r, c), "response": a}) + "\n"
                            for (r, c), a in zip(pairs, answers)))
    return path


def cli(*args):
    return subprocess.run([sys.executable, "-m", "radmetrics.cli", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, env=os.environ.copy())


# -- bug 1: the GREEN parser ignoring a category ((f) in the audit) ---------------------------------------------
def test_every_error_category_counts_in_both_sections(tmp_path):
    """One row per category (a)-(f), each with 2 significant and 1 insignificant error of that category only,
    3 matched findings: GREEN = 3 / (3 + 2) (Eq. 1), Formula = 3 / (3 + 4 + 0.5) (VERT Eq. 5)."""
    pairs = [(f"reference {letter}", f"candidate {letter}") for letter in ERROR_TYPES]
    counts = [({letter: 2}, {letter: 1}) for letter in ERROR_TYPES]
    replay = write_replay(tmp_path / "r.jsonl", "green", pairs, [green_answer(s, i, 3) for s, i in counts])
    refs, cands = zip(*pairs)
    green = radmetrics.score("green", refs, cands, backend="replay", judge_options={"path": str(replay)},
                             progress=False)
    assert green.scores == pytest.approx([green_score(s, 3) for s, _ in counts]) == [0.6] * 6
    for judgment, (sig, insig) in zip(green.judgments, counts):
        assert judgment.significant == {x: sig.get(x, 0) for x in ERROR_TYPES}
        assert judgment.insignificant == {x: insig.get(x, 0) for x in ERROR_TYPES}
    formula = radmetrics.score("green_formula", refs, cands, backend="replay", judge_options={"path": str(replay)},
                               progress=False)
    assert formula.scores == pytest.approx([formula_score(s, i, 3) for s, i in counts])
    # GREEN's summary: per category, the share of reports without a significant error of that category = 5/6
    shares = green.summary["error_free_share"]
    assert [shares[f"({x}) {name}"] for x, name in ERROR_TYPES.items()] == pytest.approx([5 / 6] * 6)


# -- bug 2: the 300-word warning boundary (> vs >=) -------------------------------------------------------------
@pytest.mark.parametrize("words, warned", [(299, False), (300, False), (301, True)])
def test_300_word_warning_boundary(tmp_path, words, warned):
    """GREEN cuts each report to its first 300 words (official make_prompt): a report of exactly 300 words
    loses nothing and must not be flagged; 301 words lose one and must be."""
    long_text = " ".join(f"word{i}" for i in range(words))
    pairs = [(long_text, "Short candidate."), ("Short reference.", long_text)]
    replay = write_replay(tmp_path / "r.jsonl", "green", pairs, [FIXED_ANSWER] * 2)
    result = radmetrics.score("green", [p[0] for p in pairs], [p[1] for p in pairs], backend="replay",
                              judge_options={"path": str(replay)}, progress=False)
    assert result.scores == pytest.approx([2 / 3, 2 / 3])
    warnings = [j.details.get("warnings") for j in result.judgments]
    if warned:
        assert warnings == [[f"reference cut from {words} to 300 words (GREEN prompt limit)"],
                            [f"candidate cut from {words} to 300 words (GREEN prompt limit)"]]
    else:
        assert warnings == [None, None]
    prompt = radmetrics.get_scoring_system("green").build_prompt(long_text, "x")
    kept = prompt.split("2. Reference Report:\n    ")[1].split("\n\n")[0].split()
    assert kept == [f"word{i}" for i in range(min(words, 300))]


# -- bug 4: the replay backend normalising whitespace ---------------------------------------------------------
def test_replay_matches_the_exact_prompt_and_returns_the_exact_response(tmp_path):
    """Replay's contract is an exact match: a prompt that differs only in whitespace is another prompt, and
    the recorded response comes back byte for byte."""
    system = radmetrics.get_scoring_system("green")
    prompt = system.build_prompt(*PAIR)
    recorded = FIXED_ANSWER + "\n  \n"  # trailing whitespace is part of the recording
    other = green_answer({}, {}, 4)  # what a whitespace variant of the prompt was answered (score 1.0)
    lines = [{"prompt": prompt, "response": recorded}]
    lines += [{"prompt": v, "response": other} for v in (prompt.replace("    ", "  "), prompt.rstrip("\n"),
                                                          " " + prompt, prompt.replace("\n\n", "\n"))]
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps(x) + "\n" for x in lines))
    src, out = tmp_path / "pairs.jsonl", tmp_path / "out.jsonl"
    src.write_text(json.dumps({"reference": PAIR[0], "candidate": PAIR[1]}) + "\n")
    run = cli("score", "-m", "green", "-i", src, "-o", out, "--replay", replay, "--no-progress")
    assert run.returncode == 0, run.stderr
    row = json.loads(out.read_text())
    assert row["judge_output"] == recorded and row["green"] == pytest.approx(2 / 3)


@pytest.mark.parametrize("variant", [lambda p: p.replace("    ", "  "), lambda p: p.rstrip("\n"),
                                     lambda p: p.replace("\n\n", "\n"), lambda p: p.replace(" ", "\t", 1)],
                         ids=["indent", "trailing-newline", "blank-lines", "tab"])
def test_replay_does_not_answer_a_whitespace_variant(tmp_path, variant):
    prompt = radmetrics.get_scoring_system("green").build_prompt(*PAIR)
    replay = tmp_path / "replay.jsonl"
    replay.write_text(json.dumps({"prompt": variant(prompt), "response": FIXED_ANSWER}) + "\n")
    result = radmetrics.score("green", [PAIR[0]], [PAIR[1]], backend="replay", judge_options={"path": str(replay)},
                              progress=False)
    assert result.scores == [None]
    assert result.judgments[0].reason.endswith("has no response for this row's prompt; prompts must match exactly, "
                                               "including whitespace")


# -- bug 5: Retry-After ignored -----------------------------------------------------------------------------
@pytest.mark.parametrize("status", ["429", "503"])
def test_retry_after_is_honoured(tmp_path, status):
    """The server asks to wait 1 s; the client's own backoff is 10 ms. The retry must come >= 1 s later."""
    with FakeOpenAIServer(lambda prompt: FIXED_ANSWER, script=[status], retry_after="1") as server:
        result = radmetrics.score("green", [PAIR[0]], [PAIR[1]], backend="openai", judge="judge-model", cache=False,
                                  progress=False, judge_options={"base_url": server.base_url, "backoff": 0.01,
                                                                 "max_retries": 2, "concurrency": 1})
    assert result.scores == pytest.approx([2 / 3])
    assert len(server.requests) == 2
    gap = server.requests[1]["time"] - server.requests[0]["time"]
    assert gap >= 0.95, f"retried {gap:.3f}s after a 'Retry-After: 1' reply"


def test_retry_after_is_capped_by_max_backoff(tmp_path):
    with FakeOpenAIServer(lambda prompt: FIXED_ANSWER, script=["429"], retry_after="3600") as server:
        result = radmetrics.score("green", [PAIR[0]], [PAIR[1]], backend="openai", judge="judge-model", cache=False,
                                  progress=False, judge_options={"base_url": server.base_url, "backoff": 0.01,
                                                                 "max_backoff": 0.3, "max_retries": 2})
    assert result.scores == pytest.approx([2 / 3])
    assert 0.25 <= server.requests[1]["time"] - server.requests[0]["time"] < 5


# -- bugs 6 and 7: API-key redaction bypassed, or a no-op ------------------------------------------------------
SECRET = "sk-audit-Qm7vXr2LpT9wZc4N"


@pytest.mark.parametrize("key_from", ["argument", "environment"])
def test_key_echoed_in_an_error_reply_is_redacted_in_the_reason(tmp_path, monkeypatch, key_from):
    """A server that echoes the credential in its 401/400/404 bodies (as some proxies do): the body is in the
    row's reason, so the key must be masked there (the `***` shows the echo reached the reason)."""
    options = {"api_key": SECRET} if key_from == "argument" else {}
    if key_from == "environment":
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    refs = [f"{PAIR[0]} {i}" for i in range(3)]
    with FakeOpenAIServer(lambda prompt: FIXED_ANSWER, script=["401", "400", "404"], echo_key=True) as server:
        result = radmetrics.score("green", refs, [PAIR[1]] * 3, backend="openai", judge="judge-model",
                                  cache=False, progress=False,
                                  judge_options={"base_url": server.base_url, "concurrency": 1, **options})
    assert all(r["headers"]["Authorization"] == f"Bearer {SECRET}" for r in server.requests)
    reasons = [j.reason for j in result.judgments]
    assert [r.split(":")[1].strip() for r in reasons] == ["HTTP 401", "HTTP 400", "HTTP 404"]
    assert all("Bearer ***" in r for r in reasons)
    dumped = json.dumps([j.to_dict() for j in result.judgments]) + json.dumps(result.summary)
    assert SECRET not in dumped and SECRET[3:12] not in dumped


# -- bug 8: VERT taking the first score instead of the last ---------------------------------------------------
def test_vert_reads_the_last_overall_score_when_the_template_is_echoed(tmp_path, monkeypatch):
    """Judges restate the template (with an example number) before answering; the answer is the last score.
    Through evaluate.load, as a user of the VERT module would."""
    import evaluate

    echoed = ("[Overall Accuracy Score]:\n<Overall accuracy score between 0 and 1>, e.g. [Overall Accuracy Score]: "
              "0.10 for many errors\n\n" + green_answer({"b": 1}, {}, 3, overall=0.85))
    pairs = [PAIR, ("Normal chest.", "Normal chest.")]
    answers = [echoed, green_answer({}, {}, 1, overall=0.95)]
    replay = write_replay(tmp_path / "r.jsonl", "vert", pairs, answers)
    monkeypatch.chdir(REPO)
    vert = evaluate.load("radmetrics/vert", backend="replay", judge_options={"path": str(replay)}, progress=False)
    out = vert.compute(predictions=[c for _, c in pairs], references=[r for r, _ in pairs])
    assert out["scores"] == pytest.approx([0.85, 0.95])
    assert out["vert"] == pytest.approx(0.9)
    assert out["details"][0]["details"]["significant"]["b"] == 1


# -- bug 9: max_input_tokens keeping the start instead of the end --------------------------------------------
def test_max_input_tokens_keeps_the_end_of_the_prompt(tiny_judge):
    """The end of a prompt holds the answer format and the chat template's assistant turn; a cut keeps it.
    The answer radmetrics gives equals HF generate on the last N tokens (loaded here independently)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    system = radmetrics.get_scoring_system("green")
    prompt = system.build_prompt(*PAIR)
    full = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False).backend.encode(prompt)
    keep = len(full) - 60
    cut_judge = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False, max_input_tokens=keep)
    assert cut_judge.backend.encode(prompt) == full[-keep:]
    result = radmetrics.score("green", [PAIR[0]], [PAIR[1]], judge=str(tiny_judge), cache=False, progress=False,
                              judge_options={"max_input_tokens": keep},
                              config=radmetrics.GenerationConfig(max_new_tokens=48))
    tokenizer = AutoTokenizer.from_pretrained(tiny_judge)
    model = AutoModelForCausalLM.from_pretrained(tiny_judge, dtype=torch.float32).eval()
    with torch.inference_mode():
        generated = model.generate(torch.tensor([full[-keep:]]), max_new_tokens=48, do_sample=False,
                                   pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    expected = tokenizer.decode(generated[0, keep:], skip_special_tokens=True)
    assert result.judgments[0].raw == expected


# -- bug 10: stop sequences ignored ----------------------------------------------------------------------------
def test_stop_sequences_end_the_answer(tiny_judge):
    """The tiny judge answers in GREEN format; stopping at "[Matched Findings]" must cut the answer there (so
    GREEN cannot read a matched count and the row is unscored, with the reason) on both generation paths:
    the greedy engine and HF generate (engine off)."""
    from tiny_judge import training_pairs

    ref, cand, _ = training_pairs()[0]
    free = radmetrics.score("green", [ref], [cand], judge=str(tiny_judge), cache=False, progress=False,
                            config=radmetrics.GenerationConfig(max_new_tokens=256))
    full_text = free.judgments[0].raw
    assert "[Matched Findings]" in full_text and free.judgments[0].parsed
    for engine in (True, False):
        stopped = radmetrics.score("green", [ref], [cand], judge=str(tiny_judge), cache=False, progress=False,
                                   judge_options={"engine": engine},
                                   config=radmetrics.GenerationConfig(max_new_tokens=256,
                                                                      stop=("[Matched Findings]",)))
        judgment = stopped.judgments[0]
        assert judgment.raw == full_text.split("[Matched Findings]")[0], f"engine={engine}"
        assert judgment.score is None and "no [Matched Findings] section" in judgment.reason


def test_stop_sequences_are_sent_to_an_openai_server():
    with FakeOpenAIServer(lambda prompt: FIXED_ANSWER) as server:
        radmetrics.score("green", [PAIR[0]], [PAIR[1]], backend="openai", judge="judge-model", cache=False,
                         progress=False, judge_options={"base_url": server.base_url},
                         config=radmetrics.GenerationConfig(stop=("[Matched Findings]", "</s>")))
    assert server.requests[0]["body"]["stop"] == ["[Matched Findings]", "</s>"]


# -- bug 11: push_folder defaulting to public from Python ---------------------------------------------------
def test_push_folder_from_python_is_private_unless_asked(tmp_path):
    """The Python API, in a fresh process pointed at a Hub-compatible server on 127.0.0.1."""
    from hub_server import HubServer

    folder = tmp_path / "judge"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    code = ("import json, sys; from radmetrics.hub import push_folder; "
            "print(json.dumps([push_folder(sys.argv[1], 'lab/default'), "
            "push_folder(sys.argv[1], 'lab/asked-public', public=True), "
            "push_folder(sys.argv[1], 'lab/data', repo_type='dataset')]))")
    with HubServer(tmp_path / "hub") as hub:
        env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_TOKEN": "hf_test_token", "HF_HUB_OFFLINE": "0",
               "HF_HUB_DISABLE_TELEMETRY": "1"}
        run = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, env=env)
        assert run.returncode == 0, run.stderr[-2000:]
        returned = json.loads(run.stdout.strip().splitlines()[-1])
        assert [r["private"] for r in returned] == [True, False, True]
        assert hub.repos[("model", "lab/default")]["private"] is True
        assert hub.repos[("model", "lab/asked-public")]["private"] is False
        assert hub.repos[("dataset", "lab/data")]["private"] is True
        assert "config.json" in hub.files("model", "lab/default")
