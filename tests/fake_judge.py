"""A fake GREEN judge, plugged in through the real `register_judge_backends` hook.

Its answer depends on the prompt: the number of candidate words shared with the reference are "matched
findings", candidate-only words are (a) errors. Prompts whose candidate says GARBLED get unparseable text.
"""
from __future__ import annotations

import re

from radmetrics.hookspecs import hookimpl
from radmetrics.judge.base import JudgeBackend


def analysis_for(prompt: str) -> str:
    ref = re.search(r"2\. Reference Report:\n    (.*?)\n\n", prompt, re.S).group(1)
    cand = re.search(r"3\. Candidate Report:\n    (.*?)\n\n", prompt, re.S).group(1)
    if "GARBLED" in cand:
        return "I am not sure what to say about these reports."
    ref_words, cand_words = set(ref.lower().split()), set(cand.lower().split())
    matched, false = len(ref_words & cand_words), len(cand_words - ref_words)
    letters = "abcdef"
    sig = "\n".join(f"({x}) Error: {false if x == 'a' else 0}." for x in letters)
    return (f"[Explanation]:\nfake\n\n[Clinically Significant Errors]:\n{sig}\n\n"
            f"[Clinically Insignificant Errors]:\nNo clinically insignificant errors.\n\n"
            f"[Matched Findings]:\n{matched}. words.")


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
