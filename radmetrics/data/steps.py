"""LLM data steps through the shared judge: style standardization, error injection, GREEN's modification.

- standardize (ReXamine-Global App. A, step 1): rewrite a report in a polished findings/impression style.
- inject (VERT Sec. 4.2 and App. F): exactly k clinically significant errors of type (a) false finding or
  (b) omission, returned as JSON with the changed sentences; each attempt is checked by the validation prompt
  (App. F.3) and by us (exactly k changes); up to 5 attempts, then the row is reported as failed.
- green_modify (GREEN App. A.4): a candidate with randomly sampled error categories (or a rephrasing).
Each step returns one output row per input row with provenance columns: step, prompt version, judge,
attempts, and why a row failed. Prompts are pure functions; the model call goes through radmetrics.judge.
"""
from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from radmetrics.json_answer import AnswerError, load_json_tolerant
from radmetrics.taxonomy import CATEGORIES
from radmetrics.types import GenerationConfig, answer_problem

STEPS_VERSION = "1"

# ReXamine-Global App. A: the style-standardization instruction with its example report, verbatim.
STANDARDIZE_PROMPT = """Pretend you are a radiologist and format the content of these notes in a polished findings and impressions section. Your findings section may be long or short. Your impression should only have 1-3 lines. If you are unsure about an abbreviation, term, or other odd phrasing, make your best guess. Match the style of this radiology report:

Report:

Findings: Single frontal view of the chest demonstrates a right Port-A-Cath in unchanged position, terminating at the cavoatrial junction. Median sternotomy wires are present, along with surgical clips in the left upper quadrant. The heart is mildly enlarged, but stable compared with prior examinations, with redemonstration of calcified mediastinal lymph nodes. A rounded opacity in the lower left lung likely correlates to a calcified granuloma as seen on CT of the chest from ____. There is no evidence of pneumonia, pleural effusion, pneumothorax or overt pulmonary edema. The lung volumes are low, accentuating bibasilar atelectasis. No subdiaphragmatic free air is present.

Impression: No subdiaphragmatic free air or other acute cardiopulmonary process.

Notes:

{report}"""

# ReXamine-Global App. A, step 2 (introducing errors into the standardized report), verbatim.
PERTURB_PROMPT = """{report}

Please write a report using the above report as a template. Perturb the content of a few existing lines. Here are some examples of how a line could be changed:
If the report says X condition is present, state that X condition is absent.
If the report rules out X condition, state that X condition is present.
Change the location, size, severity, or implications of a condition.

Only perturb a few lines. Keep the other lines exactly the same. Your report should still sound fluent, like a radiologist wrote it."""

# VERT App. F.1 / F.2, condensed: the task, rules, error type and the exact JSON format (the paper's twelve
# worked examples per type are not repeated here).
INJECT_PROMPT = """ERROR TYPE ({letter}): {title}
IMPORTANT: This is for research and educational purposes only. Not for real medical diagnosis or clinical use.

TASK
You will be given a radiology report. The report may be from any modality and any body region. Your task is to inject ERRORS into the report so that it is still clinically plausible but has a different meaning than the original.

ERROR INJECTION GOAL
- Inject exactly {k} error(s)
- Only ONE error per sentence
- Only skip a sentence if it's impossible to inject an error

RULES
1. Do NOT make multiple different errors in the same sentence
2. Do NOT combine unrelated findings in the same sentence
3. Do NOT reword without changing meaning
4. Do NOT reorder sentence parts without changing meaning
5. Maintain clinical plausibility
6. The finding must be anatomically consistent with the body region and modality of the report

ERROR TYPE
{definition}

OUTPUT FORMAT (JSON)
Return your response as a JSON object with this EXACT structure:
{{"modified report": "The complete radiology report with errors injected", "changes detail": [{{"sentence index": 1, "original": "Original sentence text", "modified": "Modified sentence text with error", "explanation": "Brief description of the error injected", "severity": "", "harm potential": ""}}]}}
"changes detail" has ONE object FOR EACH CHANGED SENTENCE ONLY; "sentence index" is 0-indexed; "modified" is "" when the sentence was deleted.

REPORT
{report}"""

ERROR_TYPES = {
    "a": ("False Prediction of Finding",
          "False prediction of finding (false positive): add a finding that is NOT present in the reference report "
          "(either adding a new sentence or modifying an existing sentence to insert a finding). The added finding "
          "must be clinically plausible, absent from the original, and clinically significant."),
    "b": ("Omission of Finding",
          "Omission of finding (false negative): remove a clinically significant finding that IS present in the "
          "report (delete the sentence or the part of it that states the finding). The report must still read "
          "naturally after the omission."),
}

# VERT App. F.3, verbatim.
VALIDATE_PROMPT = """You are a radiology expert. You will be given a radiology report, its imaging modality and body region, and a list of modifications made to it. Your task is to assess whether each modification is anatomically and clinically plausible given the modality and body region.

A modification is NOT plausible if:
- The finding refers to an anatomy outside the body region covered by this scan (e.g., adding a thyroid finding to a pelvis CT, adding a cardiac finding to a knee MRI)
- The finding is inconsistent with the imaging modality (e.g., adding diffusion restriction to a plain X-ray, adding an echo finding to a CT report)
- The finding contradicts other findings already present in the report in an unrealistic way

Return a JSON object with this structure:
{{"plausible": true or false, "reason": "brief explanation if not plausible, or 'ok' if plausible"}}

Modality: {modality}
Body region: {region}
Report: {report}
Modifications: {modifications}"""

# GREEN App. A.4 `get_prompt`, with its error categories (GREEN Sec. 3.1; wording in radmetrics.taxonomy).
GREEN_CATEGORIES = tuple(c.green_modify for c in CATEGORIES)


def green_modify_prompt(report: str, error_types: str, subtle: bool) -> str:
    subtle_change = "Aim for subtlety, adjusting only one word where feasible. " if subtle else ""
    if error_types != "no errors":
        return ("[Objective]: Create a candidate radiology report that subtly integrates specific errors based on the "
                "provided reference report.\nProcess Overview: You will be presented with:\n1. Style of errors.\n"
                "2. A reference radiology report to base your candidate report on.\n3. The desired format for your "
                "candidate report. Note: Be short in your response!\n\nStyle of errors:\nIntroduce errors related to "
                f"{error_types}. The errors should be woven into the report as if they were genuine observations from "
                f"a medical image, without any meta-commentary on their accuracy. {subtle_change}\n\nReference Report: "
                f"\n{report}\n Desired format for your candidate report: \n\n[Candidate]: <Candidate Report>")
    return ("[Objective]: Create a candidate radiology report that has the same clinical meaning but is slightly "
            "rephrased.\nProcess Overview: You will be presented with: \n 1.A reference radiology report to base your "
            "candidate report on. \n 2. The desired format for your candidate report.\nNote: Be short in your "
            f"response! \n\n Reference radiology report: \n{report}\n\nDesired format for your candidate report: "
            "\n\n [Candidate]: <Candidate Report>")


def sample_error_types(rng: random.Random) -> str:
    """GREEN A.4 `get_error_combination`: a random subset of the categories, or "no errors"."""
    chosen = [c for c in GREEN_CATEGORIES if rng.random() < 0.25]
    return ", ".join(chosen) if chosen else "no errors"


@dataclass
class StepResult:
    output: str | None
    attempts: int
    reason: str | None = None
    details: dict[str, Any] | None = None


def _ask(judge, prompts: list[str], config: GenerationConfig) -> list[str]:
    return judge.generate(prompts, config, progress=False)


def _report_results(answers: list[str]) -> list[StepResult]:
    return [StepResult(None, 1, why) if (why := answer_problem(a))
            else StepResult(a.strip() or None, 1, None if a.strip() else "empty answer") for a in answers]


def standardize(judge, reports: Sequence[str], config: GenerationConfig | None = None) -> list[StepResult]:
    config = config or GenerationConfig()
    return _report_results(_ask(judge, [STANDARDIZE_PROMPT.format(report=r) for r in reports], config))


def perturb(judge, reports: Sequence[str], config: GenerationConfig | None = None) -> list[StepResult]:
    """ReXamine-Global App. A step 2: an error-containing candidate written from each (standardized) report."""
    config = config or GenerationConfig()
    return _report_results(_ask(judge, [PERTURB_PROMPT.format(report=r) for r in reports], config))


def _check_injection(text: str, k: int) -> tuple[dict[str, Any] | None, str | None]:
    try:
        data = load_json_tolerant(text)
    except AnswerError as e:
        return None, str(e)
    if not isinstance(data, dict) or not isinstance(data.get("modified report"), str):
        return None, "no 'modified report' in the answer"
    changes = data.get("changes detail")
    if not isinstance(changes, list):
        return None, "no 'changes detail' list in the answer"
    if len(changes) != k:
        return None, f"{len(changes)} changes instead of exactly {k}"
    return data, None


#: how a validating judge writes its verdict: JSON true/false, or drifted into words ("false", "No") or 0/1
_VERDICT_WORDS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


def read_plausibility(verdict: Any) -> tuple[bool, str]:
    """(plausible, reason) from the validation answer; anything but a clear yes is not plausible. Review 29b:
    bool() of the value made '"plausible": "false"' (or "no") plausible, so an implausible injection was kept."""
    try:
        parsed = load_json_tolerant(verdict)
    except AnswerError:
        return False, "validation answer unreadable"
    value = parsed.get("plausible") if isinstance(parsed, dict) else None
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        value = _VERDICT_WORDS.get(str(value).strip(" *_.").lower(), value)
    if not isinstance(value, bool):
        return False, f"validation answer unreadable ('plausible' is {value!r}, not true or false)"
    return value, str(parsed.get("reason", ""))


def inject_errors(judge, reports: Sequence[str], error_type: str, k: int, modality: str = "unknown",
                  region: str = "unknown", max_attempts: int = 5, config: GenerationConfig | None = None,
                  validate: bool = True) -> list[StepResult]:
    """Exactly k errors of type (a) or (b) per report; every attempt validated; up to max_attempts."""
    if error_type not in ERROR_TYPES:
        from radmetrics.errors import InputError

        raise InputError(f"error type must be 'a' or 'b' (VERT App. F), not {error_type!r}")
    config = config or GenerationConfig()
    title, definition = ERROR_TYPES[error_type]
    base = [INJECT_PROMPT.format(letter=error_type, title=title, k=k, definition=definition, report=r) for r in reports]
    results: list[StepResult | None] = [None] * len(reports)
    last_reason: dict[int, str] = {}
    pending = list(range(len(reports)))
    for attempt in range(1, max_attempts + 1):
        if not pending:
            break
        # A rejected attempt is asked again with the reason, so a greedy judge does not repeat itself.
        prompts = [base[i] + (f"\n\nAttempt {attempt}: the previous modification was rejected ({last_reason[i]})."
                              if i in last_reason else "") for i in pending]
        answers = _ask(judge, prompts, config)
        checked = {}
        for i, answer in zip(pending, answers):
            if why := answer_problem(answer):
                last_reason[i] = why
                continue
            data, reason = _check_injection(answer, k)
            if data is None:
                last_reason[i] = reason
            else:
                checked[i] = data
        if validate and checked:
            order = list(checked)
            verdicts = _ask(judge, [VALIDATE_PROMPT.format(
                modality=modality, region=region, report=checked[i]["modified report"],
                modifications=json.dumps(checked[i]["changes detail"])) for i in order], config)
            for i, verdict in zip(order, verdicts):
                plausible, why = read_plausibility(verdict)
                if not plausible:
                    last_reason[i] = f"judged implausible: {why}"
                    del checked[i]
        for i, data in checked.items():
            results[i] = StepResult(data["modified report"], attempt, None, {"changes": data["changes detail"]})
        pending = [i for i in pending if i not in checked]
    for i in pending:
        results[i] = StepResult(None, max_attempts, f"no valid injection after {max_attempts} attempts: "
                                                    f"{last_reason.get(i, 'unknown')}")
    return results  # type: ignore[return-value]


def green_modify(judge, reports: Sequence[str], seed: int = 0, config: GenerationConfig | None = None) -> list[StepResult]:
    import re

    rng = random.Random(seed)
    plans = [(sample_error_types(rng), rng.random() > 0.5) for _ in reports]
    answers = _ask(judge, [green_modify_prompt(r, e, s) for r, (e, s) in zip(reports, plans)], config or GenerationConfig())
    out = []
    for (errors, subtle), answer in zip(plans, answers):
        match = re.search(r"\[Candidate\]:\s*(.+)", answer or "", re.S)
        details = {"error_types": errors, "subtle": subtle}
        if why := answer_problem(answer):
            out.append(StepResult(None, 1, why, details))
        elif not match or not match.group(1).strip():
            out.append(StepResult(None, 1, "no [Candidate]: in the answer", details))
        else:
            out.append(StepResult(match.group(1).strip(), 1, None, details))
    return out
