"""FineRadScore sends what the official code sends (fidelity audit F10), and conversation prompts reach every
backend as messages.

tests/fixtures/fineradscore_official_messages.json holds the messages that rajpurkarlab/FineRadScore@3f5e1dc's own
functions build (gpt4_generations.py, claude3_generations.py, run through recorders in place of the API clients,
with run_rexval_experiments.py's sentence ids) for a few pairs.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import FIXTURES, REPO
from fake_judge import analysis_for
from openai_server import FakeOpenAIServer

import radmetrics
from radmetrics.conversation import (
    CHAT_MARK,
    as_messages,
    chat_messages,
    chat_prompt,
    continue_chat,
    flatten,
    system_into_first_user,
)
from radmetrics.judge.chat_formats import render, render_text

OFFICIAL = json.loads((FIXTURES / "fineradscore_official_messages.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", OFFICIAL["cases"], ids=lambda c: c["candidate"][:20])
def test_prompts_are_the_official_messages_byte_for_byte(case):
    for layout in ("gpt4", "claude3"):
        system = radmetrics.get_scoring_system("finerad_score", layout=layout)
        assert chat_messages(system.build_prompt(case["reference"], case["candidate"])) == \
            case[f"{layout}_fewshot"]["messages"]
    zero_shot = radmetrics.get_scoring_system("finerad_score", few_shot=False)
    assert as_messages(zero_shot.build_prompt(case["reference"], case["candidate"])) == \
        case["gpt4_zeroshot"]["messages"]


def test_prompt_version_names_the_layout_and_a_bad_layout_is_refused():
    assert radmetrics.get_scoring_system("finerad_score").prompt_version == "fineradscore-official-1-fewshot-gpt4"
    assert radmetrics.get_scoring_system("finerad_score", layout="claude3").prompt_version.endswith("-claude3")
    assert radmetrics.get_scoring_system("finerad_score", few_shot=False).prompt_version.endswith("-zeroshot")
    with pytest.raises(radmetrics.RadmetricsError, match="layout 'gpt5' is not one of gpt4, claude3"):
        radmetrics.get_scoring_system("finerad_score", layout="gpt5")


def test_conversation_prompts_round_trip_and_refuse_what_is_not_a_conversation():
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": 'a "quoted"\nline'},
                {"role": "assistant", "content": "{}"}, {"role": "user", "content": "ünï ✓"}]
    prompt = chat_prompt(messages)
    assert prompt.startswith(CHAT_MARK) and chat_messages(prompt) == messages
    assert chat_messages("plain text") is None and as_messages("plain") == [{"role": "user", "content": "plain"}]
    assert flatten(prompt) == 'S\n\na "quoted"\nline\n\n{}\n\nünï ✓' and flatten("plain") == "plain"
    assert chat_messages(continue_chat("q", "bad answer", "again")) == [
        {"role": "user", "content": "q"}, {"role": "assistant", "content": "bad answer"},
        {"role": "user", "content": "again"}]
    assert system_into_first_user(messages)[0] == {"role": "user", "content": 'Sa "quoted"\nline'}
    for bad in ([], [{"role": "assistant", "content": "x"}], [{"role": "user", "content": 1}],
                [{"role": "user", "content": "x"}, {"role": "system", "content": "late"}, {"role": "user", "content": "y"}],
                [{"role": "tool", "content": "x"}], [{"role": "user", "content": "x", "name": "n"}]):
        with pytest.raises(ValueError):
            chat_prompt(bad)
    assert chat_messages(CHAT_MARK + "not json") is None  # read as a plain prompt, never half-parsed


class _Tokenizer:
    """A tokenizer's chat-template call, recorded (transformers' own rendering is tested in the engine tests)."""

    def __init__(self, refuse_system=False):
        self.refuse_system, self.calls = refuse_system, []

    def apply_chat_template(self, messages, chat_template=None, tokenize=False, add_generation_prompt=True):
        import jinja2

        if self.refuse_system and messages[0].get("role") == "system":
            raise jinja2.TemplateError("System role not supported")
        self.calls.append(messages)
        if chat_template is not None and "from" in messages[0]:  # GREEN's template, as transformers renders it
            env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
            return env.from_string(chat_template).render(messages=messages, eos_token="</s>",
                                                         add_generation_prompt=add_generation_prompt)
        return "|".join(f"{m['role']}:{m['content']}" for m in messages)


def test_in_process_rendering_gives_the_model_the_turns():
    prompt = radmetrics.get_scoring_system("finerad_score").build_prompt("Heart normal.", "Edema.")
    official = chat_messages(prompt)
    tok = _Tokenizer()
    render(prompt, "tokenizer", tok)
    assert tok.calls[-1] == official
    # a template without a system role: the instructions open the first user turn (the official Claude layout)
    strict = _Tokenizer(refuse_system=True)
    render(prompt, "tokenizer", strict)
    assert strict.calls[-1] == system_into_first_user(official)
    assert strict.calls[-1][0]["content"].startswith("Instructions: Return only a json object")
    text, eos = render(prompt, "none", tok)
    assert text == flatten(prompt) and not eos and text.endswith("Ground Truth Text: Heart normal.")
    # GREEN's format over several turns: its roles, then upstream's empty assistant turn
    green_text, eos = render(prompt, "green", _Tokenizer())
    assert eos and green_text.startswith("<|system|>\nInstructions:") and green_text.count("<|user|>") == 6
    assert green_text == render_text(prompt, "green", "</s>")[: -len("</s>")]
    plain = radmetrics.get_scoring_system("green").build_prompt("r", "c")  # a plain prompt renders as before
    assert render(plain, "green", _Tokenizer())[0].startswith("<|user|>\n") and render(plain, "none", tok)[0] == plain


def test_a_real_tokenizer_template_without_a_system_role_gets_the_claude_layout():
    """transformers' apply_chat_template with a template that raises on a system message (as Mistral's and
    Gemma's do): the turns are rendered with the instructions in the first user turn."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    raw.train_from_iterator(["heart normal edema generated text ground truth"] * 20,
                            trainers.BpeTrainer(vocab_size=120, special_tokens=["<unk>", "<s>", "</s>"]))
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    tok.chat_template = ("{% for m in messages %}{% if m['role'] == 'system' %}"
                         "{{ raise_exception('System role not supported') }}{% endif %}"
                         "[{{ m['role'] }}]{{ m['content'] }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}")
    system = radmetrics.get_scoring_system("finerad_score")
    text, eos = render(system.build_prompt("Heart normal.", "Edema."), "tokenizer", tok)
    claude = chat_messages(radmetrics.get_scoring_system("finerad_score", layout="claude3").build_prompt(
        "Heart normal.", "Edema."))
    assert not eos and text.startswith("[user]Instructions: Return only a json object")
    assert text.count("[user]") == 6 and text.count("[assistant]") == 6 and text.endswith("[assistant]")
    assert claude[0]["content"].startswith("Instructions:") and text.count("Instructions: Return only") == 1


def _run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "radmetrics.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, env=os.environ.copy(), timeout=600)


def test_an_openai_compatible_server_gets_the_official_turns_and_a_reask_continues_them(tmp_path):
    """From another directory, through the CLI: the server receives gpt4_generations.py's messages; an answer cut
    short is re-asked by showing the judge its answer and asking for valid JSON; completions mode sends the
    turns as text."""
    pairs = [{"reference": case["reference"], "candidate": case["candidate"]} for case in OFFICIAL["cases"][:2]]
    pairs.append({"reference": "Small left effusion.", "candidate": "Small left effusion. MALFORMED output."})
    src = tmp_path / "pairs.jsonl"
    src.write_text("".join(json.dumps(p) + "\n" for p in pairs), encoding="utf-8")
    with FakeOpenAIServer(analysis_for) as server:
        run = _run("score", "-m", "finerad_score", "-i", src, "-o", tmp_path / "out.jsonl", "--backend", "openai",
                   "--base-url", server.base_url, "--judge", "gpt-4", "--no-cache", "--no-progress", cwd=tmp_path)
        assert run.returncode == 0, run.stderr[-3000:]
        sent = [r["body"]["messages"] for r in server.requests]
    for case in OFFICIAL["cases"][:2]:
        assert case["gpt4_fewshot"]["messages"] in sent
    first_ask = chat_messages(radmetrics.get_scoring_system("finerad_score").build_prompt(**pairs[2]))
    reask = next(m for m in sent if len(m) == len(first_ask) + 2)
    assert reask[: len(first_ask)] == first_ask and reask[-2]["role"] == "assistant"
    assert reask[-1]["content"].startswith("The corrections above could not be read (")
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert all(r["parsed"] for r in rows) and rows[2]["corrected_report"] == "Small left effusion."
    with FakeOpenAIServer(analysis_for) as server:
        run = _run("score", "-m", "finerad_score", "-i", src, "-o", tmp_path / "c.jsonl", "--backend", "openai",
                   "--base-url", server.base_url, "--judge", "m", "--judge-option", "mode=completions", "--no-cache",
                   "--no-progress", cwd=tmp_path)
        texts = [r["body"]["prompt"] for r in server.requests]
    assert texts and all(t.startswith("Instructions: Return only a json object") for t in texts)
    assert CHAT_MARK not in "".join(texts)
    assert any(t.endswith(f"Ground Truth Text: {pairs[0]['reference']}") for t in texts)
    assert not str(tmp_path).startswith(str(REPO))


def test_each_reask_shows_the_judge_all_its_earlier_answers(tmp_path):
    """Review 13: re-asks 2..max_retries were byte-identical (the original prompt + only the latest answer), so a
    deterministic judge was paid for the same request 4 times. Each re-ask now continues the previous one."""
    src = tmp_path / "p.jsonl"
    src.write_text(json.dumps({"reference": "No pneumothorax.", "candidate": "Large right pneumothorax."}) + "\n")
    with FakeOpenAIServer(lambda prompt: "I cannot answer in JSON.") as server:
        run = _run("score", "-m", "finerad_score", "-i", src, "-o", tmp_path / "o.jsonl", "--backend", "openai",
                   "--base-url", server.base_url, "--judge", "m", "--no-cache", "--no-progress",
                   "--system-option", "max_retries=3", cwd=tmp_path)
        sent = [r["body"]["messages"] for r in server.requests]
    assert len(sent) == 4 and len({json.dumps(m) for m in sent}) == 4, run.stderr[-2000:]
    assert [len(m) for m in sent] == [12, 14, 16, 18]  # each re-ask: the judge's answer, then the request
    assert all(later[: len(earlier)] == earlier for earlier, later in zip(sent, sent[1:]))
    row = json.loads((tmp_path / "o.jsonl").read_text())
    assert row["finerad_score"] is None and len(row["details"]["attempts"]) == 3


def test_a_server_that_refuses_a_system_message_is_answered_with_the_layout_that_has_none(tmp_path):
    """Review 13: a server whose chat template has no system role (Gemma, Mistral behind vLLM) failed every row
    with HTTP 400 and nothing pointed to layout=claude3; that layout then scores the rows."""
    src = tmp_path / "p.jsonl"
    src.write_text(json.dumps({"reference": "Heart normal.", "candidate": "Heart normal."}) + "\n")

    def refuse_system(auth, n):
        return json.dumps({"error": {"message": "Conversation roles must alternate user/assistant; "
                                                "System role not supported"}}).encode()

    with FakeOpenAIServer(analysis_for, script=["400"], error_body=refuse_system) as server:
        run = _run("score", "-m", "finerad_score", "-i", src, "-o", tmp_path / "o.jsonl", "--backend", "openai",
                   "--base-url", server.base_url, "--judge", "m", "--no-cache", "--no-progress", cwd=tmp_path)
    assert run.returncode != 0 and "--system-option layout=claude3" in run.stderr, run.stderr[-2000:]
    with FakeOpenAIServer(lambda prompt: "{}") as server:
        run = _run("score", "-m", "finerad_score", "-i", src, "-o", tmp_path / "o2.jsonl", "--backend", "openai",
                   "--base-url", server.base_url, "--judge", "m", "--no-cache", "--no-progress",
                   "--system-option", "layout=claude3", cwd=tmp_path)
        assert all(m["role"] != "system" for r in server.requests for m in r["body"]["messages"])
    assert run.returncode == 0 and json.loads((tmp_path / "o2.jsonl").read_text())["finerad_score"] == 0.0


@pytest.mark.parametrize("option", ["layout=claude3", "few_shot=false"])
def test_the_other_layouts_score_end_to_end(option, tmp_path):
    pairs = [{"reference": "Heart normal.", "candidate": "Heart normal. Pulmonary edema."},
             {"reference": "Small left effusion.", "candidate": "Small left effusion. MALFORMED output."}]
    src = tmp_path / "p.jsonl"
    src.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    with FakeOpenAIServer(analysis_for) as server:
        run = _run("score", "-m", "finerad_score", "-i", src, "-o", tmp_path / "o.jsonl", "--backend", "openai",
                   "--base-url", server.base_url, "--judge", "m", "--no-cache", "--no-progress",
                   "--system-option", option, cwd=tmp_path)
        first = server.requests[0]["body"]["messages"]
    assert run.returncode == 0, run.stderr[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert [r["corrected_report"] for r in rows] == ["Heart normal.", "Small left effusion."]
    assert len(rows[1]["details"]["attempts"]) == 1  # cut short once, re-asked, then read
    assert first[0]["role"] == "user" and first[0]["content"].startswith("Instructions:")
    assert len(first) == (11 if option == "layout=claude3" else 1)
