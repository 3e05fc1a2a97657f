"""Test set-up: no network, a private response cache and evaluate module cache per session, a tiny real
GREEN judge built offline, a fake judge registered through the real plugin manager."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

# Before anything imports huggingface_hub / evaluate: never reach for the Hub, never touch ~/.cache.
_SESSION_HOME = Path(tempfile.mkdtemp(prefix="radmetrics-tests-"))
os.environ.update(
    HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_EVALUATE_OFFLINE="1",
    HF_HOME=str(_SESSION_HOME / "hf"), HF_MODULES_CACHE=str(_SESSION_HOME / "hf_modules"),
    RADMETRICS_CACHE=str(_SESSION_HOME / "default-cache.sqlite"), TOKENIZERS_PARALLELISM="false",
    RADMETRICS_KERNEL_DIR=str(_SESSION_HOME / "kernels"),  # the compiled CPU attention kernel (cpu_attention)
)
sys.path.insert(0, str(Path(__file__).parent))

import pytest  # noqa: E402

import radmetrics  # noqa: E402
from radmetrics.hub_cards import package_folder  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
# What the package ships, wherever radmetrics is imported from (this checkout, or an installed wheel when the
# suite runs against one: .ci/run's wheel job sets RADMETRICS_TEST_INSTALLED=1 and runs from another directory).
PACKAGE = Path(radmetrics.__file__).resolve().parent
SAMPLE = PACKAGE / "sample_data"
HUB_CARDS = package_folder("hub_cards")
LM_EVAL_TASKS = package_folder("lm_eval_tasks")
INSTALLED = os.environ.get("RADMETRICS_TEST_INSTALLED") == "1"
if INSTALLED:
    if PACKAGE.parent == REPO:
        raise RuntimeError(f"RADMETRICS_TEST_INSTALLED=1 but radmetrics is imported from the checkout {PACKAGE}")
    # Tests start `python -m radmetrics.cli` (and scripts) with cwd=REPO; Python puts the cwd first on sys.path,
    # which would import the checkout's radmetrics. Safe-path mode (3.11+) keeps subprocesses on the wheel.
    os.environ["PYTHONSAFEPATH"] = "1"
    import subprocess

    seen = subprocess.run([sys.executable, "-c", "import radmetrics; print(radmetrics.__file__)"], cwd=REPO,
                          capture_output=True, text=True, check=True).stdout.strip()
    if Path(seen).resolve().parent != PACKAGE:
        raise RuntimeError(f"a subprocess started in {REPO} imports radmetrics from {seen}, not the wheel {PACKAGE}"
                           " (Python 3.11+ is needed for PYTHONSAFEPATH)")


@pytest.fixture(scope="session")
def session_home() -> Path:
    return _SESSION_HOME


@pytest.fixture(scope="session")
def tiny_judge(tmp_path_factory) -> Path:
    """A tiny Llama fine-tuned (300 steps, ~15 s on 2 CPU cores) to answer GREEN prompts in GREEN format."""
    import tiny_judge as recipe

    build = tmp_path_factory.mktemp("models") / "tiny-green-judge"
    shared = os.environ.get("RADMETRICS_TEST_MODELS")
    if not shared:  # CI and a first run: train it here
        return recipe.build_tiny_judge(build, steps=300)
    # Developers running many sessions side by side reuse one build per recipe and library version
    # (training is deterministic); set RADMETRICS_TEST_MODELS to a folder to opt in.
    import hashlib

    import torch
    import transformers

    key = hashlib.sha256(Path(recipe.__file__).read_bytes()
                         + f"{torch.__version__}/{transformers.__version__}".encode()).hexdigest()[:16]
    target = Path(shared) / f"tiny-green-judge-{key}"
    if not (target / "training.json").exists():
        recipe.build_tiny_judge(build, steps=300)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(build, target)  # atomic: a concurrent session either sees the whole model or builds its own
        except OSError:
            return build
    return target


@pytest.fixture(autouse=True)
def _seeded_randomness():
    """Global random state seeded before every test (the openai backend's retry jitter, anything drawing from
    `random` or numpy's global generator), so a failing test reproduces. Tests that draw on purpose use their
    own seeded generators (kill points, fuzzing, bootstrap)."""
    import random

    import numpy as np

    random.seed(18)
    np.random.seed(18)
    yield


@pytest.fixture(autouse=True)
def _fresh_judges():
    """Each test gets its own shared-judge table (the sharing itself is tested explicitly)."""
    from radmetrics.judge import clear_judges

    clear_judges()
    yield
    clear_judges()


@pytest.fixture
def fake_judge():
    """The fake GREEN judge, registered as backend "fake" through the plugin manager."""
    import fake_judge as module

    from radmetrics.plugins import register_plugin, unregister_plugin

    module.FakeGreenJudge.calls = 0
    module.FakeGreenJudge.fail_after = None
    register_plugin(module, name="fake-judge")
    yield module.FakeGreenJudge
    unregister_plugin(name="fake-judge")
