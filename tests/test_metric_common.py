"""One test over every metric room (evaluate's test_metric_common): card sections, evaluate.load, examples."""
from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest
from conftest import REPO

from radmetrics.evaluate_modules import evaluate_module_files

MODULES = evaluate_module_files()
REQUIRED_SECTIONS = re.findall(r"^## (.+)$", (REPO / "hub_cards" / "metric.md").read_text(), re.M)


def test_every_builtin_metric_has_a_module():
    assert "green" in MODULES


@pytest.mark.parametrize("name", sorted(MODULES))
def test_card_has_required_sections(name):
    card = (MODULES[name].with_name("README.md")).read_text()
    assert card.startswith("---\n")  # Space front matter
    missing = [s for s in REQUIRED_SECTIONS if f"\n## {s}\n" not in card]
    assert not missing, f"{name} card lacks sections: {missing}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_loads_through_evaluate(name, monkeypatch):
    import evaluate

    monkeypatch.chdir(REPO)
    module = evaluate.load(str(Path(MODULES[name]).parent.relative_to(REPO)), backend="replay",
                           judge_options={"path": str(REPO / "radmetrics/sample_data/green_replay.jsonl")})
    assert module.info.features is not None and "predictions" in module.info.features
    assert module.info.citation.strip()


@pytest.mark.parametrize("name", sorted(MODULES))
def test_card_examples_run(name, monkeypatch):
    monkeypatch.chdir(REPO)
    card = MODULES[name].with_name("README.md").read_text()
    examples = card.split("## Examples", 1)[1].split("\n## ", 1)[0]
    code = "\n".join(re.findall(r"```python\n(.*?)```", examples, re.S))
    test = doctest.DocTestParser().get_doctest(code, {}, name, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert test.examples and runner.summarize(verbose=False).failed == 0
