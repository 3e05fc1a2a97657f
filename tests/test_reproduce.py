"""Every command of REPRODUCE.md runs end to end on the fixtures and writes its table.

The commands are read from REPRODUCE.md itself (each ```bash block under a `### ` heading) and adapted only in
what cannot exist here: fixture paths for the datasets, a real OpenAI-compatible server on 127.0.0.1 (answering
like the fake judge) for every judge, a tiny untrained ER²Score model, fewer bootstrap resamples, and without the
baselines whose downloads or libraries are not here (bertscore's model, METEOR's WordNet, the clinical baselines'
libraries and weights)."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys

import pytest
from conftest import FIXTURES, REPO
from fake_judge import analysis_for
from openai_server import FakeOpenAIServer


def reproduce_commands() -> list[tuple[str, str]]:
    text = (REPO / "REPRODUCE.md").read_text()
    out = []
    for section in re.split(r"^### ", text, flags=re.M)[1:]:
        title = section.splitlines()[0].split(" — ")[0].strip()
        for block in re.findall(r"```bash\n(.*?)```", section, re.S):
            out.append((title, block.strip()))
    return out


COMMANDS = reproduce_commands()


def test_reproduce_lists_the_tables():
    titles = [t for t, _ in COMMANDS]
    for table in ("GREEN Table 6", "GREEN Table 7", "ER²Score Table 1", "ER²Score Table 2", "FineRadScore Table 10",
                  "VERT Table 1", "VERT Table 4", "VERT Table 5", "ReXamine-Global Tables 2, 3, 4"):
        assert any(t.startswith(table) for t in titles), table


@pytest.fixture(scope="module")
def er2_model(tmp_path_factory):
    from tiny_judge import build_tiny_base

    from radmetrics.er2score import CRITERIA
    from radmetrics.er2score.model import MultiRewardModel

    folder = tmp_path_factory.mktemp("er2")
    return MultiRewardModel.new(str(build_tiny_base(folder / "base")), CRITERIA["radcliq"]).save(folder / "er2")


CLINICAL = ("radgraph-f1", "f1chexbert", "ratescore", "radcliq-v1")


def _cannot_run_here(baseline: str) -> bool:
    from radmetrics.baselines import check_baseline
    from radmetrics.errors import RadmetricsError

    try:
        check_baseline(baseline)
    except RadmetricsError:
        return True
    return False


def adapt(command: str, server_url: str, er2: str, out: str, cache: str) -> list[str]:
    args = shlex.split(command)
    assert args[0] == "radmetrics"
    fixed = []
    for arg in args[1:]:
        arg = (arg.replace("data/rexval", str(FIXTURES / "rexval")).replace("data/radeval", str(FIXTURES / "radeval"))
               .replace("data/rate_eval", str(FIXTURES / "rate_eval"))
               .replace("data/preferences.jsonl", str(FIXTURES / "preference" / "preferences.jsonl"))
               .replace("data/rexamine_sites.jsonl", str(FIXTURES / "rexamine" / "sites.jsonl"))
               .replace("er2score:model=er2/", f"er2score:model={er2}").replace("$OPENAI_BASE_URL", server_url))
        fixed.append(arg)
    # bertscore's model and METEOR's WordNet cannot be downloaded here, nor can a clinical library be installed or its
    # weights downloaded, and a run stops before judging without them (test_baselines.py): left out
    for needs_download in ("bertscore", "meteor", *(m for m in CLINICAL if _cannot_run_here(m))):
        while needs_download in fixed:
            at = fixed.index(needs_download)
            assert fixed[at - 1] in ("-m", "--metric")
            del fixed[at - 1:at + 1]
    if "--output" not in fixed and "-o" in fixed:
        fixed[fixed.index("-o") + 1] = out
    if "--split" in fixed:  # the fixture has 20 ReXVal pairs, not 200
        fixed[fixed.index("--split") + 1] = "10"
    if "--backend" not in fixed and "--judge" in fixed:  # the published judge -> the local server
        fixed += ["--backend", "openai", "--base-url", server_url]
    return fixed + ["--resamples", "30", "--cache", cache]


@pytest.mark.slow
@pytest.mark.parametrize("title, command", COMMANDS, ids=[t for t, _ in COMMANDS])
def test_reproduce_command_runs_on_the_fixtures(title, command, tmp_path, er2_model):
    out = tmp_path / "out"
    with FakeOpenAIServer(analysis_for) as server:
        args = adapt(command, server.base_url, str(er2_model), str(out), str(tmp_path / "c.sqlite"))
        run = subprocess.run([sys.executable, "-m", "radmetrics.cli", *args], capture_output=True, text=True,
                             cwd=REPO, env=os.environ.copy(), timeout=900)
    # exit 2 when a metric could not run (here: clinical baselines without their Hub weights); the report is written
    assert run.returncode in (0, 2), run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    results = json.loads((out / "results.json").read_text(), parse_constant=lambda c: pytest.fail(c))
    assert (out / "summary.md").read_text().startswith("# ")
    if "t_tests" in results:  # rexamine: metrics that could not run are listed with their reason
        assert results["t_tests"] and set(results["failed_metrics"]) <= {"bertscore", "f1chexbert", "radcliq-v1",
                                                                        "radgraph-f1"}
        return
    for metric in results["metrics"].values():
        # every metric is a table row: computed, or n/a with its reason (clinical weights are not downloadable here)
        assert metric.get("failed") or metric.get("error") or metric.get("kendall_tau_b") \
            or metric.get("accuracy") is not None
    computed = [m for m, v in results["metrics"].items() if not (v.get("failed") or v.get("error"))]
    assert computed, f"{title}: nothing computed"
