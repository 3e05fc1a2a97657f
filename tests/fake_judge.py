"""A fake judge, plugged in through the real `register_judge_backends` hook.

It answers a scoring system's prompt with that system's own sample answer (`ScoringSystem.sample_answer`,
found through `pair_in_prompt`, so the fake knows no prompt texts), and the LLM data steps' prompts with
answers in their formats. Two words in a candidate make test cases: GARBLED gets unreadable text, MALFORMED
gets a truncated answer to the first ask (a re-ask gets the full one).

To give a system other answers (seeded, with other counts), add a function to ANSWERS: name -> f(system,
reference, candidate) -> text. GREEN and its derived scores get realistic answers (`green_counts`): seeded
non-zero counts in every category (a)-(f), significant and insignificant, so that a category or formula bug
changes the scores every fake-judge test checks; `expected_score` computes GREEN from those counts with the
paper's Eq. 1 as written in tests/green_answers.py, not with radmetrics.
"""
from __future__ import annotations

import hashlib
import json
import random
import re
import time
from collections import Counter
from collections.abc import Callable

from green_answers import ERROR_TYPES, green_answer, green_score

from radmetrics.hookspecs import hookimpl
from radmetrics.judge.base import JudgeBackend
from radmetrics.plugins import scoring_systems
from radmetrics.taxonomy import RADCLIQ_KEYS

#: per scoring-system name, an answer other than the system's sample answer
ANSWERS: dict[str, Callable[..., str]] = {}

UNREADABLE = "I am not sure what to say about these reports."


def write_finding_pairs(path, n: int, ids: bool = True) -> None:
    """``n`` JSONL rows, 'Finding i: small left effusion.' against 'Finding i.' (an "id" column unless ``ids`` is
    False): each row's prompt names its row, for judges that answer row by row."""
    path.write_text("".join(json.dumps({**({"id": i} if ids else {}), "reference": f"Finding {i}: small left effusion.",
                                        "candidate": f"Finding {i}."}) + "\n" for i in range(n)))


def readable_the_second_time_for_even_rows(counts: Callable[[], Counter], delay: float = 0.1) -> Callable[[str], str]:
    """A judge server's answer to `write_finding_pairs` prompts: unreadable the first time; asked again, a readable
    analysis for even rows and unreadable again for odd ones. ``counts``: the Counter of asks per prompt to add to."""
    def answer(prompt: str) -> str:
        asked = counts()
        asked[prompt] += 1
        time.sleep(delay)
        row = int(re.search(r"Finding (\d+): small", prompt).group(1))
        return analysis_for(prompt) if asked[prompt] > 1 and row % 2 == 0 else UNREADABLE

    return answer


class HeldAfter:
    """A judge server's answer function whose requests wait, once ``asked()`` has reached ``limit``, until `release`:
    a test that stops the run after ``limit`` asks then knows the run could not finish first (on a loaded machine the
    test's own thread came to its kill only after the run had ended, CI of session 35), and `release` returns once the
    held requests are answered and counted."""

    def __init__(self, answer: Callable[[str], str], asked: Callable[[], int], limit: int):
        import threading

        self.answer, self.asked, self.limit = answer, asked, limit
        self.gate, self.lock, self.held = threading.Event(), threading.Lock(), 0

    def __call__(self, prompt: str) -> str:
        held = not self.gate.is_set() and self.asked() >= self.limit
        if held:
            with self.lock:
                self.held += 1
            self.gate.wait(60)
        try:
            return self.answer(prompt)
        finally:
            if held:
                with self.lock:
                    self.held -= 1

    def reached(self, timeout: float = 60) -> bool:
        deadline = time.time() + timeout
        while time.time() < deadline and self.asked() < self.limit:
            time.sleep(0.02)
        return self.asked() >= self.limit

    def release(self) -> None:
        self.gate.set()
        deadline = time.time() + 10
        while time.time() < deadline and self.held:
            time.sleep(0.01)


def analysis_for(prompt: str) -> str:
    """The answer to one prompt: a scoring system's sample answer, or a data step's."""
    for system in _with_layouts(scoring_systems().values()):
        pair = system.pair_in_prompt(prompt)
        if pair is None:
            continue
        reference, candidate = pair
        if "GARBLED" in candidate:
            return UNREADABLE
        answer = ANSWERS.get(system.name, type(system).sample_answer)(system, reference, candidate)
        if "MALFORMED" in candidate and prompt == system.build_prompt(reference, candidate):
            return answer[: len(answer) // 2]  # cut off, as a truncated generation; a re-ask is answered in full
        return answer
    return data_step_answer(prompt)


def _with_layouts(systems):
    """Each system, and FineRadScore also in its other prompt layouts (pair_in_prompt rebuilds a prompt with the
    system's own settings)."""
    for system in systems:
        yield system
        if system.name == "finerad_score":
            yield system.configure(layout="claude3")
            yield system.configure(few_shot=False)


def data_step_answer(prompt: str) -> str:
    """Answers to the prompts of radmetrics.data.steps and ER²Score's teacher prompt (no scoring system)."""
    if prompt.startswith("Given a ground truth diagnostic report, generate three"):
        return er2score_generation_answer(prompt)
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
    return UNREADABLE


def er2score_generation_answer(prompt: str) -> str:
    """Three reports: the reference, + one false finding, + three false findings and an omission."""
    ref = prompt.split("ground_truth_report: ", 1)[1].split("\nOutput format:")[0]
    keys = RADCLIQ_KEYS
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


def green_counts(reference: str, candidate: str) -> tuple[dict[str, int], dict[str, int], int]:
    """(significant, insignificant, matched) of the fake judge's GREEN answer to a pair.

    As GREEN's prompt holds the pair (words joined by single spaces, at most 300 per report): identical reports
    have no error and every word matched; otherwise every category (a)-(f) has 1-3 significant and 1-2
    insignificant errors drawn from a generator seeded with the pair's text (the same pair always gets the
    same counts: the cache and the de-duplication of identical rows rely on it, and a failure reproduces), and
    the words (letters and digits) the reports share are the matched findings (none shared: 0 matched, GREEN's score-0 rule)."""
    ref, cand = (" ".join(text.split()[:300]).lower() for text in (reference, candidate))
    ref_words, cand_words = (set(re.findall(r"[a-z0-9]+", text)) for text in (ref, cand))
    if ref == cand:
        return dict.fromkeys(ERROR_TYPES, 0), dict.fromkeys(ERROR_TYPES, 0), len(ref_words)
    rng = random.Random(int.from_bytes(hashlib.sha256(f"{ref}\x00{cand}".encode()).digest()[:8], "big"))
    significant = {letter: rng.randint(1, 3) for letter in ERROR_TYPES}
    insignificant = {letter: rng.randint(1, 2) for letter in ERROR_TYPES}
    return significant, insignificant, len(ref_words & cand_words)


def realistic_green_answer(system, reference: str, candidate: str) -> str:
    """GREEN's answer layout (App. A.1, as tests/green_answers.py writes it) with the pair's counts."""
    return green_answer(*green_counts(reference, candidate))


def _green_family() -> list[str]:
    """Every scoring system that asks GREEN's prompt (GREEN and the scores derived from its analysis)."""
    from radmetrics.green.system import GreenSystem

    return [name for name, system in scoring_systems().items() if isinstance(system, GreenSystem)]


for _name in _green_family():
    ANSWERS[_name] = realistic_green_answer


def expected_score(reference: str, candidate: str) -> float:
    """GREEN of the fake judge's answer to this pair: paper Eq. 1 over the pair's seeded counts."""
    significant, _, matched = green_counts(reference, candidate)
    return green_score(significant, matched)


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
