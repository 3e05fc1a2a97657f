"""Pushing datasets to a Hub-compatible server on 127.0.0.1: private by default, gated on request,
PhysioNet-derived data never public; then loaded back from the server with `datasets`."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import FIXTURES, PACKAGE, REPO
from hub_server import HubServer, card_metadata_errors


@pytest.fixture
def hub(tmp_path, monkeypatch):
    with HubServer(tmp_path / "hub") as server:
        yield server


def push(hub, *args):
    env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_TOKEN": "hf_testtoken_SECRET", "HF_HUB_OFFLINE": "0",
           "HF_HUB_DISABLE_TELEMETRY": "1"}
    return subprocess.run([sys.executable, "-m", "radmetrics.cli", "data", "push", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, env=env)


@pytest.fixture(scope="module")
def rexval_folder(tmp_path_factory):
    from radmetrics.data import convert

    return convert("rexval", FIXTURES / "rexval", tmp_path_factory.mktemp("ds") / "rexval")


def test_push_is_private_by_default_and_can_be_gated(hub, rexval_folder):
    out = push(hub, rexval_folder, "lab/rexval", "--gated", "manual")
    assert out.returncode == 0, out.stderr[-2000:]
    state = hub.repos[("dataset", "lab/rexval")]
    assert state["private"] is True and state["gated"] == "manual"
    assert "README.md" in hub.files("dataset", "lab/rexval")
    assert any(f.endswith(".arrow") for f in hub.files("dataset", "lab/rexval"))
    assert "hf_testtoken_SECRET" not in out.stdout + out.stderr
    assert "private, gated manual" in out.stdout


def test_physionet_data_is_never_pushed_publicly(hub, rexval_folder):
    out = push(hub, rexval_folder, "lab/rexval-public", "--public")
    assert out.returncode != 0 and "Refusing to push rexval publicly" in out.stderr
    assert ("dataset", "lab/rexval-public") not in hub.repos and not hub.requests


def test_public_push_of_other_data(hub, tmp_path):
    import datasets

    folder = tmp_path / "mine"
    datasets.Dataset.from_list([{"dataset": "my_reports", "reference": "a", "candidate": "b"}]).save_to_disk(str(folder))
    out = push(hub, folder, "lab/mine", "--public")
    assert out.returncode == 0, out.stderr[-2000:]
    assert hub.repos[("dataset", "lab/mine")]["private"] is False


def publish(hub, tmp_path, *extra):
    env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_TOKEN": "hf_testtoken_SECRET", "HF_HUB_OFFLINE": "0"}
    return subprocess.run([sys.executable, "-m", "radmetrics.cli", "hub", "publish-metrics", "--namespace", "lab",
                           "--workdir", str(tmp_path / "spaces"), *extra], cwd=tmp_path, capture_output=True,
                          text=True, env=env)


def test_publish_metrics_uploads_each_module_as_a_space_that_can_start(hub, tmp_path):
    if PACKAGE.parent != REPO:
        pytest.skip("the default wheel is built from the checkout radmetrics runs from; this one is installed")
    out = publish(hub, tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    for name in ("green", "vert", "finerad_score", "radcliq_rubric", "er2score"):
        files = set(hub.files("space", f"lab/{name}"))
        assert {f"{name}.py", "README.md", "app.py", "requirements.txt"} <= files, (name, files)
        wheels = [f for f in files if f.startswith("radmetrics-") and f.endswith(".whl")]
        assert len(wheels) == 1, files  # the radmetrics that app.py installs: a source that exists
        assert hub.repos[("space", f"lab/{name}")]["private"] is True
        folder = hub.folder("space", f"lab/{name}")
        card = (folder / "README.md").read_text()
        assert card_metadata_errors(card, "space") == []
        assert "sdk: gradio" in card and "sdk_version: 3.19.1" in card and "## Running this Space" in card
        requirements = (folder / "requirements.txt").read_text().splitlines()
        packages = [line for line in requirements if line and not line.startswith("#")]
        assert any(p.startswith("torch") for p in packages) and any(p.startswith("evaluate") for p in packages)
        assert not any(p.split("[")[0].split(">")[0].split("=")[0].strip() in {"radmetrics", "gradio"} for p in packages)
    assert "`StanfordAIMI/GREEN-RadLlama2-7b`" in (hub.folder("space", "lab/green") / "README.md").read_text()
    assert all(repo_type == "space" and errors == [] for repo_type, errors in hub.validated)


def test_space_app_loads_its_module_with_the_judge_from_the_space_variables(hub, tmp_path):
    out = publish(hub, tmp_path, "--radmetrics-source", "git+https://github.com/radmetrics/radmetrics@v0.1.0")
    assert out.returncode == 0, out.stderr[-2000:]
    folder = hub.folder("space", "lab/green")
    assert "radmetrics @ git+https://github.com/radmetrics/radmetrics@v0.1.0" in (folder / "requirements.txt").read_text()
    assert not list(folder.glob("*.whl"))
    # app.py as the Space runs it, with the widget launch replaced by a print (gradio 3 is not installed here)
    code = ("import evaluate.utils as u; u.launch_gradio_widget = lambda m: print('LAUNCH', m.name, m.backend, m.judge, "
            "m.judge_options); import runpy; runpy.run_path('app.py', run_name='__main__')")
    env = {**os.environ, "RADMETRICS_BACKEND": "openai", "RADMETRICS_JUDGE": "my-judge",
           "RADMETRICS_BASE_URL": "http://127.0.0.1:9/v1"}
    run = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "LAUNCH green openai my-judge {'base_url': 'http://127.0.0.1:9/v1'}" in run.stdout
