"""One test over every metric room (evaluate's test_metric_common): card sections, evaluate.load, examples."""
from __future__ import annotations

import doctest
import math
import re

import pytest
from conftest import HUB_CARDS, PACKAGE, SAMPLE

from green_answers import f1_score, formula_score, green_score

import radmetrics

from radmetrics.runner import read_answer
from radmetrics.evaluate_modules import all_evaluate_modules, evaluate_module_files

MODULES = evaluate_module_files()  # judge metrics
ALL_MODULES = all_evaluate_modules()  # + ER2Score
REQUIRED_SECTIONS = re.findall(r"^## (.+)$", (HUB_CARDS / "metric.md").read_text(), re.M)


def test_every_builtin_metric_has_a_module():
    assert "green" in MODULES


@pytest.mark.parametrize("name", sorted(ALL_MODULES))
def test_card_has_required_sections(name):
    card = (ALL_MODULES[name].with_name("README.md")).read_text()
    assert card.startswith("---\n")  # Space front matter
    missing = [s for s in REQUIRED_SECTIONS if f"\n## {s}\n" not in card]
    assert not missing, f"{name} card lacks sections: {missing}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_loads_through_evaluate(name, monkeypatch):
    import evaluate

    monkeypatch.chdir(PACKAGE.parent)
    module = evaluate.load(str(MODULES[name].relative_to(PACKAGE.parent)), backend="replay",
                           judge_options={"path": str(SAMPLE / "green_replay.jsonl")})
    assert module.info.features is not None and "predictions" in module.info.features
    assert module.info.citation.strip()


@pytest.mark.parametrize("name", sorted(ALL_MODULES))
def test_card_examples_run(name, monkeypatch):
    monkeypatch.chdir(PACKAGE.parent)
    card = ALL_MODULES[name].with_name("README.md").read_text()
    examples = card.split("## Examples", 1)[1].split("\n## ", 1)[0]
    code = "\n".join(re.findall(r"```python\n(.*?)```", examples, re.S))
    test = doctest.DocTestParser().get_doctest(code, {}, name, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert test.examples and runner.summarize(verbose=False).failed == 0


REFS = ["Small left pleural effusion. No pneumothorax.", "Cardiomegaly with mild edema.", "Normal chest."]
CANDS = ["Small left pleural effusion.", "Cardiomegaly. Pulmonary nodule.", "Normal chest."]


#: the GREEN family's scores of the fake judge's seeded answers, from the papers' formulas (tests/green_answers.py)
FROM_COUNTS = {"green": lambda s, i, m: green_score(s, m), "green_f1": lambda s, i, m: f1_score(s, m),
               "green_ec": lambda s, i, m: float(sum(s.values())), "green_formula": formula_score,
               "green_total_errors": lambda s, i, m: float(sum(s.values()) + sum(i.values()))}


def expected_scores(name):
    """Per row: the GREEN family from the formulas; any other system's score of its own sample answer (what
    the fake judge sends), read directly — so the run must deliver exactly that, through every layer."""
    import fake_judge

    if name in FROM_COUNTS:
        return [FROM_COUNTS[name](*fake_judge.green_counts(r, c)) for r, c in zip(REFS, CANDS)]
    system = radmetrics.get_scoring_system(name)
    return [read_answer(system, system.sample_answer(r, c), r, c).score for r, c in zip(REFS, CANDS)]


@pytest.mark.parametrize("name", radmetrics.list_scoring_systems())
def test_every_scoring_system_scores_through_a_plugged_in_fake_judge(name, fake_judge):
    result = radmetrics.score(name, REFS, CANDS, backend="fake", cache=False, progress=False)
    assert result.summary["num_unscored"] == 0, [j.reason for j in result.judgments]
    expected = expected_scores(name)
    assert all(math.isfinite(x) for x in expected)
    system = radmetrics.get_scoring_system(name)
    assert result.scores == pytest.approx(expected)
    assert result.summary[system.score_key] == pytest.approx(sum(expected) / len(expected))
    assert result.fingerprint["scoring_system"] == name and result.fingerprint["prompt_version"]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_computes_through_evaluate_with_the_fake_judge(name, fake_judge, monkeypatch):
    import evaluate

    monkeypatch.chdir(PACKAGE.parent)
    module = evaluate.load(str(MODULES[name].relative_to(PACKAGE.parent)), backend="fake", cache=False, progress=False)
    out = module.compute(predictions=CANDS, references=REFS)
    key = radmetrics.get_scoring_system(name).score_key
    expected = expected_scores(name)
    assert out["num_unscored"] == 0 and out["scores"] == pytest.approx(expected)
    assert out[key] == pytest.approx(sum(expected) / len(expected))


@pytest.mark.parametrize("name", sorted(MODULES))
def test_numbers_given_to_a_module_are_unscored_as_radmetrics_score_leaves_them(name, fake_judge, monkeypatch):
    """Review 19 (7): evaluate's string features turned an int prediction (123) or a float reference (0.5) into
    text before _compute, and the judge was asked to grade "123". The module leaves them unscored with the reason
    radmetrics.score gives; text rows are judged as before, also when added with add / add_batch."""
    import evaluate

    monkeypatch.chdir(PACKAGE.parent)
    module = evaluate.load(str(MODULES[name].relative_to(PACKAGE.parent)), backend="fake", cache=False, progress=False)
    out = module.compute(predictions=[CANDS[0], 123, CANDS[2]], references=[REFS[0], REFS[1], 0.5])
    reasons = [d["reason"] for d in out["details"]]
    assert reasons[1:] == ["row 1: candidate is int, not text", "row 2: reference is float, not text"]
    assert out["num_unscored"] == 2 and out["scores"][0] == pytest.approx(expected_scores(name)[0])
    # review 24 (M2): a first value that is not text (evaluate checks only the first) is unscored the same way
    first = module.compute(predictions=[None, 5, CANDS[2]], references=[REFS[0], REFS[1], REFS[2]])
    assert [d["reason"] for d in first["details"]] == ["row 0: candidate is missing (None)",
                                                       "row 1: candidate is int, not text", None]
    assert first["scores"][:2] == [None, None] and first["scores"][2] == pytest.approx(expected_scores(name)[2])
    module.add(prediction=CANDS[0], reference=REFS[0])
    module.add_batch(predictions=[CANDS[1], 7], references=[REFS[1], REFS[1]])
    again = module.compute()
    # rows in the order evaluate hands them to _compute: as added, or (evaluate 0.4.1 with datasets 3.0) add()'s
    # row after add_batch()'s
    assert [d["reason"] for d in again["details"]] in ([None, None, "row 2: candidate is int, not text"],
                                                       [None, "row 1: candidate is int, not text", None])



@pytest.mark.parametrize("name", sorted(MODULES))
def test_one_string_instead_of_a_list_is_refused_not_judged_per_character(name, fake_judge, monkeypatch):
    """Review 27 (M2): compute(predictions="Heart normal.", references="Heart normal.") judged each character as a
    report (13 judge calls, a mean over characters); radmetrics.score did the same."""
    import evaluate

    from radmetrics.errors import InputError

    monkeypatch.chdir(PACKAGE.parent)
    module = evaluate.load(str(MODULES[name].relative_to(PACKAGE.parent)), backend="fake", cache=False, progress=False)
    with pytest.raises(InputError, match=r"is one str \('Heart normal.'\), not a list of reports"):
        module.compute(predictions="Heart normal.", references="Heart normal.")  # same length: no mismatch error
    with pytest.raises(InputError, match=r"predictions is one str \('Heart normal.'\), not a list of reports"):
        module.compute(predictions="Heart normal.", references=[REFS[0]])
    with pytest.raises(InputError, match="references is one str"):
        module.compute(predictions=[CANDS[0]], references=REFS[0])
    with pytest.raises(InputError, match="references is one str"):
        radmetrics.score(name, "ab", "cd", backend="fake", cache=False, progress=False)
    assert module.compute(predictions=[CANDS[0]], references=[REFS[0]])["num_unscored"] == 0
    # review 39b: None, a generator or a number was "TypeError: object of type 'NoneType' has no len()" from evaluate
    with pytest.raises(InputError, match=r"^predictions is None, not a list of reports"):
        module.compute(predictions=None, references=[REFS[0]])
    with pytest.raises(InputError, match=r"^predictions is generator, not a list of reports: pass a list \(list"):
        module.compute(predictions=(c for c in CANDS[:1]), references=[REFS[0]])
    with pytest.raises(InputError, match=r"^candidates is int, not a list of reports"):
        radmetrics.score(name, [REFS[0]], 5, backend="fake", cache=False, progress=False)
    import numpy as np

    assert module.compute(predictions=np.array(CANDS[:2]), references=np.array(REFS[:2]))["num_unscored"] == 0

def test_a_number_keeps_its_verdict_when_evaluate_hands_the_rows_in_another_order(fake_judge, monkeypatch):
    """Review 21 (M2): add("7", R1) then add_batch(["7", 7], [R2, R3]); evaluate 0.4.1 with datasets 3.0 hands
    _compute add_batch()'s rows first. Matched column by column, the predictions ("7", "7", "7") passed as in
    order, so the int given with R3 was judged as text and the text row of R1 was unscored. Pairs are matched."""
    import evaluate

    monkeypatch.chdir(PACKAGE.parent)
    module = evaluate.load(str(MODULES["green"].relative_to(PACKAGE.parent)), backend="fake", cache=False,
                           progress=False)
    module._given = (["7", "7", 7], [REFS[0], REFS[1], REFS[2]])  # what add/add_batch recorded, as given
    out = module._compute(predictions=["7", "7", "7"], references=[REFS[1], REFS[2], REFS[0]])
    assert [d["reason"] for d in out["details"]] == [None, "row 1: candidate is int, not text", None]
