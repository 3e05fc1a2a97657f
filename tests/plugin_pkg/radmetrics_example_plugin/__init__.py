"""A scoring system written as a third party would: only public radmetrics API and the entry point."""
import re

import radmetrics
from radmetrics.scoring import ScoringSystem


class WordOverlap(ScoringSystem):
    name = "word_overlap"
    score_key = "word_overlap"

    def build_prompt(self, reference, candidate):
        return f"Rate from 0 to 10 how well the candidate matches.\nReference: {reference}\nCandidate: {candidate}\nScore:"

    def sample_answer(self, reference, candidate):
        shared = set(reference.lower().split()) & set(candidate.lower().split())
        return str(min(10, len(shared)))

    def parse(self, text):
        match = re.search(r"\b(10|[0-9])\b", text)
        if not match:
            return radmetrics.Judgment.unscored("no 0-10 score in the output", raw=text)
        return radmetrics.Judgment(score=int(match.group(1)) / 10, parsed=True, raw=text)


@radmetrics.hookimpl
def register_scoring_systems(register):
    register(WordOverlap())
