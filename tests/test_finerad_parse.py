"""FineRadScore answers as judges write them: strings wrapped over lines as the paper prints them, repeated line
keys (never silently the last), and the paper's own swapped fields, repaired with a note."""
from __future__ import annotations

import json

import pytest
from conftest import FIXTURES

import radmetrics
from radmetrics.finerad_score.prompt import FEW_SHOT_EXAMPLES

FRS = radmetrics.get_scoring_system("finerad_score")


def paper_example_2() -> str:
    """The Corrections of Example 2 as the paper's text prints them (FineRadScore App., few-shot examples),
    strings wrapped over lines and the fields of line 1 swapped."""
    return (FIXTURES / "finerad_example2_as_printed.txt").read_text()


def test_paper_example_2_as_printed_parses_and_scores():
    lines, truth, _ = FEW_SHOT_EXAMPLES[1]
    answer = paper_example_2()
    assert "concerning for\n" in answer  # really wrapped inside a JSON string
    judgment = FRS.finalize(FRS.parse(answer), truth, " ".join(lines))
    # 0: Actionable nonurgent (2), None: Urgent (3), 1: swapped back -> Not actionable deletion (1)
    assert judgment.score == 6.0 and judgment.severity_max == 3
    assert judgment.corrections[0]["corrections"] == "Two left lung nodules concerning for metastatic disease."
    assert judgment.corrections[0]["comments"] == "Incorrect number of nodules, may affect longer term follow up"
    assert judgment.corrected_report == truth
    assert any("swapped back" in note for note in judgment.details["repairs"])


WRAPPED = '{"0": {"corrections": "Small left\n   pleural effusion.", "clinical severity": "Urgent\nerror"}}'

ENTRY = '"corrections": "{c}", "clinical severity": "{s}", "comments": ""'


def answer(*entries: tuple[str, str, str]) -> str:
    return "{" + ", ".join(f'"{k}": {{' + ENTRY.format(c=c, s=s) + "}" for k, c, s in entries) + "}"


@pytest.mark.parametrize("text, score, notes", [
    pytest.param(WRAPPED, 3.0, [], id="wrapped-strings"),
    pytest.param(answer(("1", "A.", "Urgent error"), ("1", "A.", "Urgent error")), 3.0,
                 ["line 1: the same entry given twice, counted once"], id="same-line-twice-identical"),
    # two rival corrections of one line: no single reading (json.loads keeps the last; counting both gave 4)
    pytest.param(answer(("1", "A.", "Urgent error"), ("1", "[delete]", "Not actionable")), None, [],
                 id="same-line-twice-different"),
    pytest.param(answer(("None", "New A.", "Urgent error"), ("None", "New B.", "Emergent error")), 7.0,
                 ["2 inserted lines ('None' keys), all counted"], id="two-insertions"),
    pytest.param(answer(("0", "Urgent error", "Corrected line.")), 3.0,
                 ["line 0: 'corrections' ('Urgent error') and 'clinical severity' ('Corrected line.') were swapped; "
                  "swapped back"], id="swapped"),
    pytest.param("{'2': {'corrections': 'x.', 'clinical severity': 'Not actionable'}, "
                 "'2': {'corrections': 'y.', 'clinical severity': 'Urgent error'}}", None, [],
                 id="python-literal-duplicates"),
])
def test_answers_read_as_written(text, score, notes):
    judgment = FRS.parse(text)
    assert judgment.score == score
    assert judgment.details.get("repairs", []) == notes


def test_two_different_corrections_of_one_line_are_reasked_not_summed():
    """FineRadScore drift audit (session 12): both entries were counted, a number that is neither the official
    reading (json.loads keeps the last) nor either entry's."""
    text = answer(("0", "Small effusion.", "Urgent error"), ("0", "Large effusion.", "Not actionable"))
    judgment = FRS.parse(text)
    assert judgment.score is None and judgment.details["retryable"] is True
    assert judgment.reason == "line 0 is given 2 times with different entries"


@pytest.mark.parametrize("label,severity", [
    ("Non-actionable", 1), ("Nonactionable", 1), ("Not actionable error", 1), ("Actionable, nonurgent error", 2),
    ("actionable non urgent error", 2), ("Nonurgent actionable error", 2), ("Emergency", 4),
    ("Urgent error (3)", 3), ("3 - Urgent error", 3), ("Urgent (3)", 3), ("4. Emergent error", 4),
    ("Urgent error (1)", None), ("3", None), ("Minor", None)])
def test_severity_spellings_judges_use_are_read_and_a_number_only_when_it_is_the_words(label, severity):
    """FineRadScore drift audit: these spellings were unscored and never re-asked; a number beside the word
    counts only when it is the word's own number on the paper's scale (Sec. 7)."""
    judgment = FRS.parse(answer(("0", "[delete]", label)))
    assert judgment.score == severity
    if severity is None:
        assert judgment.details["retryable"] is True and "unknown clinical severity" in judgment.reason


@pytest.mark.parametrize("label,severity", [
    ("Actionable\u2013nonurgent error", 2), ("Actionable\u2014nonurgent error", 2), ("Not\u2011actionable", 1),
    ("**Urgent error**", 3), ("__Emergent error__", 4), ("_Not actionable_", 1), ("*Urgent error.*", 3),
    ("** Actionable\u2010nonurgent error **", 2), ("'Urgent error'", 3), ("\u201cEmergent error\u201d", 4),
    ("**Urgent**", None), ("**Urgent error** (3)", None), ("**Urgent error*", None), ("Non\u2013actionable", None),
    ("**Serious error**", None), ("**Urgent error** or emergent", None)])
def test_a_severity_name_with_a_unicode_dash_or_in_markdown_emphasis_is_read_nothing_looser(label, severity):
    """review 28: "Actionable–nonurgent error" and "**Urgent error**" were unscored and re-asked. Read when, the
    dashes made "-" and the emphasis or quotes around it taken off, the label is one of the prompt's four names."""
    judgment = FRS.parse(answer(("0", "[delete]", label)))
    assert judgment.score == severity
    if severity is None:
        assert judgment.details["retryable"] is True and "unknown clinical severity" in judgment.reason


@pytest.mark.parametrize("label,severity", [
    ("Severity: Urgent error", 3), ("Clinical severity: Not actionable", 1), ("**Severity:** Emergent error", 4),
    ("severity: **Actionable nonurgent error**", 2), ("Severity: Urgent error (3)", 3),
    ("Severity: Urgent", 3), ("Severity: 3", None), ("Severity: Urgent or emergent", None), ("Severity:", None)])
def test_the_fields_name_before_a_severity_is_read_past(label, severity):
    """Review 31: "Severity: Urgent error" (the field's name repeated in its value) was unscored and re-asked; the
    label after it is read as any label is, nothing looser."""
    judgment = FRS.parse(answer(("0", "[delete]", label)))
    assert judgment.score == severity
    if severity is None:
        assert "unknown clinical severity" in judgment.reason


@pytest.mark.parametrize("after, score", [
    ("Note: line 1 should be Emergent error instead.", None),
    ("Correction: line 2 also needs deleting (Not actionable).", None),
    ("Actually, the severity is urgent.", None),
    ("Line 1 contradicts the reference.", 2.0),
    ("These corrections make the report match the ground truth.", 2.0),
])
def test_a_revision_after_the_json_is_no_single_answer(after, score):
    """Review 31: prose after the corrections was never read, so a judge that revised one there ("line 1 should be
    Emergent error instead") was scored with the severity it took back."""
    judgment = FRS.parse("```json\n" + answer(("1", "[delete]", "Actionable nonurgent error")) + "\n```\n" + after)
    assert judgment.score == score
    if score is None:
        assert judgment.details["retryable"] is True and "revised after its JSON" in judgment.reason


def test_an_empty_list_is_no_corrections_and_an_empty_object_after_an_answer_is_reasked():
    """The official code accepts "[]" as no errors; "{...} ... final answer: {}" has no single reading (an empty
    {} was dropped as a mention wherever it stood: the first object's 3 was scored)."""
    assert FRS.parse("[]").score == 0.0 and FRS.parse("```json\n[]\n```").score == 0.0
    first = answer(("1", "[delete]", "Urgent error"))
    revised = FRS.parse(first + "\nOn reflection line 1 is fine. Final answer: {}")
    assert revised.score is None and revised.details["retryable"] is True and "empty {} after" in revised.reason
    assert FRS.parse("Example 5 answers {}. Mine: " + first).score == 3.0  # an echoed {} before the answer


def test_unknown_severity_in_both_fields_stays_unscored():
    judgment = FRS.parse(answer(("0", "Fix.", "Serious")))
    assert judgment.score is None and "unknown clinical severity" in judgment.reason


@pytest.mark.parametrize("severity", ["", None, "None", "null"])
def test_a_correction_without_a_severity_is_unscored_not_zero(severity):
    """Fidelity audit F7: "[delete]" with a blank severity was dropped as "no error" (score 0); the paper's 0 is
    a report with no corrections. A line with neither a correction nor a severity is still no error."""
    system = radmetrics.get_scoring_system("finerad_score")
    missing = system.parse(json.dumps({"0": {"corrections": "[delete]", "clinical severity": severity,
                                             "comments": "", "error category": []}}))
    assert missing.score is None and "line 0: correction '[delete]' has no clinical severity" in missing.reason
    blank = system.parse(json.dumps({"0": {"corrections": "", "clinical severity": severity}}))
    assert blank.score == 0.0 and "no correction and no severity" in blank.details["repairs"][0]


def test_report_score_lines_counts_problematic_lines_and_unknown_modes_are_refused():
    """Fidelity audit F9: ReXamine-Global scores FineRadScore as "the total number of problematic lines" (Sec. 2.2);
    an unknown report_score fell through to the max severity without a word."""
    from radmetrics.errors import RadmetricsError

    answer = json.dumps({"0": {"corrections": "[delete]", "clinical severity": "Emergent error"},
                         "1": {"corrections": "[delete]", "clinical severity": "Not actionable"},
                         "None": {"corrections": "Small effusion.", "clinical severity": "Urgent error"}})
    system = radmetrics.get_scoring_system("finerad_score")
    scores = {mode: system.configure(report_score=mode).parse(answer).score for mode in ("sum", "max", "lines")}
    assert scores == {"sum": 8.0, "max": 4.0, "lines": 3.0}
    with pytest.raises(RadmetricsError, match="report_score 'avg' is not one of sum, max, lines"):
        system.configure(report_score="avg")


def test_a_draft_inside_an_open_reasoning_block_is_not_the_answer():
    """Review 29b: an output cut while thinking ("<think>Draft: {...} hmm, actually") was scored with its draft."""
    draft = '{"1": {"corrections": "add effusion", "clinical severity": "Urgent error", "comments": ""}}'
    cut = FRS.parse(f"<think>Draft: {draft} hmm, actually line 1 is")
    assert cut.score is None and "inside its <think> block" in cut.reason
    assert FRS.parse(f"<think>Draft: {draft}</think>\n{draft}").parsed
