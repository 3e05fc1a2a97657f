"""The scoring contract (radmetrics/scoring.py), the error taxonomy, the JSON reader: what every room relies on.

Also the two bugs the contract removed: VERT with --summary / summary=True raised TypeError after writing its
rows, and meta-eval read RadCliQ's counts by letter (all 0) while lm-eval summed them.
"""
from __future__ import annotations

import importlib.util
import json
import logging

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, LM_EVAL_TASKS, PACKAGE

import radmetrics
from radmetrics.conversation import flatten
from radmetrics.json_answer import AnswerError, load_json_object, load_json_tolerant
from radmetrics.scoring import ScoringSystem
from radmetrics.taxonomy import CATEGORIES, LETTERS, RADCLIQ_KEYS, ErrorCounts, read_radcliq_errors

REFS = ["Small left effusion. No pneumothorax.", "Heart size normal. Lungs clear.", "Mild cardiomegaly."]
CANDS = ["Small left effusion. Tiny nodule.", "Heart size normal.", "Mild cardiomegaly. Right effusion."]
ROOMS = ["green", "green_f1", "green_ec", "green_formula", "vert", "vert_formula", "vert_rubric", "vert_ft",
         "finerad_score", "radcliq_rubric"]


# -- every room ships a sample answer that its own parser scores -----------------------------------------------
@pytest.mark.parametrize("name", ROOMS)
def test_sample_answer_is_read_and_prompt_pair_round_trips(name):
    system = radmetrics.get_scoring_system(name)
    for ref, cand in zip(REFS, CANDS):
        prompt = system.build_prompt(ref, cand)
        reference, candidate = system.pair_in_prompt(prompt)
        assert system.build_prompt(reference, candidate) == prompt
        judgment = radmetrics.runner.read_answer(system, system.sample_answer(ref, cand), ref, cand)
        assert judgment.parsed and judgment.score is not None, judgment.reason


def test_pair_in_prompt_is_exact():
    green, vert = radmetrics.get_scoring_system("green"), radmetrics.get_scoring_system("vert")
    assert green.pair_in_prompt(vert.build_prompt("a", "b")) is None  # VERT's prompt is not GREEN's
    assert vert.pair_in_prompt(green.build_prompt("a", "b")) is None
    assert green.pair_in_prompt("Objective: something else") is None
    finerad = radmetrics.get_scoring_system("finerad_score")
    prompt = finerad.build_prompt("Heart normal.", "Tube 2.2 cm above the carina. No effusion.")
    assert finerad.pair_in_prompt(prompt) == ("Heart normal.", "Tube 2.2 cm above the carina. No effusion.")
    reask = finerad.retry_prompt(prompt, radmetrics.Judgment.unscored("not JSON", raw="previous answer"), 1)
    assert finerad.pair_in_prompt(reask) == ("Heart normal.", "Tube 2.2 cm above the carina. No effusion.")
    assert finerad.pair_in_prompt(finerad.build_prompt("Heart normal.", "Other.")[:-3]) is None  # cut short


# -- typed error counts --------------------------------------------------------------------------------------
def test_every_counting_room_fills_error_counts_by_letter():
    green = radmetrics.get_scoring_system("green").parse(radmetrics.get_scoring_system("green").sample_answer(
        REFS[0], CANDS[0]))
    assert green.error_counts.significant_list() == [2, 0, 0, 0, 0, 0] and green.significant_errors() == [2, 0, 0, 0, 0, 0]
    radcliq = radmetrics.get_scoring_system("radcliq_rubric").parse(json.dumps({"errors": {
        "false_prediction": {"significant": 1, "insignificant": 2}, "omission": 3, "incorrect_location": 0,
        "incorrect_severity": {"significant": 0, "insignificant": 1}, "comparison_not_present": 0,
        "omission_of_comparison": {"significant": 4}}}))
    assert radcliq.error_counts.significant_list() == [1, 3, 0, 0, 0, 4]
    assert radcliq.error_counts.insignificant == {"a": 2, "b": 0, "c": 0, "d": 1, "e": 0, "f": 0}
    assert radcliq.significant["omission"] == 3  # the rubric's own keys stay in its output
    vert = radmetrics.get_scoring_system("vert")
    assert vert.parse(vert.sample_answer(REFS[2], CANDS[2])).significant_errors() == [2, 0, 0, 0, 0, 0]
    assert vert.parse("[Overall Accuracy Score]: 0.5").error_counts is None  # no analysis, no counts
    assert radmetrics.get_scoring_system("finerad_score").parse("{}").error_counts is None
    unread = radmetrics.get_scoring_system("green").parse("truncated [Clinically")
    assert unread.significant_errors() is None


def test_taxonomy_is_the_wording_each_prompt_uses():
    green_prompt = radmetrics.get_scoring_system("green").build_prompt("r", "c")
    finerad_prompt = flatten(radmetrics.get_scoring_system("finerad_score").build_prompt("r", "c"))
    radcliq_prompt = radmetrics.get_scoring_system("radcliq_rubric").build_prompt("r", "c")
    for number, c in enumerate(CATEGORIES, 1):
        assert f"    {c.letter}) {c.green}.\n" in green_prompt  # GREEN's official prompt
        assert f"                {number}. {c.finerad}\n" in finerad_prompt  # upstream's PROMPT_LONG
        assert f"- {c.radcliq_label}\n" in radcliq_prompt and f'"{c.radcliq_key}"' in radcliq_prompt
    assert LETTERS == ("a", "b", "c", "d", "e", "f") and len(set(RADCLIQ_KEYS)) == 6


def test_radcliq_errors_reader():
    counts = read_radcliq_errors(dict.fromkeys(RADCLIQ_KEYS, "1"))
    assert counts == ErrorCounts.from_letters(dict.fromkeys(LETTERS, 1), dict.fromkeys(LETTERS, 0))
    with pytest.raises(ValueError, match="category 'omission' missing"):
        read_radcliq_errors({"false_prediction": 1})
    assert read_radcliq_errors({"omission": 2}, missing_as_zero=True).significant_list() == [0, 2, 0, 0, 0, 0]


# -- the tolerant JSON reader --------------------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    pytest.param('{"a": 1}', {"a": 1}, id="plain"),
    pytest.param('Sure!\n```json\n{"a": [1, 2,],}\n```\nDone.', {"a": [1, 2]}, id="fenced-trailing-commas"),
    pytest.param("{'a': 'it''s', 'b': None, 'c': true}", {"a": "its", "b": None, "c": True}, id="python-literal"),
    pytest.param('{"a": "a } inside"} trailing {', {"a": "a } inside"}, id="brace-in-string"),
    # fidelity audit F6: the first object was read even when it was a mention, not the answer
    pytest.param('Unlike Example 5 ({}), errors here: {"0": {"x": 1}}', {"0": {"x": 1}}, id="empty-mention-first"),
    pytest.param('```json\n{}\n```\nActually:\n```json\n{"a": 2}\n```', {"a": 2}, id="empty-fence-first"),
    pytest.param('The {report} has it: {"a": 1}', {"a": 1}, id="prose-braces"),
    pytest.param('```json\n{"a": 1}\n```\nSo the answer is {"a": 1}.', {"a": 1}, id="same-answer-twice"),
    pytest.param("The patient's film {'a': 1}", {"a": 1}, id="apostrophe-in-prose"),
    pytest.param("{}", {}, id="empty-answer"),
])
def test_json_reader_reads(text, expected):
    assert load_json_tolerant(text) == expected


@pytest.mark.parametrize("text, message, retryable", [
    pytest.param("no json here", "no JSON object", True, id="none"),
    pytest.param('{"a": [1, 2', "not closed", True, id="truncated"),
    pytest.param('{"a": nope}', "malformed JSON", True, id="malformed"),
    pytest.param("[1, 2]", "no JSON object", True, id="list-without-object"),
    pytest.param('Format: {"total": 0}\nAnswer: {"total": 2}', "2 different JSON objects: no single answer", True,
                 id="template-then-answer"),
    pytest.param('Format: {"total": 0}\nAnswer: {"total": 2', "not closed", True, id="template-then-truncated"),
    pytest.param('Format: {"total": 0}\nAnswer: {"total": two}', "beside another JSON object", True,
                 id="template-then-malformed"),
    # FineRadScore drift audit: a final {} after an object was dropped as a mention and the object scored
    pytest.param('{"1": {"x": 1}}\nOn reflection, final answer: {}', "empty {} after a non-empty", True,
                 id="object-then-empty"),
])
def test_json_reader_errors_say_whether_a_reask_can_help(text, message, retryable):
    with pytest.raises(AnswerError, match=message) as info:
        load_json_object(text)
    assert info.value.retryable is retryable


def test_finerad_swapped_fields_are_repaired_not_reasked():
    judgment = radmetrics.get_scoring_system("finerad_score").parse(
        '{"1": {"corrections": "Not actionable", "clinical severity": "[delete]"}}')
    assert judgment.score == 1.0 and "swapped back" in judgment.details["repairs"][0]
    judgment = radmetrics.get_scoring_system("finerad_score").parse(
        '{"1": {"corrections": "x", "clinical severity": "Serious"}}')  # a severity off the scale: asked again
    assert judgment.score is None and judgment.details["retryable"] is True


# -- the contract's defaults: a system that declares only the required parts runs everywhere -----------------
class MinimalSystem(ScoringSystem):
    name = score_key = "minimal"

    def build_prompt(self, reference, candidate):
        return f"Reference: {reference}\nCandidate: {candidate}\nScore:"

    def parse(self, text):
        return radmetrics.Judgment(score=float(len(text)), parsed=True, raw=text)


def test_defaults_of_the_contract(fake_judge):
    system = MinimalSystem()
    assert system.input_warnings("a", "b") == [] and system.max_retries == 0
    assert system.pair_in_prompt(system.build_prompt("r r", "c\nc")) == ("r r", "c\nc")
    with pytest.raises(NotImplementedError, match="ships no sample answer"):
        system.sample_answer("a", "b")
    judgments = radmetrics.judge_pairs(system, radmetrics.get_judge("fake", cache=False), ["a"], ["b"],
                                       progress=False)
    assert judgments[0].parsed and system.finalize(judgments[0], "a", "b") is judgments[0]
    assert system.aggregate(judgments, summary=True)["minimal"] == judgments[0].score


# -- bug 1: VERT with a summary ------------------------------------------------------------------------------
def test_vert_with_summary_through_python(fake_judge, caplog):
    caplog.set_level(logging.WARNING)
    result = radmetrics.score("vert", REFS, CANDS, backend="fake", cache=False, progress=False, summary=True)
    assert result.summary["num_scored"] == 3 and "summary" not in result.summary
    assert "vert has no aggregate option summary" in caplog.text


def test_vert_with_summary_through_the_cli(fake_judge, tmp_path):
    from radmetrics.cli import cli

    src, out = tmp_path / "pairs.jsonl", tmp_path / "out.jsonl"
    src.write_text("\n".join(json.dumps({"reference": r, "candidate": c}) for r, c in zip(REFS, CANDS)))
    run = CliRunner().invoke(cli, ["score", "--metric", "vert", "-i", str(src), "-o", str(out), "--backend", "fake",
                                   "--no-cache", "--summary", "--no-progress"])
    assert run.exit_code == 0, run.output
    assert len(out.read_text().splitlines()) == 3
    assert json.loads((tmp_path / "out.jsonl.summary.json").read_text())["summary"]["num_scored"] == 3


# -- bug 2: RadCliQ counts in meta-eval equal lm-eval's ------------------------------------------------------
def _lm_eval_utils():
    spec = importlib.util.spec_from_file_location("radmetrics_lm_eval_utils", LM_EVAL_TASKS / "utils.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_radcliq_counts_in_meta_eval_equal_lm_evals(fake_judge):
    from fake_judge import analysis_for

    from radmetrics.data import load_expert_dataset
    from radmetrics.meta.report import analyse, run_radmetrics_metric

    data = load_expert_dataset("rexval", FIXTURES / "rexval")
    run = run_radmetrics_metric("radcliq_rubric", data, {"backend": "fake", "cache": False, "progress": False})
    utils, system = _lm_eval_utils(), radmetrics.get_scoring_system("radcliq_rubric")
    lm_eval_pairs = []
    for doc, counts in zip(data, run.counts):
        answer = analysis_for(system.build_prompt(doc["reference"], doc["candidate"]))
        predicted, expert = utils.process_results({**doc, "scoring_system": "radcliq_rubric"}, [answer])["mae_significant_errors"]
        assert predicted == sum(counts)
        lm_eval_pairs.append((predicted, expert))
    assert sum(sum(c) for c in run.counts) > 0  # the omissions the fake judge counts (meta-eval read them as 0)
    report = analyse([run], data, resamples=0)
    assert report["metrics"]["radcliq_rubric"]["mae_significant_errors"]["mae"] == pytest.approx(utils.mae(lm_eval_pairs))


def test_a_plugin_system_outside_the_contract_is_a_clear_error(caplog):
    class Plugin:
        @radmetrics.hookimpl
        def register_scoring_systems(self, register):
            class DuckTyped:
                name = "duck"

                def build_prompt(self, reference, candidate):
                    return reference

                def parse(self, text):
                    return radmetrics.Judgment(score=1.0, parsed=True)

            register(DuckTyped())

    from radmetrics.plugins import register_plugin, unregister_plugin

    register_plugin(Plugin(), name="duck-plugin")
    try:
        # one line naming the plugin; the system is left out and the others keep working (review 41b: the whole
        # registry used to stop, built-ins too)
        with caplog.at_level("WARNING", logger="radmetrics.plugins"):
            systems = radmetrics.list_scoring_systems()
        assert "duck" not in systems and "green" in systems
        assert [r.getMessage() for r in caplog.records if "duck" in r.getMessage()] == [
            "radmetrics plugin 'duck-plugin': scoring system 'duck' (DuckTyped) must subclass "
            "radmetrics.scoring.ScoringSystem, the contract the runner calls; left out"]
    finally:
        unregister_plugin(name="duck-plugin")


def test_the_old_name_radcliq_still_works_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match="'radcliq' is now called 'radcliq_rubric'"):
        system = radmetrics.get_scoring_system("radcliq")
    assert system.name == "radcliq_rubric" and "radcliq" not in radmetrics.list_scoring_systems()
    card = (PACKAGE / "radcliq_rubric" / "README.md").read_text()
    assert "not RadCliQ-v1" in card


def test_counts_under_a_name_we_do_not_know_are_never_read_as_zero():
    """Fidelity audit F8: "Significant", "non_significant", "False prediction" were read as 0 (the rubric's score
    fell from 3 to 0, and ER²Score teacher data lost every error of a report, which can turn a pair around)."""
    from radmetrics.er2score.data import parse_generation

    rubric = radmetrics.get_scoring_system("radcliq_rubric")
    base = {k: {"significant": 0, "insignificant": 0} for k in RADCLIQ_KEYS}
    assert rubric.parse(json.dumps({"errors": {**base, "omission": {"Significant": 2, "Insignificant": 1}}})).score == 3
    assert rubric.parse(json.dumps({"errors": {**base, "omission": {"significant": 2, "non-significant": 3}}})).score == 5
    named = rubric.parse(json.dumps({"errors": {**base, "Incorrect location": {"significant": 1, "insignificant": 0}}}))
    assert named.score is None and "given twice" in named.reason  # "incorrect_location" is in base already
    unknown = rubric.parse(json.dumps({"errors": {**base, "omission": {"significant": 2, "minor": 3}}}))
    assert unknown.score is None and "unknown count 'minor'" in unknown.reason
    teacher = json.dumps({"predicted reports": [
        {"predicted_report": "a", "errors": {"False prediction": 1, "Omission": 2}},
        {"predicted_report": "b", "errors": {"false_prediction": 0}}]})
    assert [r.sub_scores[:2] for r in parse_generation(teacher)] == [[1, 2], [0, 0]]
    with pytest.raises(AnswerError, match="unknown category 'False predictions'"):
        parse_generation(json.dumps({"predicted reports": [{"predicted_report": "a", "errors": {"False predictions": 1}}]}))
