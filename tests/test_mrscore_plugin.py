"""plugins/radmetrics-mrscore installed as a third-party distribution: found through the entry point,
scores, and loads through evaluate from another directory after `radmetrics install-metrics`."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import HUB_CARDS, REPO

PLUGIN = REPO / "plugins" / "radmetrics-mrscore"
ITEM_KEYS = ["impression_consistency", "impression_organ", "description_of_lesion", "clinical_history",
             "completeness", "grammar", "medical_terminology"]


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory):
    target = tmp_path_factory.mktemp("mrscore-site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(PLUGIN)], check=True)
    return {**os.environ, "PYTHONPATH": str(target)}


def run(code, env, cwd=REPO):
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_plugin_is_discovered_and_scores(plugin_env):
    answer = json.dumps({"Scoring": {k: (1 if k in ("impression_consistency", "grammar") else 0) for k in ITEM_KEYS},
                         "Final Score": 65})
    bad = json.dumps({"Scoring": {k: 2 for k in ITEM_KEYS}})
    # fidelity audit F15: an item left blank gave its weight back (100 for a judge that wrote 70)
    blank = json.dumps({"Scoring": {k: ("" if k == "impression_consistency" else 0) for k in ITEM_KEYS},
                        "Final Score": 70})
    code = (f"import radmetrics; print(radmetrics.list_scoring_systems()); s = radmetrics.get_scoring_system('mrscore');"
            f"print(s.parse({answer!r}).score); print(s.parse({bad!r}).reason); print(s.parse('oops').reason);"
            f"print(s.parse({blank!r}).reason)")
    out = run(code, plugin_env).splitlines()
    assert out[4] == "item 'impression_consistency' is left blank (''): expected 0/1 (or its weight 30)"
    assert "'mrscore'" in out[0]
    assert out[1] == "65.0"  # 100 - 30 - 5
    assert out[2] == "item 'impression_consistency' = 2: expected 0/1 (or its weight 30)"
    assert out[3] == "no JSON object in the output"


def test_reasoning_drafts_and_repeated_items_are_no_single_answer(plugin_env):
    """Review 29b: an item marked twice ("grammar": 1 then "grammar": 0) was read with its last mark (JSON keeps the
    last value), and a draft inside an open "<think>" (output cut while thinking) was scored."""
    marks = {k: 0 for k in ITEM_KEYS}
    answer = json.dumps({"Scoring": marks, "Final Score": 100})
    twice = answer.replace('"Scoring": {', '"Scoring": {"completeness": 1, ', 1)
    same = answer.replace('"Scoring": {', '"Scoring": {"completeness": "no", ', 1)
    draft = json.dumps({"Scoring": {k: 1 for k in ITEM_KEYS}, "Final Score": 0})
    code = (f"import radmetrics; s = radmetrics.get_scoring_system('mrscore');"
            f"print(s.parse({twice!r}).reason); print(s.parse({same!r}).score);"
            f"print(s.parse({'<think>draft ' + draft + ' hmm, grammar'!r}).reason);"
            f"print(s.parse({'<think>draft ' + draft + '</think>' + answer!r}).score)")
    out = run(code, plugin_env).splitlines()
    assert out[0] == "item 'completeness' is marked more than once, differently: no single answer"
    assert out[1] == "100.0"
    assert out[2] == "the output ends inside its <think> block, before an answer (cut off?)"
    assert out[3] == "100.0"


def test_plugin_card_has_required_sections():
    card = (PLUGIN / "radmetrics_mrscore" / "README.md").read_text()
    required = re.findall(r"^## (.+)$", (HUB_CARDS / "metric.md").read_text(), re.M)
    assert all(f"\n## {s}\n" in card for s in required)


@pytest.mark.slow
def test_evaluate_load_mrscore_from_another_directory(plugin_env, tmp_path):
    installed = subprocess.run([sys.executable, "-m", "radmetrics.cli", "install-metrics"], env=plugin_env,
                               capture_output=True, text=True, check=True).stdout
    assert "radmetrics/mrscore ->" in installed
    refs, cands = ["Heart normal. No effusion."], ["Heart normal."]
    prep = (f"import radmetrics, json; s = radmetrics.get_scoring_system('mrscore');"
            f"ans = json.dumps({{'Scoring': {{k: int(k == 'completeness') for k in {ITEM_KEYS!r}}}}});"
            f"open('replay.jsonl', 'w').write(json.dumps({{'prompt': s.build_prompt({refs[0]!r}, {cands[0]!r}),"
            f" 'response': ans}}))")
    run(prep, plugin_env, cwd=tmp_path)
    code = ("import evaluate; m = evaluate.load('radmetrics/mrscore', backend='replay', "
            f"judge_options={{'path': 'replay.jsonl'}}); o = m.compute(predictions={cands!r}, references={refs!r});"
            "print(o['mrscore'], o['error_rate']['completeness'])")
    assert run(code, plugin_env, cwd=tmp_path).split() == ["90.0", "1.0"]
