"""A new metric added the way ARCHITECTURE.md says, without touching radmetrics: a throwaway scoring system in a
temporary package, registered through the `radmetrics` entry point, scored through evaluate, the CLI and a
real lm_eval run (lm-eval's dummy model answers; the task reuses radmetrics' task template)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import FIXTURES, LM_EVAL_TASKS

SYSTEM = '''
"""Extra words: the judge lists the candidate's findings the reference lacks; score = how many it listed."""
import re
from pathlib import Path

import radmetrics
from radmetrics.scoring import ScoringSystem, word_comparison


class ExtraWords(ScoringSystem):
    name = score_key = "extra_words"
    higher_is_better = False
    evaluate_module = str(Path(__file__).with_name("extra_words.py"))

    def build_prompt(self, reference, candidate):
        return (f"List, one per line, what the candidate says that the reference does not.\\n"
                f"Reference: {reference}\\nCandidate: {candidate}\\nList:")

    def sample_answer(self, reference, candidate):
        return "\\n".join(word_comparison(reference, candidate)[1]) or "nothing"

    def parse(self, text):
        if not isinstance(text, str) or not text.strip():
            return radmetrics.Judgment.unscored("empty answer", raw=text or "")
        items = [line for line in text.splitlines() if line.strip() and line.strip() != "nothing"]
        return radmetrics.Judgment(score=float(len(items)), parsed=True, raw=text)


@radmetrics.hookimpl
def register_scoring_systems(register):
    register(ExtraWords())
'''

EVALUATE_MODULE = '''
"""Extra words as an evaluate module."""
import evaluate

from radmetrics import evaluate_support


class ExtraWords(evaluate_support.JudgeMetric):
    scoring_system_name = "extra_words"
    description = "How many findings the candidate adds (a throwaway metric of the tests)."
'''

PYPROJECT = '''
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "radmetrics-extra-words"
version = "0.0.1"
dependencies = ["radmetrics"]

[project.entry-points.radmetrics]
extra_words = "extra_words_metric"

[tool.setuptools]
packages = ["extra_words_metric"]
'''

REFS = ["Heart size normal. Lungs clear.", "Small left effusion."]
CANDS = ["Heart size normal. Lungs clear. Rib fracture.", "Small left effusion."]


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory):
    source = tmp_path_factory.mktemp("extra-words-src")
    package = source / "extra_words_metric"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(SYSTEM))
    (package / "extra_words.py").write_text(textwrap.dedent(EVALUATE_MODULE))
    (source / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))
    target = tmp_path_factory.mktemp("extra-words-site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(source)], check=True)
    return {**os.environ, "PYTHONPATH": str(target)}


def python(code: str, env, cwd):
    run = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


@pytest.fixture(scope="module")
def replay(plugin_env, tmp_path_factory):
    """The judge: the system's own sample answers, recorded as a replay file."""
    folder = tmp_path_factory.mktemp("extra-words-replay")
    python(f"import json, radmetrics; s = radmetrics.get_scoring_system('extra_words'); "
           f"open('replay.jsonl', 'w').write('\\n'.join(json.dumps({{'prompt': s.build_prompt(r, c), "
           f"'response': s.sample_answer(r, c)}}) for r, c in zip({REFS!r}, {CANDS!r})))", plugin_env, folder)
    return folder / "replay.jsonl"


@pytest.mark.slow
def test_scored_through_evaluate(plugin_env, replay, tmp_path):
    installed = subprocess.run([sys.executable, "-m", "radmetrics.cli", "install-metrics"], env=plugin_env,
                               capture_output=True, text=True, check=True).stdout
    assert "radmetrics/extra_words ->" in installed
    out = python(f"import evaluate; m = evaluate.load('radmetrics/extra_words', backend='replay', "
                 f"judge_options={{'path': {str(replay)!r}}}, progress=False); "
                 f"o = m.compute(predictions={CANDS!r}, references={REFS!r}); print(o['scores'], o['extra_words'])",
                 plugin_env, tmp_path)
    assert out.split() == ["[2.0,", "0.0]", "1.0"]  # "rib", "fracture." | nothing


def test_scored_through_the_cli(plugin_env, replay, tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("\n".join(json.dumps({"reference": r, "candidate": c}) for r, c in zip(REFS, CANDS)))
    run = subprocess.run([sys.executable, "-m", "radmetrics.cli", "score", "-m", "extra_words", "-i", str(pairs),
                          "-o", str(tmp_path / "out.jsonl"), "--replay", str(replay), "--no-progress"],
                         env=plugin_env, capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["extra_words"] for r in rows] == [2.0, 0.0] and all(r["parsed"] for r in rows)


@pytest.mark.slow
def test_scored_through_lm_eval(plugin_env, tmp_path):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "rexval_extra_words.yaml").write_text(
        f"include: {LM_EVAL_TASKS / '_judge_template.yaml'}\ntask: rexval_extra_words\n"
        "metadata:\n  version: 1.0\n  dataset: rexval\n  scoring_system: extra_words\n  chat_format: none\n")
    run = subprocess.run([sys.executable, "-m", "lm_eval", "--model", "dummy", "--tasks", "rexval_extra_words",
                          "--include_path", str(tasks), "--metadata", json.dumps({"rexval_path": str(FIXTURES / "rexval")}),
                          "--output_path", str(tmp_path / "out"), "--log_samples"],
                         env=plugin_env, capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-4000:]
    results = json.loads(next((tmp_path / "out").rglob("results_*.json")).read_text())
    samples = [json.loads(x) for x in next((tmp_path / "out").rglob("samples_*.jsonl")).read_text().splitlines()]
    assert results["results"]["rexval_extra_words"]["unparsed,none"] == 0.0  # the dummy's "lol" is one item
    assert len(samples) == 20 and samples[0]["arguments"]["gen_args_0"]["arg_0"].startswith("List, one per line")
