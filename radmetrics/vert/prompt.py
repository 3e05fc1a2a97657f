"""VERT prompts (VERT paper App. D): the VERT prompt, the Formula and Rubric prompts, few-shot blocks.

No published judge was trained on these exact strings (the paper gives them in condensed form), so we
build them from the text the paper shows. VERT = GREEN's official prompt (same whitespace, App. D.2
"[Same as GREEN ...]") plus the overall-score criterion and the "[Overall Accuracy Score]" block.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from radmetrics.green.prompt import GREEN_BETWEEN_REPORTS, GREEN_HEAD, GREEN_TAIL, truncate_words
from radmetrics.taxonomy import GREEN_NAMES

PROMPT_VERSION = "vert-appD-2"

# App. D.2: the third criterion VERT adds to GREEN's two.
_SCORE_CRITERION = (
    "    The overall accuracy score to assign to the candidate report given the count of clinically "
    "significant and clinically insignificant errors. The score must be a continuous number in [0.00, 1.00] "
    "with two decimals.\n"
)
_INSIGNIFICANT_LINE = "    The count of clinically insignificant errors.\n"
_SCORE_BLOCK = (
    "\n    [Overall Accuracy Score]:\n    <Overall accuracy score between 0 and 1 given the total number of "
    "clinically significant and insignificant errors in the candidate reports>\n"
)
_CLOSING_FENCE = "    ```\n"

assert _INSIGNIFICANT_LINE in GREEN_HEAD and GREEN_TAIL.endswith(_CLOSING_FENCE)
VERT_HEAD = GREEN_HEAD.replace(_INSIGNIFICANT_LINE, _INSIGNIFICANT_LINE + _SCORE_CRITERION)
VERT_TAIL = GREEN_TAIL[: -len(_CLOSING_FENCE)] + _SCORE_BLOCK + _CLOSING_FENCE

# App. D.3 (Formula), Steps 1-6, then the reports and VERT's output format ("[Same as VERT ...]").
FORMULA_TITLE = "Radiology Report Evaluation Prompt (Formula-Based LLM Judge)\n\n"

# App. D.3's Objective (Formula), then Steps 1-4, which D.4 (Rubric) shares ("identical to Formula prompt");
# the Rubric has its own Objective (D.4), which does not ask the judge to compute a score.
FORMULA_OBJECTIVE = """Objective
Evaluate the clinical accuracy of a candidate radiology report relative to a reference radiology report written by expert radiologists.
Your task is to:
1. Extract clinical findings from both reports.
2. Match findings referring to the same pathology and anatomical location.
3. Identify discrepancies and classify them as errors.
4. Assign an overall accuracy score based on matched findings and errors.
5. Count the number of matched findings and errors.
6. Compute the accuracy score.

Focus only on clinical findings and comparisons, not writing style.

"""
RUBRIC_OBJECTIVE = """Objective
Evaluate the clinical accuracy of a candidate radiology report relative to a reference radiology report written by expert radiologists. Your task is to determine how accurately the candidate report reflects the clinical findings and interpretations in the reference report. Focus on clinical content, not writing style or phrasing differences.

"""
STEPS_1_TO_4 = """Step 1: Extract Clinical Findings
Extract all distinct clinical findings from each report. A clinical finding is a statement describing:
- a pathology
- an anatomical abnormality
- the presence or absence of a clinically relevant condition
- disease severity or characterization
- change relative to a prior study

Examples:
- Right lower lobe consolidation
- Small left pleural effusion
- No pneumothorax
- Pulmonary nodules unchanged from prior study
Do not merge multiple findings into one.

Step 2: Match Findings
Match findings that refer to the same pathology and anatomical location in both reports. Matching rules:
- Wording differences are acceptable if the clinical meaning is the same.
- Findings must refer to the same anatomical structure.
- Laterality must match (left vs right).
- Findings with different severities can still match but may generate a severity error.

Example:
Reference: "Small left pleural effusion"
Candidate: "Trace pleural fluid on the left"
=> Match.

Step 3: Identify Errors
Identify discrepancies between the matched and unmatched findings. Errors fall into the following categories:
a) False finding: A finding appears in the candidate report but not in the reference.
b) Missing finding: A finding appears in the reference but not in the candidate.
c) Incorrect anatomical location: The correct finding is reported but in the wrong location or laterality.
d) Incorrect severity or characterization: The correct finding is reported but severity or description differs.
e) False comparison: The candidate report describes comparison with a prior study not present in the reference.
f) Missing comparison: The reference report describes a change relative to a prior study but the candidate does not.
Only evaluate explicitly stated findings. Do not infer new findings.

Step 4: Determine Clinical Significance
Classify each error as clinically significant or clinically insignificant.

Clinically Significant Errors
Errors likely to affect medical interpretation or patient management:
- Missing or false major pathology
- Incorrect anatomical location / laterality
- Incorrect severity of important findings
- Incorrect disease progression relative to prior imaging

Clinically Insignificant Errors
Errors unlikely to affect interpretation:
- Minor wording differences
- Small differences in severity
- Minor incidental findings
"""

FORMULA_SCORING = """
Step 5: Count Findings and Errors
Compute:
- M = number of matched findings
- S = number of clinically significant errors
- I = number of clinically insignificant errors

Step 6: Compute Accuracy Score
Use the following formula:
Score = M / (M + 2*S + 0.5*I)
Round the final score to two decimal places.
The score must be between 0.00 and 1.00.
"""

# App. D.4 (Rubric): Steps 1-4 identical to Formula, then the rubric.
RUBRIC_SCORING = """
Step 5: Assess Overall Accuracy
After identifying matched findings and errors, assess the overall clinical accuracy of the candidate report. Consider:
- whether key findings were captured
- whether important findings were omitted
- whether serious errors are present
- the overall completeness of the report
Use the rubric below to assign an accuracy score between 0.00 and 1.00.

Scoring Rubric
0.90-1.00: Near-perfect agreement. All major findings are correctly reported. No clinically significant errors and few or no minor discrepancies.
0.75-0.89: High accuracy. Most findings are correctly reported. Minor discrepancies may exist, but no major clinically significant errors.
0.50-0.74: Moderate accuracy. Several discrepancies or one clinically significant error affecting interpretation.
0.25-0.49: Low accuracy. Multiple clinically significant errors or several missing important findings.
0.00-0.24: Very poor accuracy. Major findings are missing or incorrect, making the report clinically misleading.

Select a score within the appropriate range based on the severity and number of errors. Round the score to two decimal places.
"""

# App. D.9 "5. Error Type Illustrations": (a) and (f) as printed in the paper; (b)-(e) written by us in
# the same style (the paper elides them).
ERROR_ILLUSTRATIONS = """5. Error Type Illustrations:

--- Error type (a): False report of a finding in the candidate ---
Reference: Mild cardiomegaly. Lungs are clear bilaterally. No pleural effusion or pneumothorax.
Candidate: Mild cardiomegaly. Lungs are clear bilaterally. Small left pleural effusion is present. No pneumothorax.
→ The candidate falsely reports a small left pleural effusion that is not present in the reference.

--- Error type (b): Missing a finding present in the reference ---
Reference: Right lower lobe consolidation concerning for pneumonia. Small right pleural effusion.
Candidate: Small right pleural effusion.
→ The candidate omits the right lower lobe consolidation.

--- Error type (c): Misidentification of a finding's anatomic location/position ---
Reference: Left upper lobe nodule measuring 8 mm.
Candidate: Right upper lobe nodule measuring 8 mm.
→ The candidate places the nodule in the wrong lung.

--- Error type (d): Misassessment of the severity of a finding ---
Reference: Large left pneumothorax with mediastinal shift.
Candidate: Small left pneumothorax.
→ The candidate understates the size and severity of the pneumothorax.

--- Error type (e): Mentioning a comparison that isn't in the reference ---
Reference: Mild pulmonary edema. No pleural effusion.
Candidate: Mild pulmonary edema, improved compared to the prior study. No pleural effusion.
→ The candidate describes a change from a prior study that the reference does not mention.

--- Error type (f): Omitting a comparison detailing a change from a prior study ---
Reference: Pulmonary edema has markedly improved compared to the prior study. Mild residual interstitial edema bilaterally. No pleural effusion or pneumothorax.
Candidate: Mild interstitial edema bilaterally. No pleural effusion or pneumothorax.
→ The candidate omits the clinically important interval change.
"""

#: the six categories in GREEN's wording, which VERT keeps (radmetrics.taxonomy)
LETTER_NAMES = GREEN_NAMES


@dataclass
class Shot:
    """One annotated example: reports, an overall score in [0, 1], optionally counts per category, the judge's
    explanation and matched findings (App. D.7/D.9 shots carry them) and the error category it illustrates
    (D.6/D.7: "--- Example 1 (illustrating error category (a)) ---")."""

    reference: str
    candidate: str
    score: float
    significant: dict[str, int] = field(default_factory=dict)
    insignificant: dict[str, int] = field(default_factory=dict)
    explanation: str = ""
    matched: str = ""
    category: str = ""


def radeval_shot_score(significant: dict[str, int]) -> float:
    """A shot's score from its clinically significant error counts: ``max(0, 1 - 0.15 x sig errors)``
    (VERT App. D.6 and D.8, the RadEval shots)."""
    return max(0.0, 1.0 - 0.15 * sum(significant.values()))


def _counts_block(title: str, counts: dict[str, int]) -> str:
    lines = [f"({x}) {LETTER_NAMES[x]}: {int(counts.get(x, 0))}." for x in LETTER_NAMES]
    return f"[{title}]:\n" + "\n".join(lines) + "\n\n"


def shots_block(shots: Sequence[Shot], numbered_from: int = 5, heading: str = "Examples") -> str:
    """App. D.5-D.9: "--- Example i ---" blocks, in the order of VERT's own output format: the explanation, the
    counts and the matched findings when the shot has them, then the score. The paper prints the score header
    as "[Overall accuracy Score]:" in D.6/D.7/D.9 and "[Overall Accuracy Score]:" in D.5/D.8; we write the
    latter everywhere, the spelling the judge is asked to answer with (D.2)."""
    parts = [f"{numbered_from}. {heading}:\n"]
    for i, shot in enumerate(shots, 1):
        illustrating = f" (illustrating error category ({shot.category}))" if shot.category else ""
        block = (f"\n--- Example {i}{illustrating} ---\nReference Report:\n{shot.reference}\n\n"
                 f"Candidate Report:\n{shot.candidate}\n\n")
        if shot.explanation:
            block += f"[Explanation]:\n{shot.explanation}\n\n"
        if shot.significant or shot.insignificant:
            block += _counts_block("Clinically Significant Errors", shot.significant)
            block += _counts_block("Clinically Insignificant Errors", shot.insignificant)
        if shot.matched:
            block += f"[Matched Findings]:\n{shot.matched}\n\n"
        block += f"[Overall Accuracy Score]:\n{shot.score:.2f}\n"
        parts.append(block)
    return "".join(parts)


def sample_shots(pool: Sequence[Shot], k: int, seed: int, exclude: tuple[str, str] | None = None) -> list[Shot]:
    """k shots drawn at random with `seed` (VERT Sec. 4.1.3); never the pair being judged."""
    candidates = [s for s in pool if exclude is None or (s.reference, s.candidate) != exclude]
    return random.Random(seed).sample(candidates, min(k, len(candidates)))


def build_vert_prompt(reference: str, candidate: str, variant: str = "vert", max_words: int = 300,
                      extra: str = "") -> str:
    """variant: "vert" (App. D.2), "formula" (D.3) or "rubric" (D.4); `extra` = few-shot sections."""
    reference, candidate = truncate_words(reference, max_words), truncate_words(candidate, max_words)
    if variant == "vert":
        prompt = VERT_HEAD + reference + GREEN_BETWEEN_REPORTS + candidate + VERT_TAIL
    elif variant in {"formula", "rubric"}:
        head = FORMULA_TITLE + FORMULA_OBJECTIVE if variant == "formula" else RUBRIC_OBJECTIVE
        scoring = FORMULA_SCORING if variant == "formula" else RUBRIC_SCORING
        # "[Same as VERT ...]": the reports and VERT's reporting format follow the steps.
        prompt = (head + STEPS_1_TO_4 + scoring + "\n    2. Reference Report:\n    " + reference
                  + GREEN_BETWEEN_REPORTS + candidate + VERT_TAIL)
    else:
        from radmetrics.errors import RadmetricsError

        raise RadmetricsError(f"Unknown VERT variant {variant!r}: use 'vert', 'formula' or 'rubric'.")
    return prompt + ("\n" + extra if extra else "")


def vert_user_turn(reference: str, candidate: str) -> str:
    """The short user turn of judges fine-tuned with radmetrics' VERT recipe (`train judge --recipe vert`;
    VERT Sec. 4.1.4): VERT's objective line, then the two reports."""
    head = "\n".join([line.strip() for line in VERT_HEAD.splitlines() if line.strip()][:2])
    return f"{head}\n\nReference report:\n{reference}\n\nCandidate report:\n{candidate}"
