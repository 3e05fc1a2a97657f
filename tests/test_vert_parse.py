"""VERT's overall score as the judge wrote it: decimal comma, leading point, worked Formula answers, vert_ft
answers; numbers outside [0, 1] and answers with no single number stay unscored (never clamped, never 0)."""
from __future__ import annotations

import pytest

import radmetrics

HEAD = "[Overall Accuracy Score]:\n"


@pytest.mark.parametrize("system, text, score, written", [
    pytest.param("vert", HEAD + "0,85", 0.85, "decimal-comma", id="decimal-comma"),
    pytest.param("vert", HEAD + "0,6.", 0.6, "decimal-comma", id="decimal-comma-period"),
    pytest.param("vert", HEAD + ".85", 0.85, "leading-point", id="leading-point"),
    pytest.param("vert", "**Overall Accuracy Score:** .7", 0.7, "leading-point", id="markdown-leading-point"),
    pytest.param("vert", HEAD + "**0.70**", 0.7, "plain", id="bold"),
    pytest.param("vert", HEAD + "1,00", 1.0, "decimal-comma", id="one-decimal-comma"),
    pytest.param("vert_formula", HEAD + "Score = 3/(3+2) = 0.60", 0.6, "worked", id="formula-worked"),
    pytest.param("vert_formula", HEAD + "Score = M / (M + 2*S + 0.5*I) = 4 / (4 + 2*1 + 0.5*2) = 4/7 = 0.57",
                 0.57, "worked", id="formula-worked-long"),
    pytest.param("vert_formula", HEAD + "score = max(0, 1 − 0.15 × 2) = 0,70", 0.7, "worked",
                 id="worked-decimal-comma"),
    pytest.param("vert_formula", HEAD + "3/(3+1+0.5*0) = .75\n\nThe candidate misses one finding.", 0.75,
                 "worked", id="worked-leading-point-with-chatter"),
    pytest.param("vert", HEAD + "I would rate the candidate 0.85.", 0.85, "in-sentence", id="one-number-in-sentence"),
    pytest.param("vert", HEAD + "<score between 0 and 1>\n" + HEAD + "0.4", 0.4, "plain", id="template-then-answer"),
    pytest.param("vert_ft", "0.7", 0.7, "plain", id="ft-bare"),
    pytest.param("vert_ft", "Score: 0.7", 0.7, "plain", id="ft-score-colon"),
    pytest.param("vert_ft", "score = 0,65\nThe report misses the effusion.", 0.65, "decimal-comma", id="ft-comma"),
    pytest.param("vert_ft", ".9", 0.9, "leading-point", id="ft-leading-point"),
    pytest.param("vert_ft", "[Overall Accuracy Score]: 0.55", 0.55, "plain", id="ft-with-header"),
    # review 20 (F1): a numbered or lettered reason that mentions a number is no GREEN count line (parser 5 left
    # these unscored)
    pytest.param("vert", HEAD + "I would rate this report 0.8.\n1) It omits the 5 mm nodule in the right upper "
                 "lobe.\n2) Otherwise the findings match.", 0.8, "in-sentence", id="in-sentence-numbered-reasons"),
    pytest.param("vert_ft", "The candidate deserves 0.6 since\n1) it misses 2 findings", 0.6, "in-sentence",
                 id="ft-in-sentence-numbered-reason"),
    # a whole number in a bare answer's sentence is its score where a scoring word governs it (parser 18)
    pytest.param("vert_ft", "I would give it 1.", 1.0, "in-sentence", id="ft-whole-number-after-scoring-word"),
    pytest.param("vert_ft", "The score is 0 since the report names another patient.", 0.0, "in-sentence",
                 id="ft-zero-after-score-is"),
    # ... or where a score noun earlier in the clause, or an answer's label, states it (parser 19; review 41a: parser
    # 18 left these unscored)
    pytest.param("vert_ft", "The score would be 1.", 1.0, "in-sentence", id="ft-whole-number-score-would-be"),
    pytest.param("vert_ft", "The score for this report is 0.", 0.0, "in-sentence", id="ft-whole-number-score-for-is"),
    pytest.param("vert_ft", "Score is: 1", 1.0, "in-sentence", id="ft-whole-number-score-is-colon"),
    pytest.param("vert_ft", "Overall Accuracy: 1", 1.0, "in-sentence", id="ft-whole-number-accuracy-label"),
    pytest.param("vert_ft", "Final answer: 0", 0.0, "in-sentence", id="ft-whole-number-final-answer-label"),
    pytest.param("vert_ft", "I rate it as 1.", 1.0, "in-sentence", id="ft-whole-number-rate-it-as"),
    pytest.param("vert_ft", "The report deserves a perfect 1.", 1.0, "in-sentence", id="ft-whole-number-deserves-perfect"),
    pytest.param("vert", "[Overall Accuracy Score]\nScore of 0.7 given.\na) Missed finding: pleural effusion "
                 "(1 error).", 0.7, "in-sentence", id="in-sentence-lettered-reason"),
    pytest.param("vert", HEAD + "I would rate this report 0.8.\n1) Missing a finding: the 5 mm nodule in the "
                 "right upper lobe.", 0.8, "in-sentence", id="in-sentence-numbered-reason-naming-a-category"),
    pytest.param("vert", HEAD + "I would rate this report 0.8.\n1. The 5 mm nodule is missed.\n2. Size: 2 cm vs "
                 "3 cm.", 0.8, "in-sentence", id="in-sentence-reasons-numbered-with-period"),
    # a whole VERT answer (GREEN's analysis, then the score block) to the vert_ft prompt: its score block is read
    pytest.param("vert_ft", "[Explanation]:\nThe candidate misses 1 finding.\n\n[Clinically Significant Errors]:\n"
                 "(b) Missing a finding present in the reference: 1. Left pleural effusion.\n\n[Matched Findings]:\n"
                 "2. Cardiomegaly; atelectasis.\n\n[Overall Accuracy Score]:\n0.67", 0.67, "plain",
                 id="ft-whole-vert-answer"),
    # review 24, left unfixed (parser 10): sizes before the score line, a worked line's arithmetic
    pytest.param("vert_ft", "The nodule measures 1.5 vs 1.6 cm.\nScore: 0.8", 0.8, "plain", id="ft-sizes-then-score"),
    pytest.param("vert_formula", HEAD + "Final score: 1 minus 0.2 = 0.8", 0.8, "worked", id="worked-in-words"),
    pytest.param("vert_formula", HEAD + "Score = 3/(3+2*1+0.5*1) = 0.54", 0.54, "worked", id="worked-cut-not-rounded"),
])
def test_score_as_written(system, text, score, written):
    judgment = radmetrics.get_scoring_system(system).parse(text)
    assert judgment.parsed and judgment.score == pytest.approx(score)
    assert judgment.details["score_written"] == written


@pytest.mark.parametrize("system, text, reason", [
    pytest.param("vert", HEAD + "1,000", "no single reading", id="thousands-comma"),
    pytest.param("vert", HEAD + "1,5", "outside [0, 1]", id="comma-above-one"),
    pytest.param("vert", HEAD + "85%", "no readable number", id="percent"),
    pytest.param("vert", HEAD + "-.2", "outside [0, 1]", id="negative-leading-point"),
    pytest.param("vert_formula", HEAD + "Score = 3/(3+2) = 1.5", "outside [0, 1]", id="worked-out-of-range"),
    pytest.param("vert_formula", HEAD + "Score = 3/(3+2)", "no readable number", id="worked-without-result"),
    pytest.param("vert", HEAD + "between 0.6 and 0.7", "no single number", id="two-numbers"),
    pytest.param("vert", HEAD + "<Overall accuracy score between 0 and 1 given the total number of errors>",
                 "no single number", id="template-only"),
    pytest.param("vert_ft", "Score: 7", "outside [0, 1]", id="ft-out-of-range"),
    pytest.param("vert_ft", "The report is good.", "no", id="ft-words"),
    pytest.param("vert_ft", "", "empty judge output", id="ft-empty"),
    # review 19: a GREEN analysis answering the vert_ft prompt: its first item count was read as the score (0 or 1)
    pytest.param("vert_ft", "\n(e) Mentioning a finding's anatomic location of a finding: 0.\n(c) Mentioning a "
                 "comparison: 1.\n[Clinically Insignificant Errors]:\n(c) False report of the location: 0.",
                 "GREEN's error items", id="ft-green-items"),
    pytest.param("vert_ft", "(a) 1.\n(b) 0.", "GREEN's error items", id="ft-green-bare-items"),
    pytest.param("vert_ft", "(c) Mentioning a finding: 1.", "GREEN's error items", id="ft-one-green-item"),
    pytest.param("vert", HEAD + "about 0.7\n(a) False report of a finding: 1.", "GREEN's error items",
                 id="in-sentence-then-green-items"),
    pytest.param("vert", HEAD + "about 0.7\n**(b)** Missing a finding: **2**", "GREEN's error items",
                 id="in-sentence-then-bold-green-count"),
    pytest.param("vert_ft", "(a) False report of a finding: 1 (the effusion).\n(b) 0.", "GREEN's error items",
                 id="ft-green-item-with-detail-first"),
    # review 21 (H3): GREEN's analysis, its first number in the explanation and each count followed by the
    # finding (GREEN's own layout), was read as the score 1.0 by parser 6
    pytest.param("vert_ft", "[Explanation]:\nThe candidate report describes 1 additional view.\n\n[Clinically "
                 "Significant Errors]:\n(b) Missing a finding present in the reference: 1. Left pleural effusion.\n\n"
                 "[Clinically Insignificant Errors]:\nNo clinically insignificant errors.\n\n[Matched Findings]:\n2. "
                 "Cardiomegaly; atelectasis.", "GREEN's", id="ft-green-analysis-counts-with-details"),
    pytest.param("vert_ft", "[Explanation]:\nThe candidate describes 1 additional view.\n[Clinically Significant "
                 "Errors]:\nNo clinically significant errors.\n[Matched Findings]:\n3 findings.", "GREEN's",
                 id="ft-green-sections-without-items"),
    # review 21 (H4): GREEN items numbered "1.", lettered "b." or in bold, or without a marker, read as 1.0
    pytest.param("vert_ft", "1. False report of a finding in the candidate: 0.\n2. Missing a finding present in "
                 "the reference: 1.\n3. Misidentification of a finding's anatomic location/position: 0.",
                 "GREEN's error items", id="ft-green-items-numbered"),
    pytest.param("vert_ft", "[Explanation]:\nThe candidate misses the effusion.\n\n[Clinically Significant "
                 "Errors]:\n**(b)** Missing a finding present in the reference: 1. Left pleural effusion.\n\n"
                 "[Matched Findings]:\n2. Cardiomegaly; atelectasis.", "GREEN's", id="ft-green-analysis-bold-item"),
    pytest.param("vert_ft", "**(b)** Missing a finding present in the reference: 1. Left pleural effusion.",
                 "GREEN's error items", id="ft-green-bold-item-with-detail"),
    pytest.param("vert_ft", "b. Missing a finding present in the reference: 1. Left pleural effusion.\n"
                 "2. Cardiomegaly; atelectasis.", "GREEN's error items", id="ft-green-item-letter-period"),
    pytest.param("vert_ft", "Missing a finding present in the reference: 1.", "GREEN's error items",
                 id="ft-green-item-without-marker"),
    pytest.param("vert", HEAD + "I would rate it 0.7.\n1. False report of a finding in the candidate: 1.",
                 "GREEN's error items", id="in-sentence-then-numbered-green-item"),
    pytest.param("vert", HEAD + "about 0.7\nb. Missing a finding: 1. Left pleural effusion.", "GREEN's error items",
                 id="in-sentence-then-green-item-with-detail"),
    # review 39b: a small judge's GREEN analysis with its sections glued mid-line and its items' markers lost, read as
    # 1.0 (lm_eval's rexval_judge_vert_ft on the tests' tiny GREEN judge); GREEN's words anywhere say what it is
    pytest.param("vert_ft", "The left Misidentification of a finding's anatomic location/position: 1.\n(f) Mentioning a "
                 "comparison detailing a change from a prior study upper[Matched Findings]:\n0. Both",
                 "GREEN's analysis", id="ft-green-words-mid-line"),
    pytest.param("vert_ft", "Omitting a comparison that isn't in the reference: 1. The monitoring devices are unchanged.",
                 "GREEN's analysis", id="ft-green-item-label-then-prose"),
    # review 39b, left then: a small judge's garbled sentence with a lone 0 or 1 in it was read as 0.0 or 1.0
    pytest.param("vert_ft", "The candidate report is 1 the effusion upper lobe.", "no scoring word",
                 id="ft-lone-one-in-garbled-sentence"),
    pytest.param("vert_ft", "left lower 0 pleural the of", "no scoring word", id="ft-lone-zero-in-garbled-sentence"),
    pytest.param("vert_ft", "The report is accurate. 1", "no scoring word", id="ft-whole-number-after-a-sentence"),
    pytest.param("vert_ft", "The score is high and the candidate report is 1 the effusion", "no scoring word",
                 id="ft-score-noun-in-another-clause"),
    pytest.param("vert_ft", "The candidate answer: the effusion 1 upper lobe", "no scoring word",
                 id="ft-answer-label-not-right-before"),
])
def test_unreadable_or_out_of_range_is_unscored(system, text, reason):
    judgment = radmetrics.get_scoring_system(system).parse(text)
    assert judgment.score is None and not judgment.parsed and reason in judgment.reason


@pytest.mark.parametrize("text, score, reason", [
    # a sentence after the answer that mentions "overall accuracy score" is not a second header (was 1.0)
    (HEAD + "0.40\n\nThe overall accuracy score reflects 1 clinically significant error.", 0.4, None),
    (HEAD + "0.85\n\nExplanation: the overall accuracy score is high since only 1 minor error was found.", 0.85, None),
    ("**Overall Accuracy Score:** 0.9\n\nThe overall accuracy score of 0.9 reflects one omission.", 0.9, None),
    ("## Overall Accuracy Score\n0.7", 0.7, None),
    ("4. [Overall Accuracy Score]: 0.55", 0.55, None),
    (HEAD + "0.85 (1 minor error)", 0.85, None),
    (HEAD + "0.85 - high accuracy", 0.85, None),
    (HEAD + "Score = 0.6667 ≈ 0.67", 0.67, None),  # the rounded answer, not the step before it
    (HEAD + "Score = 2/3 ≈ 0.67", 0.67, None),
    (HEAD + "0.4\n\n" + HEAD + "0.4", 0.4, None),
    # an empty score section is not read from the next section (was 1.0)
    (HEAD + "\n[Matched Findings]:\n1. Cardiomegaly", None, "no readable number"),
    (HEAD + "[Matched Findings]: 1. Cardiomegaly", None, "no readable number"),
    # ranges and hedges (the Rubric prompt prints its bands with dashes) were their first value
    (HEAD + "0.75–0.89 (High accuracy)", None, "range, hedge"),
    (HEAD + "0.75—0.89", None, "range, hedge"),
    (HEAD + "0.75 to 0.89", None, "range, hedge"),
    (HEAD + "0.6 or 0.7", None, "range, hedge"),
    # a count or another scale is not the score (was 1.0)
    (HEAD + "1 out of 5", None, "range, hedge"),
    (HEAD + "1 significant error, so 0.5", None, "a count, not a score"),
    (HEAD + "N/A (1 finding only)", None, "gives no score"),
    # two answers that disagree
    (HEAD + "0.4\n\n" + HEAD + "0.6", None, "given 2 times with different scores (0.4, 0.6)"),
    # review 15 (V1): a second score after the first was the first
    (HEAD + "0.8, revised to 0.6", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.9 initially; after review 0.5", None, "gives more than one score (0.9, then '0.5')"),
    (HEAD + "0.7 (maybe 0.8)", None, "gives more than one score (0.7, then '0.8')"),
    (HEAD + "0.7\n0.9", None, "gives more than one score (0.7, then '0.9')"),
    (HEAD + "0.70\n\nThat is, 0.7: one significant error in 1.5 findings' worth", 0.7, None),
    # review 16: explanation after the score is no second score
    (HEAD + "0.85 (one minor error; 0.9 would need no errors)", 0.85, None),
    (HEAD + "0.60 (Moderate accuracy: 0.50-0.74)", 0.6, None),
    (HEAD + "0.85\n\nOne minor discrepancy; a perfect report would score 1.0.", 0.85, None),
    (HEAD + "0.85\nThe 0.5 cm difference in nodule size is minor.", 0.85, None),
    (HEAD + "0.85\nConfidence: 0.9", 0.85, None),
    (HEAD + "Score = 2/(2+1) = 0.666\nRounded: 0.67", 0.666, None),
    (HEAD + "0.625\nRounded to two decimals: 0.63", 0.625, None),
    (HEAD + "0.8\n**Final score: 0.6**", None, "gives more than one score (0.8, then '0.6')"),
    # review 17: a revision in other words, or under another header form, was read as the first (or the last) score
    (HEAD + "0.8\n\nUpon review, I revise the score to 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8 (more accurately 0.6)", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\n- 0.6", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\n\nAfter reviewing again:\n**Overall Accuracy Score:** 0.6", None, "given 2 times with different"),
    (HEAD + "0.8, revised to 0.6\n\nOverall Accuracy Score = 0.6", None, "gives more than one score (0.8, then"),
    # ... while counts, fractions, rejected alternatives, hypotheticals and roundings are explanation
    (HEAD + "1.0 (no false findings or omissions; 0 clinically significant errors)", 1.0, None),
    (HEAD + "0.5 (or 1/2)", 0.5, None),
    (HEAD + "0.7 instead of 1.0 because of one missed finding", 0.7, None),
    (HEAD + "0.85; it could be 1.0 if the nodule were reported", 0.85, None),
    (HEAD + "0.75\n\nBreakdown:\nMatched: 3\nErrors: 1\nResult: 0.75", 0.75, None),
    (HEAD + "0.75\nScore = 3/4 = 0.75\nRounded: 0.8", 0.75, None),
    # review 21 (H4): a revision in words that also name a rounding or a restatement ("about", "rounded",
    # "below") was read as the score it revises (0.75); either the later score or none, never the superseded one
    (HEAD + "0.75\nAfter reconsidering the missed effusion, I lower it to about 0.5.", None,
     "gives more than one score (0.75, then '0.5')"),
    (HEAD + "0.75\nGiven the missed effusion, the final score is rounded down to 0.5.", None,
     "gives more than one score (0.75, then '0.5')"),
    (HEAD + "0.75\nOn reflection I lower it to below 0.5.", None, "gives more than one score (0.75, then '0.5')"),
    (HEAD + "0.72\nI revise it down to about 0.7.", None, "gives more than one score (0.72, then '0.7')"),
    (HEAD + "0.75\nI would lower it to 0.5 approximately.", None, "gives more than one score (0.75, then '0.5')"),
    (HEAD + "0.75 (about 0.5 after the missed effusion)", None, "gives more than one score (0.75, then '0.5')"),
    # ... while a rounding of the score, and a rejected alternative beside a restated score, stay explanation
    (HEAD + "0.67 (about 0.7)", 0.67, None),
    (HEAD + "0.66 (approximately 0.7)", 0.66, None),
    (HEAD + "0.7\nI lowered it to 0.7 instead of 1.0 because of the missed effusion.", 0.7, None),
    # review 22 (M1): explanation of a deduction from a perfect 1.0, or words like "correctly", "interval change",
    # "increased", "final impression", was read as a revision by parser 7 and left these answers unscored
    (HEAD + "0.75 (reduced from 1.0 for the missed effusion)", 0.75, None),
    (HEAD + "0.75, lowered from 1.0 because of the missed effusion", 0.75, None),
    (HEAD + "0.60 - dropped from 1.0 because of two significant errors", 0.6, None),
    (HEAD + "0.80\nOne significant error reduced the score from 1.0.", 0.8, None),
    (HEAD + "0.75\n\nThe score was reduced from 1.0 for one significant error.", 0.75, None),
    (HEAD + "0.85\nThe score is reduced from a perfect 1.0 because of the missed effusion.", 0.85, None),
    (HEAD + "0.80\nThe candidate correctly identifies cardiomegaly but misses the effusion, so it is rated below "
     "1.0.", 0.8, None),
    (HEAD + "0.90\nIt describes the interval change correctly; one minor omission keeps it from 1.0.", 0.9, None),
    (HEAD + "0.70\nIt misses the increased opacity, so the score is lower than 1.0.", 0.7, None),
    (HEAD + "0.85\nThe final impression matches, but one minor error keeps the score under 1.0.", 0.85, None),
    (HEAD + "0.70\nI lowered the score instead of 1.0 because of the missed effusion.", 0.7, None),
    (HEAD + "0.85\nA perfect report would score about 1.0.", 0.85, None),
    (HEAD + "0.70\nEach significant error reduces the score by about 0.15.", 0.7, None),
    (HEAD + "0.85\nOne clinically significant error decreases the score by 0.15.", 0.85, None),
    (HEAD + "0.75\nThe score is lowered to reflect 1 clinically significant error (approximately 0.25 deduction).",
     0.75, None),
    (HEAD + "0.80\nAdjusted for one insignificant error; otherwise approximately 1.0.", 0.8, None),
    (HEAD + "0.62\nThe final score, rounded, is about 0.6.", 0.62, None),
    (HEAD + "0.75\nRounded: 0.8", 0.75, None),
    (HEAD + "0.75\nI reduced the score by 0.25 for the missed effusion.", 0.75, None),
    (HEAD + "0.75\nI lower it by 0.25 for the missed effusion.", None, "gives more than one score (0.75, then '0.25')"),
    # review 22 (L4): a revision stated as such is a second score even within a rounding of the first
    (HEAD + "0.75\nOn second thought, about 0.7 is fairer.", None, "gives more than one score (0.75, then '0.7')"),
    (HEAD + "0.75\nMore accurately ~0.8.", None, "gives more than one score (0.75, then '0.8')"),
    (HEAD + "0.75\nThe final score is about 0.7.", None, "gives more than one score (0.75, then '0.7')"),
    (HEAD + "0.75\nMore accurately, it is below 0.5.", None, "gives more than one score (0.75, then '0.5')"),
    # review 23 (H1): "overall", "underestimates", "by the rubric", or a comparison in an earlier sentence
    # made a revision after the score keep the score it revises; (H2) so did "per ..." or "would ..." after
    # the new score, and "from 0.8 to 0.6" (read as a rubric band holding 0.8)
    (HEAD + "0.8\nOverall, I would give 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nHowever, overall it deserves 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nTaking everything into account, the overall score is 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nThus, the overall accuracy is 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nThe candidate underestimates the effusion: 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nBut the error is worse than minor. Score 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nJudged by the rubric, it merits 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nI lower it to 0.6 per the rubric.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nThe revised score is 0.6 per the rubric.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nFinal score: 0.6 per the rubric.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nMore accurately, 0.6 per the VERT criteria.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nOn second thought, 0.6 would be fairer.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nActually, 0.6 would be more appropriate.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nI reduce it from 0.8 to 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nRevised down from 0.8 to 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nWith the missed effusion, the score drops from 0.8 to 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    # review 23 (M1): a deduction amount is no score
    (HEAD + "0.7\nI deducted about 0.3 for the missed effusion.", 0.7, None),
    (HEAD + "0.7\nA deduction of about 0.3 for the missed effusion.", 0.7, None),
    (HEAD + "0.7\nThe candidate correctly describes the increase in the lower lobe opacity; about 0.3 was deducted.", 0.7, None),
    # review 24 (H1): a proposal after the score ("would better reflect", "could also be justified") is no
    # hypothetical; (H2) a comparison, deduction or scale-end word a clause away from a revision made it
    # explanation; (H3) "I'd lower it by"; (H4) "0.6 out of 1" and "0.6 – 1 significant error" were counts or a band
    (HEAD + "0.8\nA score of 0.6 would better reflect the missed effusion.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\n(0.7 could also be justified.)", None, "gives more than one score (0.8, then '0.7')"),
    (HEAD + "0.8\nIn my view 0.6 would be closer to the truth.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nGiven the above, I would assign 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nBased on the above, the score is 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nFrom this, I give 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nThe missed effusion is more serious than I thought, so 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nI lowered it by a lot, to 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nAfter applying the penalty, the score is 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.85\nThe effusion is missed. After the deduction, the score is 0.7.", None, "gives more than one score (0.85, then '0.7')"),
    (HEAD + "0.8\nHonestly, the report is only worth 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nThis is not a perfect report. I give it 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nThe candidate is far from perfect, so I'd give 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nIt's not great, 0.6.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.75\nI'd lower it by 0.25 for the missed effusion.", None, "gives more than one score (0.75, then '0.25')"),
    (HEAD + "0.75\nI’ll lower it by 0.25 for the missed effusion.", None, "gives more than one score (0.75, then '0.25')"),
    (HEAD + "0.8\nRevised: 0.6 out of 1.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\n\nFinal: 0.6 – 1 clinically significant error (missed effusion)", None, "gives more than one score (0.8, then '0.6')"),
    # review 24 (H5): a score on another scale, a count, or a note under "N/A" was read as the score
    (HEAD + "1 (out of 5)", None, "another scale"),
    (HEAD + "**1** out of 5", None, "another scale"),
    (HEAD + "1 (on a scale of 1-5)", None, "another scale"),
    (HEAD + "M = 4, S = 0, I = 0\nScore = 4/4 = 1", None, "a count, not a score"),
    (HEAD + "Clinically significant errors: 0\nThe candidate is a perfect match: 1.0", None, "a count, not a score"),
    (HEAD + "N/A (cannot be assessed)\n\nNote: the reference is missing, so the score would default to 0.", None, "gives no score"),
    (HEAD + "Not applicable\n(A perfect report would be 1.0)", None, "gives no score"),
    # ... while the explanations these words are for stay explanation, and VERT's own scale written out is read (M1)
    (HEAD + "0.8/1", 0.8, None),
    (HEAD + "**0.70/1.00**", 0.7, None),
    (HEAD + "0.80 out of 1.00", 0.8, None),
    (HEAD + "0.8 (on a scale of 0 to 1)", 0.8, None),
    (HEAD + "0.7, not 1.0", 0.7, None),
    (HEAD + "0.8\nOne minor error lowers the score by roughly 0.2 from the maximum of 1.0.", 0.8, None),
    (HEAD + "0.95\nThe report falls slightly short of the maximum score of 1.0.", 0.95, None),
    (HEAD + "0.7\nTwo errors, each worth 0.15.", 0.7, None),
    (HEAD + "0.85\nMy confidence in this score is about 0.9.", 0.85, None),
    (HEAD + "M = 3, S = 1, I = 0 → Score = 3/(3+2) = 0.60", 0.6, None),
    # review 24 (M2-M4): a header with its scale or a dash, a worked result followed by its band's name, and a
    # deduction from 1.0 written out left these well-formed answers unscored
    ("Overall Accuracy Score (0-1): 0.8", 0.8, None),
    ("**Overall Accuracy Score (0.0 to 1.0):** 0.75", 0.75, None),
    ("Overall Accuracy Score – 0.8", 0.8, None),
    # parser 14: a score in code format after a header with no colon (review 29b's drift fuzzer: unscored, "no
    # [Overall Accuracy Score]"); an echoed template in code format is still no score
    ("[Overall Accuracy Score] `0.8`", 0.8, None),
    ("**[Overall Accuracy Score]** `0.65`", 0.65, None),
    ("[Overall Accuracy Score] `<score between 0 and 1>`", None, "has no single number"),
    ("Overall accuracy score (as described) reflects 1 error.", None, "no [Overall Accuracy Score]"),
    (HEAD + "Score = 1 - 0.15*1 = 0.85 → High accuracy", 0.85, None),
    (HEAD + "Score = 3/(3+2) → see note", None, "does not end in a number"),
    (HEAD + "0.75 (1.0 minus 0.25 for the missed effusion)", 0.75, None),
    (HEAD + "0.75 (1.0 − 0.25)", 0.75, None),
    (HEAD + "0.75\n\nStarting at 1.0, I deducted 0.25 for the missed effusion.", 0.75, None),
    (HEAD + "0.8\n1.0 minus 0.4 gives 0.6", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nStarting at 1.0 is wrong; 0.6 fits.", None, "gives more than one score (0.8, then '0.6')"),
    # review 24: a proposal with a condition stays hypothetical (a regression of the H1 fix before this test), one
    # with a reason is a second score; a deduction written as a label is a deduction (M5)
    (HEAD + "0.85\n0.9 would be appropriate if the nodule size were right.", 0.85, None),
    (HEAD + "0.8\n0.6 would be fairer since the errors were significant.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.7\nPenalty: 0.3 for the missed effusion.", 0.7, None),
    (HEAD + "0.7\nDeductions: -0.3 for the missed effusion.", 0.7, None),
    (HEAD + "0.8\nDeduction: the score is 0.6", None, "gives more than one score (0.8, then '0.6')"),
    # review 24 (left unfixed; parser 9): a revision written as a whole number, a percentage or x/10 was no candidate
    # and the first score was read; a revising or scoring word governs it ("0.8\nFinal score: 0" was unscored before)
    ("[Overall Accuracy Score]: 0.9\nOn reflection, I'd give it a 1.", None,
     "gives more than one score (0.9, then '1')"),
    ("[Overall Accuracy Score]: 0.9\nThe revised score is 1.", None, "gives more than one score (0.9, then '1')"),
    ("[Overall Accuracy Score]: 0.9\nI'd give it a 1.", None, "gives more than one score (0.9, then '1')"),
    ("[Overall Accuracy Score]: 0.8\n60% is fairer.", None, "gives more than one score (0.8, then '60%')"),
    ("[Overall Accuracy Score]: 0.8\nOn reflection, 60% is fairer.", None,
     "gives more than one score (0.8, then '60%')"),
    ("[Overall Accuracy Score]: 0.8\nFinal score: 6/10", None, "gives more than one score (0.8, then '6/10')"),
    ("[Overall Accuracy Score]: 0.8\nFinal score: 6 out of 10", None,
     "gives more than one score (0.8, then '6 out of 10')"),
    ("[Overall Accuracy Score]: 0.8\nActually, a score of 1 is more appropriate.", None,
     "gives more than one score (0.8, then '1')"),
    ("[Overall Accuracy Score]: 0.8\nFinal score: 0", None, "gives more than one score (0.8, then '0')"),
    ("[Overall Accuracy Score]: 0.8\nI lower it to 60%.", None, "gives more than one score (0.8, then '60%')"),
    ("[Overall Accuracy Score]: 0.8\nI lower it to 0.", None, "gives more than one score (0.8, then '0')"),
    ("[Overall Accuracy Score]: 0.8\nI lower it from 80% to 60%.", None, "gives more than one score (0.8, then '60%')"),
    ("[Overall Accuracy Score]: 0.8\n**Adjusted score: 70%**", None, "gives more than one score (0.8, then '70%')"),
    ("[Overall Accuracy Score]: 0.8\nOn second thought, 7/10.", None, "gives more than one score (0.8, then '7/10')"),
    # ... while counts, sizes, years, list numbers, vertebrae, the scale, the score restated as a percentage or x/10,
    # hypotheticals, rubric definitions and clinical percentages are explanation
    (HEAD + "0.8\nThe candidate misses 1 finding.", 0.8, None),
    (HEAD + "0.8\nThere is 1 clinically significant error.", 0.8, None),
    (HEAD + "0.8\n2 errors: the effusion and the nodule.", 0.8, None),
    (HEAD + "0.8\nA 1.5 cm nodule is missed.", 0.8, None),
    (HEAD + "0.8\nCompared with the 2019 study, the effusion is new.", 0.8, None),
    (HEAD + "0.8\n(80%)", 0.8, None),
    (HEAD + "0.8 (i.e., 80%)", 0.8, None),
    (HEAD + "0.8\n8/10", 0.8, None),
    (HEAD + "0.8\nFinal score: 8/10", 0.8, None),
    (HEAD + "0.8 out of 1", 0.8, None),
    (HEAD + "0.8\n1. The effusion is missed.\n2. The nodule is correct.", 0.8, None),
    (HEAD + "0.8\nThe T12 vertebral fracture is missed.", 0.8, None),
    (HEAD + "0.8 on a scale of 0-1", 0.8, None),
    (HEAD + "0.8\nThe score is on a scale of 0-1.", 0.8, None),
    (HEAD + "0.8\nOn reflection, 1 finding is missed.", 0.8, None),
    (HEAD + "0.8\nAfter review, 75% of the findings match.", 0.8, None),
    (HEAD + "0.8\nA perfect report would score 1.", 0.8, None),
    (HEAD + "0.8\nI would give it a 1 if the nodule were reported.", 0.8, None),
    (HEAD + "0.8\nA score of 1 means a perfect match.", 0.8, None),
    (HEAD + "0.9\nI would not give it a 1 because of the missed nodule.", 0.9, None),
    (HEAD + "0.85\nThe stenosis increased to 70%.", 0.85, None),
    (HEAD + "0.8\nFinal score = 1 - 0.2 = 0.8", 0.8, None),
    (HEAD + "0.67 (67%)", 0.67, None),
    # review 24, left unfixed (parser 10). A whole number other than 0/1 after the score, where a scoring or revising
    # word governs it, is a second score on no stated scale ("I'd give it a 7" kept 0.8), and "3 out of 5" one on
    # another scale (kept 0.8) ...
    (HEAD + "0.8\nHonestly I'd give it a 7 out of 10.", None, "gives more than one score (0.8, then '7 out of 10')"),
    (HEAD + "0.8 ... Honestly I'd give it a 7 out of 10", None, "gives more than one score (0.8, then '7 out of 10')"),
    (HEAD + "0.8\nI'd give it a 7.", None, "gives more than one score (0.8, then '7', a whole number not on VERT's 0-1 scale)"),
    (HEAD + "0.8\nThe revised score is 7.", None, "(0.8, then '7', a whole number not on VERT's 0-1 scale)"),
    (HEAD + "0.8\nFinal score: 8", None, "(0.8, then '8', a whole number not on VERT's 0-1 scale)"),
    (HEAD + "0.8\nI lower it to 7.", None, "(0.8, then '7', a whole number not on VERT's 0-1 scale)"),
    (HEAD + "0.8\nI would give it a 3 out of 5.", None, "gives more than one score (0.8, then '3 out of 5')"),
    # ... while the score restated on another stated scale, hypotheticals, negations, counts, a finding's grade, a
    # clinical number after a verb, a rubric definition and a fraction worked on keep the score
    (HEAD + "0.8\nHonestly I'd give it an 8 out of 10.", 0.8, None),
    (HEAD + "0.75\nScore: 7.5/10", 0.75, None),
    (HEAD + "0.8\nScore: 7.5/10", None, "gives more than one score (0.8, then '7.5')"),
    (HEAD + "0.8\nI would give it a 4 out of 5.", 0.8, None),
    (HEAD + "0.75\nI'd give it a 3 out of 4.", 0.75, None),
    (HEAD + "0.7\nI would give it a 9 if the nodule were reported.", 0.7, None),
    (HEAD + "0.9\nI would not give it a 10.", 0.9, None),
    (HEAD + "0.8\nThe score reflects 2 errors.", 0.8, None),
    (HEAD + "0.8\nScore: 4 matched, 1 missed.", 0.8, None),
    (HEAD + "0.8\nSeverity score: 2 (moderate).", 0.8, None),
    (HEAD + "0.8\nGrade 2 effusion is described as grade 1.", 0.8, None),
    (HEAD + "0.8\nBI-RADS 4 lesion.", 0.8, None),
    (HEAD + "0.85\nThe stenosis increased to 70.", 0.85, None),
    (HEAD + "0.8\nA score of 5 means a perfect match.", 0.8, None),
    (HEAD + "0.57\nScore = 4/7 = 0.57", 0.57, None),
    # the rubric band named before the score is read past (it was "no single number") when the score lies in it; a
    # band set aside in the explanation is no second score
    (HEAD + "High accuracy (0.75-0.89)\n0.85", 0.85, None),
    (HEAD + "High accuracy (0.75–0.89)\n0.85", 0.85, None),
    (HEAD + "**High accuracy (0.75–0.89)**\n**Score:** 0.85", 0.85, None),
    (HEAD + "High accuracy (0.75–0.89): 0.85", 0.85, None),
    (HEAD + "0.75–0.89: High accuracy\n0.8", 0.8, None),
    (HEAD + "0.70\nModerate accuracy (0.50–0.74) rather than High accuracy (0.75–0.89).", 0.7, None),
    (HEAD + "High accuracy (0.75–0.89)\n0.6", None, "gives 0.6 outside the band it names"),
    (HEAD + "High accuracy (0.75–0.89)", None, "no single number"),
    (HEAD + "0.75–0.89\n0.8", None, "no readable number"),
    (HEAD + "High accuracy (0.75–0.89)\n0.85 or 0.8", None, "no readable number"),
    (HEAD + "High accuracy (0.75–0.89)\n0.85\nOn reflection, 0.7.", None, "gives more than one score (0.85, then '0.7')"),
    (HEAD + "Near-perfect agreement (0.90–1.00)\n1. The effusion is missed.", None, "a numbered list, not a score"),
    (HEAD + "0.70\nThis is High accuracy (0.75–0.89).", None, "gives more than one score (0.7, then '0.75')"),
    (HEAD + "0.70\nOn reflection, High accuracy (0.75–0.89) fits better.", None, "gives more than one score (0.7, "),
    # sizes and clinical ratios are no scores: beside the score (they were second scores), on a line before a score
    # line (it was "no single number"), or where the score goes ("The effusion is 0.5 cm." was 0.5, "0.6 cm" 0.6)
    (HEAD + "0.85 (nodule 1.5 vs 1.6 cm)", 0.85, None),
    (HEAD + "0.85 (nodule 1.5-1.6 cm)", 0.85, None),
    (HEAD + "0.85\nThe cardiothoracic ratio of 0.6 is reported.", 0.85, None),
    (HEAD + "The nodule measures 1.5 vs 1.6 cm.\nScore: 0.8", 0.8, None),
    (HEAD + "The effusion is 0.5 cm.\n0.8", 0.8, None),
    (HEAD + "I would rate it 0.8 given the 1.5 vs 1.6 cm nodule.", 0.8, None),
    (HEAD + "The nodule is 1.5 vs 1.6 cm; score: 0.8", 0.8, None),
    (HEAD + "The effusion is 0.5 cm.", None, "gives a measurement, not a score"),
    (HEAD + "0.6 cm", None, "gives a measurement, not a score"),
    (HEAD + "The nodule is 1.5 cm.\nThe report is good, 0.8.", None, "states no score (on its own line or after a scoring word)"),
    (HEAD + "Compared with 2019, the nodule is 1.5 cm.\nScore: 0.8", None, "no single number"),
    (HEAD + "0.8\nRevised: 0.6 - 5 mm nodule missed.", None, "gives more than one score (0.8, then '0.6')"),
    (HEAD + "0.8\nRevised: 0.6 and 5 mm nodule missed.", None, "gives more than one score (0.8, then '0.6')"),
    # a worked line is its result where its arithmetic checks out ("1 minus 0.2 = 0.8" after the score was a second
    # score 0.2), and has no single reading where it does not ("= 0.7" was 0.7, "3/4 = 1" 1.0)
    (HEAD + "0.8\nFinal score: 1 minus 0.2 = 0.8", 0.8, None),
    (HEAD + "0.75\nScore = 1 - (0.15 + 0.1) = 0.75", 0.75, None),
    (HEAD + "0.7\nScore = 1 - 0.15 * 2 = 0.7", 0.7, None),
    (HEAD + "Final score: 1 minus 0.2 = 0.7", None, "its arithmetic does not check out"),
    (HEAD + "Score = 3/4 = 1", None, "its arithmetic does not check out"),
    (HEAD + "0.8\nFinal score: 1 minus 0.3 = 0.8", None, "whose arithmetic does not check out"),
    (HEAD + "0.8\nFinal score = 1 - 0.3 = 0.8", None, "whose arithmetic does not check out"),
    (HEAD + "0.8\nFinal score: 1 minus 0.4 = 0.6", None, "gives more than one score (0.8, then '0.4')"),
    # a numbered list's first number is no score (both were 1.0)
    (HEAD + "1) The effusion is missed.", None, "a numbered list, not a score"),
    (HEAD + "1. The effusion is missed.\n2. The nodule is correct.", None, "a numbered list, not a score"),
    # a list's first item alone, or a score of 1 then a sentence: no single reading (was 1.0 with an error named)
    (HEAD + "1. The effusion is missed.", None, "'1.' then a sentence is a list item or a score of 1"),
    (HEAD + "1. **Perfect** match.", None, "no single reading"),
    (HEAD + "1.\nThe report matches the reference.", 1.0, None),
    (HEAD + "1.0. The report matches the reference.", 1.0, None),
    (HEAD + "0. The report misses every finding.", 0.0, None),
])
def test_only_the_score_the_judge_gave_is_read(text, score, reason):
    """Fidelity audit (VERT parser version 3): each of these gave a number the judge had not given as its score."""
    judgment = radmetrics.get_scoring_system("vert").parse(text)
    if reason is None:
        assert judgment.parsed and judgment.score == pytest.approx(score)
    else:
        assert judgment.score is None and reason in judgment.reason


def test_a_long_looping_answer_parses_in_linear_time():
    """review 23 (M2): each number looked back over the whole answer; a 34k-character loop took 18 s and this one
    ~60 s. Linear, it takes ~0.5 s here: the bound leaves room for a loaded CI machine."""
    import time

    text = "[Overall Accuracy Score]: 0.8 " + "reduced from 0.5 " * 3600
    assert len(text) > 60_000
    began = time.perf_counter()
    judgment = radmetrics.get_scoring_system("vert").parse(text)
    assert time.perf_counter() - began < 6.0
    assert judgment.parsed and judgment.score == pytest.approx(0.8)


@pytest.mark.parametrize("text", [
    pytest.param("Overall Accuracy Score" + " " * 3000 + "x", id="header-then-blanks"),
    pytest.param("[Overall Accuracy Score]: 0.8\n" + " \t" * 10_000 + "x", id="line-of-blanks"),
    pytest.param("[Overall Accuracy Score]: 0.8" + "\n" * 20_000 + "x", id="blank-lines"),
    pytest.param("[Overall Accuracy Score]:\n(a) " + " " * 20_000 + "x1", id="green-marker-then-blanks"),
    pytest.param("(a)" + " " * 10_000 + ":" + " " * 10_000 + "1x", id="green-item-blanks"),
    pytest.param("[Overall Accuracy Score]: 0.8\n1" + " " * 20_000 + "x", id="zero-one-then-blanks"),
    pytest.param("[Overall Accuracy Score]: 0.8 " + "1 " * 15_000, id="whole-numbers"),
    pytest.param("[Overall Accuracy Score]: 0.8 " + "I'd give it a 1 if it were perfect. " * 1_600,
                 id="governed-whole-numbers"),
    pytest.param("[Overall Accuracy Score]: 0.8 " + "7 " * 15_000, id="whole-numbers-on-no-scale"),
    pytest.param("[Overall Accuracy Score]: 0.8 " + "a" * 30_000 + " 1", id="letters-then-a-number"),
    pytest.param("[Overall Accuracy Score]:\nHigh accuracy" + " " * 20_000 + "(0.75-0.89)\n0.8", id="band-then-blanks"),
    pytest.param("[Overall Accuracy Score]: 0.8 " + "1.5 x " * 5_000, id="size-chain"),
    pytest.param("[Overall Accuracy Score]: 0.8\n" + "1.5" + " \t" * 10_000 + "-" + " " * 10_000 + "y", id="size-blanks"),
    pytest.param("[Overall Accuracy Score]: 0.8\n" + "Final score: 1 minus 0.2 = 0.8\n" * 1_000, id="worked-lines"),
    pytest.param("[Overall Accuracy Score]: 0.8\nScore = " + "(1 - " * 10_000 + "0.2 = 0.8", id="worked-parentheses"),
    pytest.param("[Overall Accuracy Score]:\n" + "The nodule is 1.5 cm.\n" * 3_000 + "Score: 0.8", id="lines-of-sizes"),
])
def test_runs_of_blanks_parse_in_linear_time(text):
    """review 24: a looping judge's run of blanks took quadratic (the header: cubic) time in patterns with two
    adjacent blank loops; 3,000 blanks after a header line took minutes, 20,000 blank lines 7 s, a GREEN marker
    followed by 20,000 blanks 25 s. Each now parses in milliseconds: the bound leaves room for a loaded machine."""
    import time

    from radmetrics.vert.parse import VertParseError, read_bare_score, read_overall_score_with_form

    began = time.perf_counter()
    for read in (read_overall_score_with_form, read_bare_score):
        try:
            read(text)
        except VertParseError:
            pass
    assert time.perf_counter() - began < 2.0


def test_a_looping_run_of_whole_numbers_costs_little_more_than_words():
    """review 24: parser 9 looked at every whole number after the score for a word that governs it, and a looping
    "1 1 1 ..." took ~20x as long as the same length of words. Only numbers with a word beside them are looked at
    now (one pass of a pattern). Compared with words in the same run, so a loaded machine moves both."""
    import time

    from radmetrics.vert.parse import read_overall_score_with_form

    def fastest(text: str) -> float:
        times = []
        for _ in range(3):
            began = time.perf_counter()
            read_overall_score_with_form(text)
            times.append(time.perf_counter() - began)
        return min(times)

    head = "[Overall Accuracy Score]: 0.8 "
    assert fastest(head + "1 " * 30_000) < 8 * fastest(head + "a " * 30_000) + 0.05


def test_a_line_of_blanks_after_the_score_parses_in_linear_time():
    """review 24 (H6): the VERT systems read GREEN's counts (read_counts -> parse_green) after the score, and GREEN's
    line-header pattern backtracked cubically over a line of blanks: 1,000 took 47 s."""
    import time

    text = "[Overall Accuracy Score]: 0.8\n" + " \t" * 10_000 + "x"
    began = time.perf_counter()
    judgment = radmetrics.get_scoring_system("vert").parse(text)
    radmetrics.get_scoring_system("vert_ft").parse(text)
    assert time.perf_counter() - began < 2.0
    assert judgment.parsed and judgment.score == pytest.approx(0.8)


@pytest.mark.parametrize("system, text, score, reason", [
    # a draft score in closed drafting, and an answer that gives none (was the draft's 0.3)
    ("vert", "<think>\n" + HEAD + "0.30\n</think>\nThe candidate misses the effusion.", None,
     "no [Overall Accuracy Score]"),
    # cut while thinking (was the draft's 0.3)
    ("vert", "<think>\nLet me draft.\n" + HEAD + "0.30\nHmm, maybe that is too", None, "inside its <think> block"),
    ("vert_ft", "<think>\n0.3 for now, but the effusion", None, "inside its <think> block"),
    # the draft is not read beside the answer; "</think>" alone: the chat template opened the block (was unscored)
    ("vert", "<think>\n" + HEAD + "0.30\n</think>\n" + HEAD + "0.80", 0.8, None),
    ("vert", "Let me draft.\n" + HEAD + "0.30\nNo, the effusion matters less.\n</think>\n\n" + HEAD + "0.80", 0.8, None),
    ("vert_ft", "<think>0.3? No.</think>\n0.8", 0.8, None),
])
def test_a_reasoning_blocks_draft_score_is_not_read(system, text, score, reason):
    """Review 29b: a reasoning model's "<think>...</think>" is drafting, as for GREEN (review 28)."""
    judgment = radmetrics.get_scoring_system(system).parse(text)
    if reason is None:
        assert judgment.parsed and judgment.score == pytest.approx(score)
    else:
        assert judgment.score is None and reason in judgment.reason


@pytest.mark.parametrize("second", ["80%", "8/10", "1.4", "0.75-0.89", "~0.2 out of 5"])
def test_a_second_score_we_cannot_read_is_no_single_reading(second):
    """Review 29b: a later score section we cannot read was dropped and the readable one taken ("0.6", then
    "[Overall Accuracy Score]: 80%" was 0.6): two scores, no single reading. An echoed template is no score."""
    for text in (HEAD + "0.6\n\n" + HEAD + second, HEAD + second + "\n[Explanation]: one error.\n" + HEAD + "0.6"):
        judgment = radmetrics.get_scoring_system("vert").parse(text)
        assert judgment.score is None and "which cannot be read" in judgment.reason
    template = (HEAD + "<Overall accuracy score between 0 and 1 given the total number of clinically significant "
                "errors>\n\n" + HEAD + "0.6")
    assert radmetrics.get_scoring_system("vert").parse(template).score == pytest.approx(0.6)
    for same in ("80%", "**8/10**", "8 out of 10."):  # the score restated on another scale is one score
        assert radmetrics.get_scoring_system("vert").parse(HEAD + "0.8\n\n" + HEAD + same).score == pytest.approx(0.8)
    prose = "## Overall Accuracy Score\nThe candidate has 1 significant error.\n" + HEAD + "0.85"
    assert radmetrics.get_scoring_system("vert").parse(prose).score == pytest.approx(0.85)


@pytest.mark.parametrize("after, score", [
    # a revision in a "[Section]" after the score section (was the score it revises, 0.8)
    ("[Revised Overall Accuracy Score]: 0.6", None),
    ("[Final Score]: 0.6", None),
    ("[Final Score]: 1", None),
    ("[Explanation]: 2 errors.\n\n[Final Answer]: 0.6", None),
    ("[Explanation]: I would give it 0.6.", None),
    ("[Note]: on reflection 0.6 is fairer", None),
    # explanation there is no second score
    ("[Explanation]: The candidate misses 1 finding (a 1.5 cm nodule).", 0.8),
    ("[Clinically Significant Errors]:\n(b) Missing a finding present in the reference: 1. Left pleural effusion.\n"
     "[Matched Findings]:\n3. Cardiomegaly; atelectasis; tube.", 0.8),
    ("[Explanation]: A perfect report would score 1.0.", 0.8),
    ("[Final Score]: 80%", 0.8),
])
def test_a_section_after_the_score_is_read_as_its_explanation(after, score):
    """Review 31: App. D puts the score last, and the "[Section]"s after it were never read: a revision there
    ("[Revised Overall Accuracy Score]: 0.6") left the score it revises (0.8), a wrong number."""
    judgment = radmetrics.get_scoring_system("vert").parse(HEAD + "0.8\n\n" + after)
    if score is None:
        assert judgment.score is None and "more than one score" in judgment.reason
    else:
        assert judgment.parsed and judgment.score == pytest.approx(score)


@pytest.mark.parametrize("text, score", [
    ("| Overall Accuracy Score | 0.8 |", 0.8),
    ("| **Overall Accuracy Score** | **0.8** |", 0.8),
    ("| Metric | Value |\n|---|---|\n| Matched findings | 3 |\n| Overall Accuracy Score | 0.75 |", 0.75),
    # a row that gives two scores, or a score on another scale, has no single reading
    ("| Overall Accuracy Score | 0.8 | 0.6 |", None),
    ("| Overall Accuracy Score | 0.8 |\n| Revised score | 0.6 |", None),
    ("| Overall Accuracy Score | 8/10 |", None),
])
def test_a_markdown_tables_score_row_is_a_header(text, score):
    """Review 31: a judge that answers in a Markdown table ("| Overall Accuracy Score | 0.8 |") was unscored: no
    header found."""
    judgment = radmetrics.get_scoring_system("vert").parse(text)
    if score is None:
        assert judgment.score is None
    else:
        assert judgment.parsed and judgment.score == pytest.approx(score)


@pytest.mark.parametrize("text, score", [
    # a revision spelled out after the score (was the score it revises, 0.8)
    (HEAD + "0.8\n\nActually, I'd say zero point five.", None),
    (HEAD + "0.8\nOn reflection, zero point six five is fairer.", None),
    # the score spelled out, and restated so
    (HEAD + "zero point eight", 0.8),
    (HEAD + "One point zero", 1.0),
    (HEAD + "0.8 (zero point eight)", 0.8),
    # no score: "at one point" is no number on VERT's scale
    (HEAD + "0.8\nAt one point two findings differ.", 0.8),
])
def test_a_score_spelled_out_is_read_as_in_digits(text, score):
    """Review 31: "zero point five" after the score was no number at all, so a revision spelled out kept the score it
    revises; a score spelled out was unscored."""
    judgment = radmetrics.get_scoring_system("vert").parse(text)
    if score is None:
        assert judgment.score is None and "more than one score" in judgment.reason
    else:
        assert judgment.parsed and judgment.score == pytest.approx(score)
