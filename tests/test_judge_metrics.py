"""VERT, GREEN-derived scores, FineRadScore and RadCliQ: parser tables over the papers' example outputs
and bad outputs; re-asks; the CLI writing corrected reports."""
from __future__ import annotations

import json
import re
import os
import subprocess
import sys

import pytest
from conftest import FIXTURES, REPO

import radmetrics
from radmetrics.finerad_score.prompt import FEW_SHOT_EXAMPLES, split_lines

OFFICIAL = json.loads((FIXTURES / "green_official_scores.json").read_text())["cases"]


# -- GREEN-derived (VERT App. B) --------------------------------------------------------------------------
@pytest.mark.parametrize("case, f1, ec, formula", [
    # A.2: TP=3, S=1, I=0 -> F1 = 6/7; EC = 1; Formula = 3/(3+2) = 0.6
    ("paper-A2", 6 / 7, 1, 0.6),
    # published output 1: TP=1, S=5, I=0 -> F1 = 2/7; Formula = 1/11
    ("published-radllama2-1", 2 / 7, 5, 1 / 11),
    # TP=0: ratios are 0 as GREEN is
    ("published-radllama2-0", 0.0, 6, 0.0),
    # assistant-echo: TP=1, S=2, I=1 -> Formula = 1/(1+4+0.5)
    ("assistant-echo", 2 / 4, 2, 1 / 5.5),
])
def test_green_derived_scores(case, f1, ec, formula):
    text = OFFICIAL[case]["text"]
    assert radmetrics.get_scoring_system("green_f1").parse(text).score == pytest.approx(f1)
    assert radmetrics.get_scoring_system("green_ec").parse(text).score == ec
    assert radmetrics.get_scoring_system("green_formula").parse(text).score == pytest.approx(formula)


@pytest.mark.parametrize("case, significant, total", [
    ("paper-A2", 1, 1),  # S=1, I=0
    ("assistant-echo", 2, 3),  # S=2, I=1: GREEN-EC counts significant only, the total both
    ("published-radllama2-0", 6, 6),
])
def test_green_ec_is_significant_and_total_errors_adds_insignificant(case, significant, total):
    text = OFFICIAL[case]["text"]
    assert radmetrics.get_scoring_system("green_ec").parse(text).score == significant
    total_system = radmetrics.get_scoring_system("green_total_errors")
    assert total_system.parse(text).score == total and total_system.higher_is_better is False
    no_insignificant = text.split("[Clinically Insignificant Errors]")[0] + "[Matched Findings]:\n3. a; b; c."
    judgment = total_system.parse(no_insignificant)
    assert judgment.score is None and "needs I" in judgment.reason


def test_green_formula_needs_insignificant_section():
    text = OFFICIAL["paper-A2"]["text"].split("[Clinically Insignificant Errors]")[0] + \
        "[Matched Findings]:\n3. a; b; c."
    judgment = radmetrics.get_scoring_system("green_formula").parse(text)
    assert judgment.score is None and "needs I" in judgment.reason
    assert radmetrics.get_scoring_system("green_f1").parse(text).score == pytest.approx(6 / 7)


def test_derived_scores_reuse_greens_cached_answers(fake_judge, tmp_path):
    refs, cands = ["left effusion", "cardiomegaly"], ["left effusion", "cardiomegaly mild"]
    for metric in ("green", "green_f1", "green_ec", "green_formula"):
        radmetrics.score(metric, refs, cands, backend="fake", cache=tmp_path / "c.sqlite", progress=False)
    assert fake_judge.calls == 2  # one model call per pair, whatever the number of derived scores


# -- VERT ---------------------------------------------------------------------------------------------------
VERT_BASE = OFFICIAL["paper-A2"]["text"]


@pytest.mark.parametrize("text, score", [
    pytest.param(VERT_BASE + "\n\n[Overall Accuracy Score]:\n0.85", 0.85, id="appD2-format"),
    pytest.param("[Overall accuracy Score]:\n0.9", 0.9, id="appD6-spelling"),
    pytest.param("**Overall Accuracy Score:** 0.70", 0.7, id="markdown"),
    pytest.param("[Overall Accuracy Score]:\n<score>\n...\n[Overall Accuracy Score]: 0.4", 0.4, id="template-echoed-first"),
    pytest.param("[Overall Accuracy Score]: 1", 1.0, id="integer-one"),
    pytest.param("[Overall Accuracy Score]: 0.00", 0.0, id="zero"),
])
def test_vert_reads_overall_score(text, score):
    judgment = radmetrics.get_scoring_system("vert").parse(text)
    assert judgment.parsed and judgment.score == pytest.approx(score)


def test_vert_keeps_green_counts_when_present():
    judgment = radmetrics.get_scoring_system("vert").parse(VERT_BASE + "\n\n[Overall Accuracy Score]:\n0.85")
    assert judgment.details["significant"]["c"] == 1 and judgment.details["matched_findings"] == 3


@pytest.mark.parametrize("text, reason", [
    pytest.param("", "empty judge output", id="empty"),
    pytest.param(VERT_BASE, "no [Overall Accuracy Score]", id="truncated-before-score"),
    pytest.param("[Overall Accuracy Score]: 1.7", "overall score 1.7 outside [0, 1]", id="above-one"),
    pytest.param("[Overall Accuracy Score]: -0.2", "outside [0, 1]", id="negative"),
    pytest.param("[Overall Accuracy Score]: 85", "overall score 85 outside [0, 1]", id="percent-not-clamped"),
    pytest.param("[Overall Accuracy Score]: high", "has no readable number", id="words"),
])
def test_vert_unreadable_is_unscored(text, reason):
    judgment = radmetrics.get_scoring_system("vert").parse(text)
    assert judgment.score is None and reason in judgment.reason


def test_vert_prompt_is_green_plus_score_block():
    green = radmetrics.get_scoring_system("green").build_prompt("Ref.", "Cand.")
    vert = radmetrics.get_scoring_system("vert").build_prompt("Ref.", "Cand.")
    assert "[Overall Accuracy Score]:" in vert and "[Overall Accuracy Score]" not in green
    assert vert.replace(
        "    The overall accuracy score to assign to the candidate report given the count of clinically "
        "significant and clinically insignificant errors. The score must be a continuous number in "
        "[0.00, 1.00] with two decimals.\n", "").replace(
        "\n    [Overall Accuracy Score]:\n    <Overall accuracy score between 0 and 1 given the total number of "
        "clinically significant and insignificant errors in the candidate reports>\n", "") == green
    formula = radmetrics.get_scoring_system("vert_formula").build_prompt("Ref.", "Cand.")
    rubric = radmetrics.get_scoring_system("vert_rubric").build_prompt("Ref.", "Cand.")
    assert "Score = M / (M + 2*S + 0.5*I)" in formula and "Scoring Rubric" in rubric
    assert formula.startswith("Radiology Report Evaluation Prompt") and rubric.startswith("Objective")
    # D.4 has its own Objective: the rubric judge is not told to count and compute (fidelity audit F12)
    assert "how accurately the candidate report reflects the clinical findings" in rubric
    assert "6. Compute the accuracy score." not in rubric and "6. Compute the accuracy score." in formula
    assert "Step 4: Determine Clinical Significance" in rubric and "Step 4: Determine Clinical Significance" in formula


def test_vert_few_shot_fingerprint_follows_the_shots_file_content(tmp_path, caplog):
    """Review 18 (suspected): the few-shot file's path was all the fingerprint had of the shots, so a run continued
    after the file was edited kept the rows judged with the old shots. The content's digest is in the prompt
    version (hence in the fingerprint and the run's identity)."""
    shots = tmp_path / "shots.jsonl"
    rows = [{"reference": f"ref {i}", "candidate": f"cand {i}", "score": i % 6} for i in range(6)]
    shots.write_text("\n".join(json.dumps(r) for r in rows))
    before = radmetrics.get_scoring_system("vert", shots_path=str(shots), k=2, score_scale=5).fingerprint()
    shots.write_text("\n".join(json.dumps({**r, "score": 5 - r["score"]}) for r in rows))
    after = radmetrics.get_scoring_system("vert", shots_path=str(shots), k=2, score_scale=5).fingerprint()
    assert before["prompt_version"] != after["prompt_version"] and before["options"] == after["options"]
    zero_shot = radmetrics.get_scoring_system("vert", shots_path=str(shots)).fingerprint()["prompt_version"]
    radmetrics.get_scoring_system("vert", shots_path=str(shots))  # configured again (the checks before judging do)
    assert caplog.text.count("is given but k is 0, so the prompts are zero-shot") == 1  # review 29c: said, once
    assert "shots" not in zero_shot  # k = 0: the file is not read, not part of the prompt


def test_vert_few_shot_is_seeded_and_excludes_the_judged_pair(tmp_path):
    shots = tmp_path / "shots.jsonl"
    rows = [{"reference": f"ref {i}", "candidate": f"cand {i}", "score": i % 6,
             "significant": {"a": i % 2}} for i in range(12)]
    shots.write_text("\n".join(json.dumps(r) for r in rows))
    system = radmetrics.get_scoring_system("vert", shots_path=str(shots), k=3, seed=7, score_scale=5,
                                           illustrations=True)
    one, two = system.build_prompt("ref x", "cand x"), system.build_prompt("ref x", "cand x")
    assert one == two and one.count("--- Example ") == 3
    assert "5. Error Type Illustrations:" in one and "6. Full Assessment Examples:" in one
    assert "--- Error type (f): Omitting a comparison" in one
    other_seed = radmetrics.get_scoring_system("vert", shots_path=str(shots), k=3, seed=8, score_scale=5)
    assert other_seed.build_prompt("ref x", "cand x") != one
    assert "(a) False report of a finding in the candidate:" in one  # counts shown for annotated shots
    for i in range(12):  # the pair being judged is never its own example
        prompt = system.build_prompt(f"ref {i}", f"cand {i}")
        assert f"Reference Report:\nref {i}\n" not in prompt
    assert re.search(r"-vert-k3-seed7-shots[0-9a-f]{12}-illus$", system.prompt_version)


def test_vert_k_above_the_shots_in_the_file_is_refused(tmp_path):
    """k=5 with a file of 3 shots made 3-shot prompts while the fingerprint said k=5 (and k=1e30 passed too)."""
    shots = tmp_path / "shots.jsonl"
    shots.write_text("\n".join(json.dumps({"reference": f"ref {i}", "candidate": f"cand {i}", "score": 1})
                               for i in range(3)))
    for k in (5, 1e30):
        with pytest.raises(radmetrics.InputError, match=rf"VERT k={int(k)} asks for more examples than shots_path "
                                                        rf".*shots.jsonl holds \(3\): give k of at most 3"):
            radmetrics.get_scoring_system("vert", shots_path=str(shots), k=k)
    system = radmetrics.get_scoring_system("vert", shots_path=str(shots), k=3)  # every shot: fine
    assert system.build_prompt("ref x", "cand x").count("--- Example ") == 3


def test_vert_shots_as_the_papers_variants_write_them(tmp_path):
    """VERT App. D.6-D.9 (fidelity audit F13): RadEval shots scored max(0, 1 - 0.15 x sig errors) from their
    counts; shots that illustrate a category; shots with the judge's explanation and matched findings, in the
    order of VERT's own output format."""
    shots = tmp_path / "rad-err.jsonl"
    shots.write_text("\n".join(json.dumps(r) for r in [
        {"reference": "No effusion.", "candidate": "Small left effusion.", "significant": {"a": 1},
         "insignificant": {}, "category": "(a)", "explanation": "The candidate adds an effusion.",
         "matched_findings": "0."},
        {"reference": "Cardiomegaly.", "candidate": "Normal heart.", "significant": {"b": 2, "c": 1, "d": 2, "e": 3},
         "category": "b"},
    ]))
    system = radmetrics.get_scoring_system("vert", shots_path=str(shots), k=2, shot_score="significant-errors")
    prompt = system.build_prompt("ref x", "cand x")
    first = prompt[prompt.index("--- Example"):]
    block = first[:first.index("--- Example", 5)] if first.count("--- Example") > 1 else first
    effusion = prompt[prompt.index("(illustrating error category (a))"):]
    assert "[Overall Accuracy Score]:\n0.85\n" in effusion  # 1 - 0.15 x 1
    assert "[Overall Accuracy Score]:\n0.00\n" in prompt  # 8 significant errors: max(0, 1 - 1.2)
    assert "(illustrating error category (b))" in prompt and block.startswith("--- Example 1 (illustrating")
    order = [effusion.index(h) for h in ("[Explanation]:\nThe candidate adds an effusion.", "[Clinically Significant",
                                         "[Clinically Insignificant", "[Matched Findings]:\n0.", "[Overall Accuracy")]
    assert order == sorted(order)
    assert re.search(r"-k2-seed42-sigscore-shots[0-9a-f]{12}$", system.prompt_version)
    for row, expected in [({"score": 4}, "outside 0-1 (set score_scale"),
                          ({"score": 0.5, "significant": {"a": -1}}, "counts are whole numbers >= 0"),
                          ({"score": 0.5, "significant": {"g": 1}}, "per letter a-f"),
                          ({"score": 0.5, "significant": "not json"}, "must be a dict of counts"),
                          ({"score": 0.5, "category": "z"}, "not an error letter a-f"),
                          ({"score": 0.5, "explanation": 3}, "'explanation' must be text"),
                          ({}, "no numeric 'score'"), ({"score": True}, "'score' must be a number"),
                          ({"score": 0.5, "significant": []}, "must be a dict of counts")]:
        bad = tmp_path / "bad.jsonl"
        bad.write_text(json.dumps({"reference": "r", "candidate": "c", **row}) + "\n")
        with pytest.raises(radmetrics.InputError, match=re.escape(expected)):
            radmetrics.get_scoring_system("vert", shots_path=str(bad), k=1).build_prompt("a", "b")
    for row, expected in [({"score": 0.5}, "needs the shot's 'significant' counts"),
                          ({"significant": False}, "'significant' must be a dict of counts"),
                          ({"score": 0.99, "significant": {"a": 4}}, "score 0.99 is not max(0, 1 - 0.15 x 4"),
                          ({"score": 4, "significant": {"a": 4}}, "score 4 is not max(0, 1 - 0.15 x 4")]:
        bad.write_text(json.dumps({"reference": "r", "candidate": "c", **row}) + "\n")
        with pytest.raises(radmetrics.InputError, match=re.escape(expected)):
            radmetrics.get_scoring_system("vert", shots_path=str(bad), k=1,
                                          shot_score="significant-errors").build_prompt("a", "b")
    bad.write_text(json.dumps({"reference": "r", "candidate": "c", "score": 2, "significant": {"a": 4}}) + "\n")
    agreeing = radmetrics.get_scoring_system("vert", shots_path=str(bad), k=1, shot_score="significant-errors",
                                             score_scale=5)  # 2/5 = 0.40 = 1 - 0.15 x 4: accepted
    assert "[Overall Accuracy Score]:\n0.40\n" in agreeing.build_prompt("a", "b")


def test_vert_few_shot_without_shots_is_a_clear_error():
    with pytest.raises(radmetrics.InputError, match="needs shots_path"):
        radmetrics.get_scoring_system("vert", k=3).build_prompt("a", "b")


# -- FineRadScore ---------------------------------------------------------------------------------------------
FRS = radmetrics.get_scoring_system("finerad_score")


@pytest.mark.parametrize("index, total, worst, corrected", [
    (0, 5.0, 2, 3), (1, 6.0, 3, 3), (2, 5.0, 3, 3), (3, 4.0, 2, 2), (4, 0.0, 0, 0)])
def test_finerad_paper_examples(index, total, worst, corrected):
    lines, truth, corrections = FEW_SHOT_EXAMPLES[index]
    judgment = FRS.finalize(FRS.parse(json.dumps(corrections)), truth, " ".join(lines))
    assert judgment.score == total and judgment.severity_max == worst
    assert judgment.corrected_lines + judgment.inserted_lines == corrected


def test_finerad_corrected_report_of_example_3_is_the_ground_truth():
    lines, truth, corrections = FEW_SHOT_EXAMPLES[2]
    judgment = FRS.finalize(FRS.parse(json.dumps(corrections)), truth, " ".join(lines))
    assert judgment.corrected_report == truth
    assert judgment.category_counts["False prediction of finding"] == 1


def test_finerad_paper_example_2_swapped_fields_are_repaired_with_a_note():
    lines, truth, corrections = FEW_SHOT_EXAMPLES[1]
    judgment = FRS.finalize(FRS.parse(json.dumps(corrections)), truth, " ".join(lines))
    # line 1: corrections "Not actionable", clinical severity "[delete]" -> a Not actionable deletion
    assert judgment.details["repairs"] == ["line 1: 'corrections' ('Not actionable') and 'clinical severity' "
                                           "('[delete]') were swapped; swapped back"]
    assert judgment.corrections[2]["severity"] == 1 and judgment.corrections[2]["corrections"] == "[delete]"
    assert judgment.corrected_report == truth


@pytest.mark.parametrize("text, score", [
    pytest.param('```json\n{"0": {"corrections": "[delete]", "clinical severity": "Emergent error", '
                 '"comments": "", "error category": []}}\n```', 4.0, id="code-fence"),
    pytest.param('{"0": {"corrections": "x.", "clinical severity": "Urgent error", "comments": "",},}', 3.0,
                 id="trailing-commas"),
    pytest.param("{'None': {'corrections': 'New line.', 'clinical severity': 'Not actionable', 'comments': ''}}",
                 1.0, id="single-quotes-insertion"),
    pytest.param('Here are the corrections: {"1": {"corrections": "y.", "clinical severity": "Invalid comparison",'
                 ' "comments": "prior"}} Hope this helps.', 1.0, id="chatter-invalid-comparison"),
    pytest.param('{"0": {"corrections": "z.", "clinical severity": "No error", "comments": ""}}', 0.0,
                 id="no-error-entry"),
    pytest.param("{}", 0.0, id="no-corrections"),
])
def test_finerad_tolerant_json(text, score):
    assert FRS.parse(text).score == score


@pytest.mark.parametrize("text, reason, retryable", [
    pytest.param("", "empty judge output", True, id="empty"),
    pytest.param("No corrections needed.", "no JSON object", True, id="prose"),
    pytest.param('{"0": {"corrections": "[delete]", "clinical sev', "not closed", True, id="truncated"),
    pytest.param("[1, 2]", "no JSON object", True, id="array"),
    pytest.param('{"first": {"corrections": "x", "clinical severity": "Urgent error"}}', "neither a line id",
                 True, id="bad-key"),
    pytest.param('{"0": {"corrections": "x", "clinical severity": "Serious"}}', "unknown clinical severity",
                 True, id="unknown-severity"),
    pytest.param('{"0": {"comments": "x"}}', "needs 'corrections'", True, id="missing-fields"),
])
def test_finerad_unreadable_is_unscored(text, reason, retryable):
    judgment = FRS.parse(text)
    assert judgment.score is None and reason in judgment.reason
    assert judgment.details["retryable"] is retryable


def test_finerad_correction_beyond_the_candidate_is_unscored():
    judgment = FRS.parse('{"7": {"corrections": "[delete]", "clinical severity": "Urgent error", "comments": ""}}')
    judgment = FRS.finalize(judgment, "Ref.", "One line. Two lines.")
    assert judgment.score is None and "line(s) [7] but the candidate has 2 lines" in judgment.reason


def test_finerad_line_split_keeps_decimals():
    assert split_lines("Tube 2.2 cm above the carina. No effusion.") == [
        "Tube 2.2 cm above the carina.", "No effusion."]
    # as the official code cuts (fidelity audit F11): a period followed by a space, so "e.g." stays whole and
    # line ids are the paper's; quotes removed; and a period that ends a line of a multi-line report
    assert split_lines('No effusion, e.g. none seen. He said "stable".') == [
        "No effusion, e.g.", "none seen.", "He said stable."]
    assert split_lines("Lungs clear.No effusion.") == ["Lungs clear.No effusion."]
    assert split_lines("Lungs clear.\nNo effusion.\n") == ["Lungs clear.", "No effusion."]


def test_finerad_reasks_malformed_json(fake_judge):
    refs = ["Small left effusion.", "Normal heart."]
    cands = ["Small left effusion. MALFORMED output trigger.", "Normal heart."]
    result = radmetrics.score("finerad_score", refs, cands, backend="fake", cache=False, progress=False)
    first = result.judgments[0]
    assert first.parsed and first.score == 3.0 and len(first.details["attempts"]) == 1
    assert first.corrected_report == "Small left effusion."
    assert fake_judge.calls == 3  # two first answers + one re-ask


def test_finerad_gives_up_after_max_retries(fake_judge):
    system = radmetrics.get_scoring_system("finerad_score", max_retries=0)
    judgments = radmetrics.judge_pairs(system, radmetrics.get_judge("fake", cache=False), ["a."], ["MALFORMED."],
                                       progress=False)
    assert judgments[0].score is None and "not closed" in judgments[0].reason


def test_cli_finerad_writes_corrected_reports(tmp_path):
    system = radmetrics.get_scoring_system("finerad_score")
    pairs = [{"reference": "Heart normal.", "candidate": "Heart normal. Pulmonary edema."},
             {"reference": "No effusion.", "candidate": "No effusion."}]
    answers = ['{"1": {"corrections": "[delete]", "clinical severity": "Urgent error", "comments": "no edema", '
               '"error category": ["False prediction of finding"]}}', "{}"]
    src, replay, out = tmp_path / "p.jsonl", tmp_path / "r.jsonl", tmp_path / "o.jsonl"
    src.write_text("\n".join(json.dumps(p) for p in pairs))
    replay.write_text("\n".join(json.dumps({"prompt": system.build_prompt(p["reference"], p["candidate"]),
                                            "response": a}) for p, a in zip(pairs, answers)))
    subprocess.run([sys.executable, "-m", "radmetrics.cli", "score", "-m", "finerad_score", "-i", src, "-o", out,
                    "--replay", replay], check=True, cwd=REPO, env=os.environ.copy(), capture_output=True)
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert rows[0]["corrected_report"] == "Heart normal." and rows[0]["finerad_score"] == 3.0
    assert rows[0]["corrections"][0]["line"] == 1 and rows[1]["corrected_report"] == "No effusion."


# -- RadCliQ rubric -------------------------------------------------------------------------------------------
KEYS = ["false_prediction", "omission", "incorrect_location", "incorrect_severity", "comparison_not_present",
        "omission_of_comparison"]


def radcliq_json(sig=None, insig=None, total=None, drop=None):
    sig, insig = sig or {}, insig or {}
    errors = {k: {"significant": sig.get(k, 0), "insignificant": insig.get(k, 0)} for k in KEYS if k != drop}
    body = {"errors": errors}
    if total is not None:
        body["total_score"] = total
    return json.dumps(body)


def test_radcliq_counts_and_total():
    judgment = radmetrics.get_scoring_system("radcliq_rubric").parse(
        radcliq_json({"omission": 2, "false_prediction": 1}, {"incorrect_severity": 1}, total=4))
    assert judgment.score == 4.0 and judgment.significant["omission"] == 2
    assert judgment.insignificant["incorrect_severity"] == 1 and "warnings" not in judgment.details


def test_radcliq_total_mismatch_uses_sum_and_warns():
    judgment = radmetrics.get_scoring_system("radcliq_rubric").parse(radcliq_json({"omission": 2}, total=5))
    assert judgment.score == 2.0 and judgment.details["warnings"] == ["judge total_score 5 != sum of counts 2"]


def test_radcliq_er2score_single_number_format():
    text = json.dumps({"errors": dict.fromkeys(KEYS, "1"), "total_score": "6"})
    assert radmetrics.get_scoring_system("radcliq_rubric").parse(text).score == 6.0


@pytest.mark.parametrize("text, reason", [
    pytest.param(radcliq_json({"omission": -1}), "counts are whole numbers >= 0", id="negative"),
    pytest.param(radcliq_json({"omission": 1.5}), "counts are whole numbers >= 0", id="fractional"),
    pytest.param(radcliq_json({"omission": "Infinity"}), "counts are whole numbers >= 0", id="infinity"),
    pytest.param(radcliq_json().replace('"omission": {"significant": 0', '"omission": {"significant": Infinity'),
                 "counts are whole numbers >= 0", id="json-infinity-literal-found-by-fuzzing"),
    pytest.param(radcliq_json({"omission": "NaN"}), "counts are whole numbers >= 0", id="nan"),
    # review 28: a count in words was unscored with Python's "could not convert string to float: 'two'"
    pytest.param(radcliq_json({"omission": "two"}), "omission.significant is 'two', not a number: counts are "
                 "written as digits", id="count-in-words"),
    pytest.param(radcliq_json({"omission": "2 errors"}), "not a number", id="count-with-words"),
    pytest.param(radcliq_json(drop="omission"), "category 'omission' missing", id="missing-category"),
    pytest.param('{"total_score": 3}', "no 'errors' object", id="no-errors"),
    pytest.param("", "no 'errors' object", id="empty"),
    pytest.param('{"errors": {"omission": {"significant": ', "not closed", id="truncated"),
])
def test_radcliq_unreadable(text, reason):
    judgment = radmetrics.get_scoring_system("radcliq_rubric").parse(text)
    assert judgment.score is None and reason in judgment.reason


def test_radcliq_reasoning_block_is_drafting_and_one_left_open_is_unscored():
    """Review 29b: a reasoning model's draft counts inside "<think>" were read as the answer when the output was cut
    while thinking (a draft of 1 error scored 1), and a closed draft beside the answer made two objects (unscored)."""
    rubric = radmetrics.get_scoring_system("radcliq_rubric")
    draft, final = radcliq_json({"omission": 1}), radcliq_json({"omission": 2, "false_prediction": 1})
    assert rubric.parse(f"<think>Draft: {draft}\nRe-check the omission.</think>\n{final}").score == 3.0
    # the chat template opened the block in the prompt (Qwen3, R1): only "</think>" is in the output
    assert rubric.parse(f"Draft: {draft}\nRe-check.\n</think>\n\n{final}").score == 3.0
    cut = rubric.parse(f"<think>Draft: {draft}\nHmm, actually the omission should")
    assert cut.score is None and "inside its <think> block" in cut.reason and cut.details["retryable"] is True


def test_radcliq_a_category_or_count_repeated_with_other_counts_is_no_single_answer():
    """Review 29b: JSON keeps a repeated key's last value, so a category written twice ("omission" 2, then
    "omission" 0) was read with its last counts, silently; written twice the same, it is one answer."""
    rubric = radmetrics.get_scoring_system("radcliq_rubric")
    first = '"omission": {"significant": 2, "insignificant": 0}'
    twice = radcliq_json().replace('"errors": {', '"errors": {' + first + ", ", 1)
    judgment = rubric.parse(twice)
    assert judgment.score is None and "category 'omission' given twice" in judgment.reason
    same = radcliq_json({"omission": 2}).replace('"errors": {', '"errors": {' + first + ", ", 1)
    assert rubric.parse(same).score == 2.0
    count_twice = radcliq_json().replace('"omission": {"significant": 0', '"omission": {"significant": 1, "significant": 0')
    assert rubric.parse(count_twice).score is None and "repeated count 'significant'" in rubric.parse(count_twice).reason
    errors_twice = radcliq_json({"omission": 1})[:-1] + ', "errors": ' + json.dumps(json.loads(radcliq_json())["errors"]) + "}"
    judgment = rubric.parse(errors_twice)
    assert judgment.score is None and "'errors' is given 2 times" in judgment.reason


@pytest.mark.parametrize("after, score", [
    # a revision after the JSON: which counts did the judge mean? (the JSON's 2 was read)
    ("Correction: omission should have 3 significant errors.", None),
    ("Actually, I miscounted: there are two omissions.", None),
    ("On reflection, the false prediction is insignificant instead.", None),
    # explanation after the JSON keeps its counts
    ("The omission of the effusion is clinically significant.", 2.0),
    ("Total errors: 2.", 2.0),
    ("The missed effusion should be reported.", 2.0),
])
def test_radcliq_a_revision_after_the_json_is_no_single_answer(after, score):
    """Review 31: prose after the JSON was never read, so a judge that revised a count there was scored with the
    counts it took back."""
    text = "```json\n" + radcliq_json({"omission": 2}, total=2) + "\n```\n" + after
    judgment = radmetrics.get_scoring_system("radcliq_rubric").parse(text)
    if score is None:
        assert judgment.score is None and "revised after its JSON" in judgment.reason
        assert judgment.details["retryable"] is True
    else:
        assert judgment.score == score


def test_radcliq_errors_in_another_case_is_the_errors_object():
    """Review 31: {"Errors": {...}} was "no 'errors' object in the output": unscored though its counts are certain;
    "Errors" and "errors" with other counts have no single answer."""
    rubric = radmetrics.get_scoring_system("radcliq_rubric")
    text = radcliq_json({"omission": 2}, total=2).replace('"errors"', '"Errors"')
    assert rubric.parse(text).score == 2.0
    both = radcliq_json({"omission": 2})[:-1] + ', "Errors": ' + json.dumps(json.loads(radcliq_json())["errors"]) + "}"
    judgment = rubric.parse(both)
    assert judgment.score is None and "given 2 times" in judgment.reason


@pytest.mark.parametrize("metric", ["vert", "vert_formula", "vert_rubric", "vert_ft"])
def test_vert_says_when_a_report_was_cut_to_its_prompt_limit(metric):
    """Review 33: VERT's prompt keeps the first 300 words of each report (as GREEN's does), but only GREEN said so
    in the row's warnings; a 3,500-word VERT reference was judged on its first 300 words without a word."""
    system = radmetrics.get_scoring_system(metric)
    long_reference = " ".join(f"word{i}" for i in range(3500))
    prompt = system.build_prompt(long_reference, "No effusion.")
    assert "word299" in prompt and "word300" not in prompt  # what the judge sees
    assert system.input_warnings(long_reference, "No effusion.") == [
        "reference cut from 3500 to 300 words (VERT prompt limit)"]
    assert system.input_warnings("Small effusion.", "No effusion.") == []
