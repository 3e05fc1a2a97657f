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
    pytest.param(answer(("1", "A.", "Urgent error"), ("1", "[delete]", "Not actionable")), 4.0,
                 ["line 1: given 2 times with different entries, all counted"], id="same-line-twice-different"),
    pytest.param(answer(("None", "New A.", "Urgent error"), ("None", "New B.", "Emergent error")), 7.0,
                 ["2 inserted lines ('None' keys), all counted"], id="two-insertions"),
    pytest.param(answer(("0", "Urgent error", "Corrected line.")), 3.0,
                 ["line 0: 'corrections' ('Urgent error') and 'clinical severity' ('Corrected line.') were swapped; "
                  "swapped back"], id="swapped"),
    pytest.param("{'2': {'corrections': 'x.', 'clinical severity': 'Not actionable'}, "
                 "'2': {'corrections': 'y.', 'clinical severity': 'Urgent error'}}", 4.0,
                 ["line 2: given 2 times with different entries, all counted"], id="python-literal-duplicates"),
])
def test_answers_read_as_written(text, score, notes):
    judgment = FRS.parse(text)
    assert judgment.score == score
    assert judgment.details.get("repairs", []) == notes


def test_two_different_corrections_of_one_line_score_but_write_no_corrected_report():
    text = answer(("0", "Small effusion.", "Urgent error"), ("0", "Large effusion.", "Not actionable"))
    judgment = FRS.finalize(FRS.parse(text), "Large effusion.", "Moderate effusion.")
    assert judgment.score == 4.0 and judgment.corrected_report is None
    assert judgment.details["corrected_report_missing"] == "line 0 has two different corrections"


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
