"""Installed as users install it: the README's first command works from any directory (also from a wheel),
the sample data is found through `radmetrics sample-path`, and the package metadata is complete."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import radmetrics

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_command(number: int) -> str:
    """The README's set-up command `number` (the line after '# <number>.' in its first bash block)."""
    if not README.exists():
        pytest.skip("README.md is not shipped with an installed wheel")
    block = re.search(r"## Set-up: two commands.*?```bash\n(.*?)```", README.read_text(), re.S).group(1)
    lines = block.splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith(f"# {number}."))
    return lines[index + 1]


def test_sample_path_finds_the_bundled_files(tmp_path):
    assert radmetrics.sample_path("pairs.jsonl").is_file()
    assert radmetrics.sample_path("green_replay.jsonl").is_file()
    out = subprocess.run([sys.executable, "-m", "radmetrics.cli", "sample-path", "pairs.jsonl"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.returncode == 0 and Path(out.stdout.strip()) == radmetrics.sample_path("pairs.jsonl")
    with pytest.raises(radmetrics.InputError, match="samples are pairs.jsonl, green_replay.jsonl"):
        radmetrics.sample_path("nope.jsonl")


def test_readme_command_1_runs_from_an_empty_directory(tmp_path):
    """Everything after the install step of README command 1, verbatim, in an empty directory."""
    command = readme_command(1)
    assert "pip install" in command and " && radmetrics install-metrics && " in command
    after_install = command[command.index("radmetrics install-metrics"):]
    scripts = Path(sys.executable).parent
    if not (scripts / "radmetrics").exists() or shutil.which("bash") is None:
        pytest.skip("no radmetrics console script beside this Python")
    env = {**os.environ, "PATH": f"{scripts}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run(["bash", "-c", after_install], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "radmetrics/green ->" in out.stdout
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 8 and sum(r["green"] is None for r in rows) == 1  # the truncated output; the empty
    # candidate is judged (GREEN 0)
    assert (tmp_path / "results.jsonl.summary.json").is_file()


def test_readme_metric_table_says_which_names_load_through_evaluate():
    """Bold names load with evaluate.load("radmetrics/<name>"); the others are CLI / radmetrics.score names."""
    from radmetrics.evaluate_modules import all_evaluate_modules

    if not README.exists():
        pytest.skip("README.md is not shipped with an installed wheel")
    table = README.read_text().split("| --- | --- | --- |", 1)[1].split("\n\n", 1)[0]
    first_cells = [line.split("|")[1] for line in table.strip().splitlines()]
    bold = {name for cell in first_cells for name in re.findall(r"\*\*`(\w+)`\*\*", cell)}
    cells = [re.sub(r"\(was [^)]*\)", "", cell.split("(through")[0]) for cell in first_cells]  # old names
    named = {name for cell in cells for name in re.findall(r"`(\w+)`", cell)}
    modules = set(all_evaluate_modules())
    assert bold - {"mrscore"} <= modules  # mrscore: once its plugin distribution is installed
    assert not (named - bold) & modules
    assert (named - bold) <= set(radmetrics.list_scoring_systems())
