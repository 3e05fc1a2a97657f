"""GREEN's prompt, byte-identical to the official implementation.

Source: Stanford-AIMI/GREEN green_score/utils.py `make_prompt` (commit d72c195), also copied in
jbdel/RadEval. The published GREEN models were fine-tuned on exactly this text: do not reformat it,
not even its four-space indents. Paper: GREEN App. A.1 (the GPT-4 version of the same instructions).
"""
from __future__ import annotations

PROMPT_VERSION = "green-official-d72c195"

#: each report is cut to its first 300 whitespace-separated words, joined by single spaces
MAX_WORDS = 300

#: the official prompt around the two reports (public: VERT App. D.2 is "[Same as GREEN ...]")
GREEN_HEAD = "Objective: Evaluate the accuracy of a candidate radiology report in comparison to a reference radiology report composed by expert radiologists.\n\n    Process Overview: You will be presented with:\n\n    1. The criteria for making a judgment.\n    2. The reference radiology report.\n    3. The candidate radiology report.\n    4. The desired format for your assessment.\n\n    1. Criteria for Judgment:\n\n    For each candidate report, determine:\n\n    The count of clinically significant errors.\n    The count of clinically insignificant errors.\n\n    Errors can fall into one of these categories:\n\n    a) False report of a finding in the candidate.\n    b) Missing a finding present in the reference.\n    c) Misidentification of a finding's anatomic location/position.\n    d) Misassessment of the severity of a finding.\n    e) Mentioning a comparison that isn't in the reference.\n    f) Omitting a comparison detailing a change from a prior study.\n    Note: Concentrate on the clinical findings rather than the report's writing style. Evaluate only the findings that appear in both reports.\n\n    2. Reference Report:\n    "
GREEN_BETWEEN_REPORTS = '\n\n    3. Candidate Report:\n    '
GREEN_TAIL = '\n\n    4. Reporting Your Assessment:\n\n    Follow this specific format for your output, even if no errors are found:\n    ```\n    [Explanation]:\n    <Explanation>\n\n    [Clinically Significant Errors]:\n    (a) <Error Type>: <The number of errors>. <Error 1>; <Error 2>; ...; <Error n>\n    ....\n    (f) <Error Type>: <The number of errors>. <Error 1>; <Error 2>; ...; <Error n>\n\n    [Clinically Insignificant Errors]:\n    (a) <Error Type>: <The number of errors>. <Error 1>; <Error 2>; ...; <Error n>\n    ....\n    (f) <Error Type>: <The number of errors>. <Error 1>; <Error 2>; ...; <Error n>\n\n    [Matched Findings]:\n    <The number of matched findings>. <Finding 1>; <Finding 2>; ...; <Finding n>\n    ```\n'


def truncate_words(text: str, max_words: int = MAX_WORDS) -> str:
    """`" ".join(text.split()[:max_words])`, as upstream: it also collapses newlines and runs of spaces."""
    return " ".join(text.split()[:max_words])


def cut_report_warnings(reference: str, candidate: str, max_words: int, prompt: str) -> list[str]:
    """The row's warnings for a report its ``prompt`` (GREEN, VERT) keeps only the first ``max_words`` words of."""
    out = []
    for label, text in (("reference", reference), ("candidate", candidate)):
        words = len(text.split())
        if words > max_words:
            out.append(f"{label} cut from {words} to {max_words} words ({prompt} prompt limit)")
    return out


def build_green_prompt(reference: str, candidate: str, max_words: int = MAX_WORDS) -> str:
    return (GREEN_HEAD + truncate_words(reference, max_words) + GREEN_BETWEEN_REPORTS
            + truncate_words(candidate, max_words) + GREEN_TAIL)


def green_answer(explanation: str, significant: dict[str, list[str]], insignificant: dict[str, list[str]] | None,
                 matched: list[str]) -> str:
    """An answer in the format GREEN's prompt asks for (section 4 above; GREEN App. A.2), from the errors per
    category letter and the matched findings; `insignificant=None` writes "No clinically insignificant errors."."""
    from radmetrics.taxonomy import CATEGORIES

    def section(errors: dict[str, list[str]]) -> str:
        return "\n".join(f"({c.letter}) {c.green}: {len(errors.get(c.letter, []))}."
                         + (" " + "; ".join(errors[c.letter]) if errors.get(c.letter) else "") for c in CATEGORIES)

    insignificant_text = section(insignificant) if insignificant else "No clinically insignificant errors."
    return (f"[Explanation]:\n{explanation}\n\n[Clinically Significant Errors]:\n{section(significant)}\n\n"
            f"[Clinically Insignificant Errors]:\n{insignificant_text}\n\n"
            f"[Matched Findings]:\n{len(matched)}." + (" " + "; ".join(matched) if matched else ""))


def sample_green_analysis(reference: str, candidate: str) -> str:
    """A GREEN analysis that counts shared words as matched findings and candidate-only words as (a) errors
    (the rooms' sample answer: a stand-in for a judge, in the real format)."""
    from radmetrics.scoring import word_comparison

    shared, false, _ = word_comparison(reference, candidate)
    explanation = (f"The candidate shares {len(shared)} findings with the reference and reports {len(false)} "
                   "that the reference does not mention.")
    return green_answer(explanation, {"a": [w.strip(".,;:") for w in false]}, None, [w.strip(".,;:") for w in shared])
