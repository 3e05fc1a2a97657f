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


@pytest.mark.slow
def test_readme_metric_table_is_true_through_evaluate(tmp_path):
    """Every name in the README's metric table is reached through evaluate as the table says: a bold name with
    evaluate.load("radmetrics/<name>") from another directory after `radmetrics install-metrics` (plugin rows:
    tests/test_mrscore_plugin.py), any other name from the route its row names after "through evaluate:",
    each run here for real (replay answers, the sample's for GREEN and the scoring systems' own for VERT)."""
    if not README.exists():
        pytest.skip("README.md is not shipped with an installed wheel")
    table = README.read_text().split("| --- | --- | --- |", 1)[1].split("\n\n", 1)[0]
    first_cells = [line.split("|")[1] for line in table.strip().splitlines()]
    routes = {}
    for cell in first_cells:
        bold = re.findall(r"\*\*`(\w+)`\*\*", cell)
        names = re.findall(r"`(\w+)`", re.sub(r"\((was|plugin) [^)]*\)", "", cell.split("through evaluate:")[0]))
        for name in names:
            assert name in bold or "through evaluate:" in cell, f"README metric table: how is {name} reached?"
            routes[name] = "load" if name in bold else cell.split("through evaluate:")[1]
    assert {"green", "green_f1", "vert_formula", "vert_rubric"} <= set(routes)
    assert "`derived`" in routes["green_f1"] and '"formula"' in routes["vert_formula"]
    plugin_rows = {n for c in first_cells if "(plugin " in c for n in re.findall(r"\*\*`(\w+)`\*\*", c)}

    vert_replay = tmp_path / "vert_replay.jsonl"
    pairs = [json.loads(line) for line in radmetrics.sample_path("pairs.jsonl").read_text().splitlines()][:3]
    with vert_replay.open("w") as fh:
        for variant in ("vert_formula", "vert_rubric"):
            system = radmetrics.get_scoring_system(variant)
            for p in pairs:
                fh.write(json.dumps({"prompt": system.build_prompt(p["reference"], p["candidate"]),
                                     "response": system.sample_answer(p["reference"], p["candidate"])}) + "\n")
    code = f"""
import json, evaluate
loaded = {{n: evaluate.load("radmetrics/" + n).name for n in {sorted(n for n, r in routes.items() if r == "load"
                                                                   and n not in plugin_rows)!r}}}
refs, cands = {[p["reference"] for p in pairs]!r}, {[p["candidate"] for p in pairs]!r}
green = evaluate.load("radmetrics/green", backend="replay", judge_options={{"path": {str(radmetrics.sample_path(
    "green_replay.jsonl"))!r}}}, cache=False, progress=False).compute(predictions=cands, references=refs)
variants = {{v: evaluate.load("radmetrics/vert", backend="replay", judge_options={{"path": {str(vert_replay)!r}}},
                              cache=False, progress=False, system_options={{"variant": v}})
             .compute(predictions=cands, references=refs) for v in ("formula", "rubric")}}
print(json.dumps({{"loaded": loaded, "derived": green["derived"], "green_unscored": green["num_unscored"],
                  "vert_unscored": {{v: o["num_unscored"] for v, o in variants.items()}}}}))
"""
    installed = subprocess.run([sys.executable, "-m", "radmetrics.cli", "install-metrics"], cwd=tmp_path,
                               capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert set(out["loaded"]) == {n for n, r in routes.items() if r == "load"} - plugin_rows
    assert {"green_f1", "green_ec", "green_total_errors", "green_formula"} <= set(out["derived"])
    assert all(v is not None for v in out["derived"].values()) and out["green_unscored"] == 0
    assert out["vert_unscored"] == {"formula": 0, "rubric": 0}  # every prompt was the variant's own
