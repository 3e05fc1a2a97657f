"""Pushing datasets to a Hub-compatible server on 127.0.0.1: private by default, gated on request,
PhysioNet-derived data never public; then loaded back from the server with `datasets`."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import FIXTURES, REPO
from hub_server import HubServer


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


def test_publish_metrics_uploads_each_module_as_a_space(hub, tmp_path):
    env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_TOKEN": "hf_testtoken_SECRET", "HF_HUB_OFFLINE": "0"}
    out = subprocess.run([sys.executable, "-m", "radmetrics.cli", "hub", "publish-metrics", "--namespace", "lab",
                          "--workdir", str(tmp_path / "spaces")], cwd=REPO, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    for name in ("green", "vert", "finerad_score", "radcliq_rubric", "er2score"):
        files = set(hub.files("space", f"lab/{name}"))
        assert {f"{name}.py", "README.md", "app.py", "requirements.txt"} <= files, (name, files)
        assert hub.repos[("space", f"lab/{name}")]["private"] is True
