"""A fake GREEN judge, plugged in through the real `register_judge_backends` hook.

Its answer depends on the prompt: the number of candidate words shared with the reference are "matched
findings", candidate-only words are (a) errors. Prompts whose candidate says GARBLED get unparseable text.
"""
from __future__ import annotations

import json
import re

from radmetrics.hookspecs import hookimpl
from radmetrics.judge.base import JudgeBackend


def analysis_for(prompt: str) -> str:
    """An answer in the format the prompt asks for (GREEN/VERT, FineRadScore, RadCliQ, MRScore, data steps)."""
    if prompt.startswith("Given a ground truth diagnostic report, generate three"):
        return er2score_generation_answer(prompt)
    if "\n\nReference report:\n" in prompt and "\n\nCandidate report:\n" in prompt:  # vert_ft
        ref = prompt.split("\n\nReference report:\n", 1)[1].split("\n\nCandidate report:\n")[0]
        cand = prompt.split("\n\nCandidate report:\n", 1)[1]
        return f"{expected_score(ref, cand):.1f}"
    if "Generated Text:" in prompt:
        return finerad_answer(prompt)
    if "ground_truth_report:" in prompt:
        return radcliq_answer(prompt)
    if "Error item | Description | Weight" in prompt:
        return mrscore_answer(prompt)
    if prompt.startswith("Pretend you are a radiologist"):
        notes = prompt.rsplit("Notes:\n\n", 1)[1]
        return f"Findings: {notes}\n\nImpression: {notes.split('.')[0]}."
    if prompt.startswith("ERROR TYPE ("):
        return injection_answer(prompt)
    if prompt.startswith("You are a radiology expert."):
        report = prompt.split("Report: ", 1)[1].split("\nModifications:")[0]
        ok = "thyroid" not in report.lower()
        return json.dumps({"plausible": ok, "reason": "ok" if ok else "thyroid finding on a chest radiograph"})
    if prompt.startswith("[Objective]: Create a candidate"):
        report = prompt.split("eport: \n", 1)[1].split("\n")[0]
        return f"[Candidate]: {report} Possible small effusion."
    ref = re.search(r"2\. Reference Report:\n    (.*?)\n\n", prompt, re.S).group(1)
    cand = re.search(r"3\. Candidate Report:\n    (.*?)\n\n", prompt, re.S).group(1)
    if "GARBLED" in cand:
        return "I am not sure what to say about these reports."
    ref_words, cand_words = set(ref.lower().split()), set(cand.lower().split())
    matched, false = len(ref_words & cand_words), len(cand_words - ref_words)
    letters = "abcdef"
    sig = "\n".join(f"({x}) Error: {false if x == 'a' else 0}." for x in letters)
    answer = (f"[Explanation]:\nfake\n\n[Clinically Significant Errors]:\n{sig}\n\n"
              f"[Clinically Insignificant Errors]:\nNo clinically insignificant errors.\n\n"
              f"[Matched Findings]:\n{matched}. words.")
    if "[Overall Accuracy Score]" in prompt:  # VERT and its variants
        answer += f"\n\n[Overall Accuracy Score]:\n{expected_score(ref, cand):.2f}"
    return answer


def _reports(prompt: str, ref_marker: str, cand_marker: str) -> tuple[str, str]:
    ref = prompt.rsplit(ref_marker, 1)[1].split("\n")[0]
    cand = prompt.rsplit(cand_marker, 1)[1].split("\n")[0]
    return ref, cand


def finerad_answer(prompt: str) -> str:
    """Deletes every candidate line whose words are not all in the reference (severity: Urgent error).
    A candidate saying MALFORMED gets broken JSON until the judge is re-asked."""
    query = prompt.rsplit("Generated Text: ", 1)[1]
    lines_part, truth = query.split("\nGround Truth Text: ", 1)
    truth = truth.split("\nCorrections:")[0].lower()
    if "MALFORMED" in lines_part and "could not be read" not in prompt:
        return '{"0": {"corrections": "[delete]", "clinical severity": "Urgent'
    corrections = {}
    for line in lines_part.split("\n"):
        number, text = line.split("] ", 1)
        words = re.findall(r"[a-z0-9]+", text.lower())
        if any(w not in truth for w in words):
            corrections[number.strip("[")] = {"corrections": "[delete]", "clinical severity": "Urgent error",
                                              "comments": "not in reference", "error category": ["False prediction of finding"]}
    return "```json\n" + json.dumps(corrections) + "\n```"


def er2score_generation_answer(prompt: str) -> str:
    """Three reports: the reference, + one false finding, + three false findings and an omission."""
    ref = prompt.split("ground_truth_report: ", 1)[1].split("\nOutput format:")[0]
    keys = ["false_prediction", "omission", "incorrect_location", "incorrect_severity", "comparison_not_present",
            "omission_of_comparison"]
    levels = [(ref, {}), (ref + " Cardiomegaly.", {"false_prediction": 1}),
              (" ".join(ref.split()[:3]) + " Pneumothorax. Cardiomegaly. Rib fracture.",
               {"false_prediction": 3, "omission": 1})]
    reports = [{"predicted_report": text, "errors": {k: str(e.get(k, 0)) for k in keys},
                "total_score": str(sum(e.values()))} for text, e in levels]
    return json.dumps({"ground truth report": ref, "predicted reports": reports})


def injection_answer(prompt: str) -> str:
    """k added findings; the first attempt adds an implausible thyroid finding (rejected by validation),
    a retry a lung nodule. A report saying NEVER gets k + 1 changes every time."""
    k = int(re.search(r"Inject exactly (\d+) error", prompt).group(1))
    report = prompt.rsplit("REPORT\n", 1)[1].split("\n\nAttempt")[0]
    finding = "Lung nodule" if "was rejected" in prompt else "Thyroid nodule"
    n = k + 1 if "NEVER" in report else k
    added = [f"{finding} number {i}." for i in range(n)]
    changes = [{"sentence index": i, "original": "", "modified": a, "explanation": "added"} for i, a in enumerate(added)]
    return json.dumps({"modified report": report + " " + " ".join(added), "changes detail": changes})


def radcliq_answer(prompt: str) -> str:
    ref, cand = _reports(prompt, "ground_truth_report: ", "predicted_report: ")
    missing = len(set(ref.lower().split()) - set(cand.lower().split()))
    keys = ["false_prediction", "omission", "incorrect_location", "incorrect_severity", "comparison_not_present",
            "omission_of_comparison"]
    errors = {k: {"significant": missing if k == "omission" else 0, "insignificant": 0} for k in keys}
    return json.dumps({"errors": errors, "total_score": missing})


def mrscore_answer(prompt: str) -> str:
    ref = prompt.split("The ground truth report is:\n", 1)[1].split("\n")[0]
    cand = prompt.split("The predicted report is:\n", 1)[1].split("\n")[0]
    incomplete = int(bool(set(ref.lower().split()) - set(cand.lower().split())))
    keys = ["impression_consistency", "impression_organ", "description_of_lesion", "clinical_history",
            "completeness", "grammar", "medical_terminology"]
    return json.dumps({"Scoring": {k: (incomplete if k == "completeness" else 0) for k in keys},
                       "Final Score": 100 - 10 * incomplete})


def expected_score(reference: str, candidate: str) -> float:
    ref_words, cand_words = set(reference.lower().split()), set(candidate.lower().split())
    matched, false = len(ref_words & cand_words), len(cand_words - ref_words)
    return 0.0 if matched == 0 else matched / (matched + false)


class FakeGreenJudge(JudgeBackend):
    backend_name = "fake"
    calls = 0  # prompts answered, over all instances
    fail_after: int | None = None  # raise (like a killed process) after this many answers

    def _generate(self, prompts, config, on_result, progress):
        out = []
        for i, prompt in enumerate(prompts):
            if FakeGreenJudge.fail_after is not None and FakeGreenJudge.calls >= FakeGreenJudge.fail_after:
                raise KeyboardInterrupt("simulated kill")
            FakeGreenJudge.calls += 1
            out.append(analysis_for(prompt))
            if on_result:
                on_result(i, out[-1])
        return out


@hookimpl
def register_judge_backends(register):
    register("fake", lambda model=None, **options: FakeGreenJudge(model=model or "fake-green", **options))
