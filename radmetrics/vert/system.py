"""VERT as a scoring system: one metric, three prompt families, zero- or few-shot."""
from __future__ import annotations

import json
import logging
import os
from functools import cached_property
from pathlib import Path
from typing import Any

from radmetrics.errors import InputError
from radmetrics.green.prompt import cut_report_warnings, sample_green_analysis, truncate_words
from radmetrics.scoring import ScoringSystem, word_comparison
from radmetrics.taxonomy import ErrorCounts
from radmetrics.types import Judgment
from radmetrics.vert.parse import (
    PARSER_VERSION,
    VertParseError,
    read_bare_score,
    read_counts,
    read_overall_score_with_form,
)
from radmetrics.vert.prompt import (
    ERROR_ILLUSTRATIONS,
    LETTER_NAMES,
    PROMPT_VERSION,
    Shot,
    build_vert_prompt,
    radeval_shot_score,
    sample_shots,
    shots_block,
    vert_user_turn,
)


#: how a shot's overall score is obtained (`shot_score`): its `score` column divided by `score_scale`, or from
#: its clinically significant error counts as VERT's RadEval shots were (App. D.6/D.8)
SHOT_SCORES = ("score", "significant-errors")


def _file_digest(path: str | os.PathLike) -> str:
    import hashlib

    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]
    except OSError:
        return "unreadable"  # said when the shots are read (`load_shots`)


def load_shots(path: str | Path, score_scale: float = 1.0, shot_score: str = "score") -> list[Shot]:
    """Annotated pairs (JSONL or CSV via radmetrics.io aliases): a `score` column divided by `score_scale`
    (e.g. 5 for RaTE-Eval's 0-5), or with ``shot_score="significant-errors"`` the score
    ``max(0, 1 - 0.15 x sig errors)`` from the `significant` counts (App. D.6/D.8); optional
    `significant`/`insignificant` count dicts (letters a-f), `explanation`, `matched_findings` and `category`
    (the letter of the error the shot illustrates, D.6/D.7). A value that cannot be shown is an error naming
    the line, before any judging."""
    from radmetrics.io import read_pairs

    if shot_score not in SHOT_SCORES:
        raise InputError(f"VERT shot_score must be one of {', '.join(SHOT_SCORES)}, not {shot_score!r}")
    if isinstance(score_scale, bool) or not isinstance(score_scale, (int, float)) or not score_scale > 0:
        raise InputError(f"VERT score_scale must be a number above 0 (the shots' maximum score), not {score_scale!r}")
    pairs = read_pairs(path)
    shots = []
    for i, row in enumerate(pairs.rows):
        where = f"{path} line {pairs.lines[i]}"
        if i in pairs.bad_rows:
            raise InputError(f"{path} {pairs.bad_rows[i]}")
        significant, insignificant = _counts(row, "significant", where), _counts(row, "insignificant", where)
        given = row.get("score")
        if isinstance(given, bool) or (given is not None and not isinstance(given, (int, float, str))):
            raise InputError(f"{where}: 'score' must be a number, not {given!r}")
        if shot_score == "significant-errors":
            if not isinstance(row.get("significant"), (dict, str)) or row["significant"] == "":
                raise InputError(f"{where}: shot_score=significant-errors needs the shot's 'significant' counts "
                                 "(a dict per letter a-f, {} for none)")
            score = radeval_shot_score(significant)
            if given not in (None, "") and _number(given) is not None and abs(_number(given) / score_scale - score) > 1e-9:
                raise InputError(f"{where}: the row's score {given!r} is not max(0, 1 - 0.15 x {sum(significant.values())} "
                                 f"significant errors) = {score:.2f}; drop the score column, or set shot_score=score")
        else:
            number = _number(given)
            if number is None:
                raise InputError(f"{where}: no numeric 'score' ({given!r}); or set shot_score=significant-errors "
                                 "to derive it from the significant counts (VERT App. D.6)")
            score = number / score_scale
            if not 0 <= score <= 1:
                raise InputError(f"{where}: score {given!r} / score_scale {score_scale} = {score:g} is "
                                 "outside 0-1 (set score_scale to the annotation's maximum)")
        category = str(row.get("category") or "").strip().strip("()").lower()
        if category and category not in LETTER_NAMES:
            raise InputError(f"{where}: category {row['category']!r} is not an error letter a-f")
        shots.append(Shot(row[pairs.reference_column], row[pairs.candidate_column], score, significant,
                          insignificant, _text(row, "explanation", where),
                          _text(row, "matched_findings", where) or _text(row, "matched", where), category))
    return shots


def _number(value: Any) -> float | None:
    """A finite number from a JSON number or a CSV cell; None otherwise."""
    import math

    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _counts(row: dict[str, Any], key: str, where: str) -> dict[str, int]:
    """A shot's per-category counts: a dict of letter -> whole number >= 0, or its JSON text in a CSV cell."""
    value = row.get(key)
    if value is None or value == "":
        return {}
    try:
        counts = json.loads(value) if isinstance(value, str) else value
    except ValueError as e:
        raise InputError(f"{where}: '{key}' must be a dict of counts per letter a-f, e.g. {{\"a\": 1}} ({e})") from e
    if not isinstance(counts, dict):
        raise InputError(f"{where}: '{key}' must be a dict of counts per letter a-f, not {value!r}")
    for letter, n in counts.items():
        if letter not in LETTER_NAMES or isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InputError(f"{where}: '{key}' holds {letter!r}: {n!r}; counts are whole numbers >= 0 per "
                             "letter a-f")
    return counts


def _text(row: dict[str, Any], key: str, where: str) -> str:
    value = row.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f"{where}: '{key}' must be text, not {value!r}")
    return value.strip()


def sample_overall_score(reference: str, candidate: str) -> float:
    """The sample answers' overall score: shared words / (shared + candidate-only words)."""
    shared, false, _ = word_comparison(reference, candidate)
    return len(shared) / (len(shared) + len(false)) if shared else 0.0


#: shots files already said to be unused (k = 0) in this process
_SAID_ZERO_SHOT: set[str] = set()


class VertSystem(ScoringSystem):
    name = "vert"
    score_key = "vert"
    parser_version = PARSER_VERSION
    evaluate_module = str(Path(__file__).with_name("vert.py"))
    #: "vert" (App. D.2), "formula" (D.3) or "rubric" (D.4)
    variant = "vert"
    #: annotated pairs to draw few-shot examples from; k = 0 means zero-shot
    shots_path: str | None = None
    k = 0
    seed = 42
    score_scale = 1.0
    #: a shot's score: "score" (its column / score_scale) or "significant-errors" (App. D.6/D.8's
    #: max(0, 1 - 0.15 x sig errors))
    shot_score = "score"
    option_choices = {"variant": ("vert", "formula", "rubric"), "shot_score": SHOT_SCORES}
    #: add App. D.9's "Error Type Illustrations" section
    illustrations = False
    max_words = 300

    @property
    def prompt_version(self) -> str:  # type: ignore[override]
        shots = f"-k{self.k}-seed{self.seed}" if self.k else ""
        shots += "-sigscore" if self.k and self.shot_score == "significant-errors" else ""
        if self.k and self.shots_path:  # the shots' content, not only their path: an edited file is another prompt
            shots += f"-shots{_file_digest(self.shots_path)}"
        return f"{PROMPT_VERSION}-{self.variant}{shots}{'-illus' if self.illustrations else ''}"

    @cached_property
    def _pool(self) -> list[Shot]:
        return load_shots(self.shots_path, self.score_scale, self.shot_score) if self.shots_path else []

    def _extra(self, reference: str, candidate: str) -> str:
        sections = []
        if self.illustrations:
            sections.append(ERROR_ILLUSTRATIONS)
        if self.k:
            if not self.shots_path:
                raise InputError("VERT few-shot (k > 0) needs shots_path: a file of annotated pairs with scores.")
            shots = sample_shots(self._pool, self.k, self.seed, exclude=(reference, candidate))
            heading = "Full Assessment Examples" if self.illustrations else "Examples"
            sections.append(shots_block(shots, numbered_from=6 if self.illustrations else 5, heading=heading))
        return "\n".join(sections)

    def build_prompt(self, reference: str, candidate: str) -> str:
        return build_vert_prompt(reference, candidate, self.variant, self.max_words,
                                 self._extra(reference, candidate))

    def input_warnings(self, reference: str, candidate: str) -> list[str]:
        """A report cut to max_words in the prompt, said in the row's details.warnings as GREEN says it (review 33:
        VERT cut a 3,500-word reference to its first 300 words without a word)."""
        return cut_report_warnings(reference, candidate, self.max_words, "VERT")

    def sample_answer(self, reference: str, candidate: str) -> str:
        """GREEN's analysis (shared words matched, candidate-only words (a) errors) and the overall score
        matched / (matched + errors)."""
        reference, candidate = truncate_words(reference, self.max_words), truncate_words(candidate, self.max_words)
        return (sample_green_analysis(reference, candidate)
                + f"\n\n[Overall Accuracy Score]:\n{sample_overall_score(reference, candidate):.2f}")

    def parse(self, text: str) -> Judgment:
        try:
            score, written = read_overall_score_with_form(text)
        except VertParseError as e:
            return Judgment.unscored(str(e), raw=text if isinstance(text, str) else "")
        counts = read_counts(text)
        error_counts = (ErrorCounts.from_letters(counts["significant"], counts["insignificant"] or None)
                        if counts else None)
        return Judgment(score=score, parsed=True, raw=text, details={**counts, "score_written": written},
                        error_counts=error_counts)

    def configure(self, **options: Any) -> VertSystem:
        clone = super().configure(**options)
        if not clone.score_scale > 0:
            raise InputError(f"Scoring system '{self.name}': score_scale must be above 0 (the shots' maximum "
                             f"score), not {clone.score_scale!r}")
        if clone.shots_path is not None and not isinstance(clone.shots_path, (str, os.PathLike)):
            raise InputError(f"Scoring system '{self.name}': shots_path must be a file path, not {clone.shots_path!r}")
        clone.__dict__.pop("_pool", None)  # a new shots file is read afresh
        if clone.shots_path and not clone.k and "shots_path" in options and clone.shots_path not in _SAID_ZERO_SHOT:
            # a shots file with k left at 0 is a zero-shot run: said (once: the checks before judging configure the
            # system too), as a user giving shots expects few-shot
            _SAID_ZERO_SHOT.add(clone.shots_path)
            logging.getLogger(__name__).warning(
                "VERT: shots_path=%s is given but k is 0, so the prompts are zero-shot (the file is not read); pass "
                "k=N for N examples per prompt", clone.shots_path)
        if clone.k:
            # Read the shots now, not at the first prompt: a missing, empty or malformed shots file is a usage
            # error, and read later it came after `score` had opened OUTPUT.part and after compare / meta-eval
            # had judged the other metrics and written a report with VERT "failed" (review 29c).
            if not clone.shots_path:
                raise InputError("VERT few-shot (k > 0) needs shots_path: a file of annotated pairs with scores.")
            try:
                clone._pool  # noqa: B018 (the read is the check)
            except InputError as e:  # "adir is a folder" alone does not say which file of the run it is
                raise InputError(f"VERT shots_path: {e}") from None
            if clone.k > len(clone._pool):
                # k=5 with a file of 3 shots made 3-shot prompts while the results said k=5 (k=1e30 passed too)
                raise InputError(f"VERT k={clone.k} asks for more examples than shots_path {clone.shots_path} holds "
                                 f"({len(clone._pool)}): give k of at most {len(clone._pool)}, or more shots")
        return clone


class VertFormulaSystem(VertSystem):
    name = score_key = "vert_formula"
    variant = "formula"
    evaluate_module = None


class VertRubricSystem(VertSystem):
    name = score_key = "vert_rubric"
    variant = "rubric"
    evaluate_module = None


class VertFineTunedSystem(VertSystem):
    """For judges fine-tuned with the VERT recipe (radmetrics train judge --recipe vert): the short user turn
    they were trained on, and a bare score in [0, 1] as the answer (VERT Sec. 4.1.4)."""

    name = score_key = "vert_ft"
    evaluate_module = None

    @property
    def prompt_version(self) -> str:  # type: ignore[override]
        return "vert-ft-1"

    def build_prompt(self, reference: str, candidate: str) -> str:
        return vert_user_turn(" ".join(reference.split()[: self.max_words]), " ".join(candidate.split()[: self.max_words]))

    def sample_answer(self, reference: str, candidate: str) -> str:
        return f"{sample_overall_score(reference, candidate):.1f}"

    def parse(self, text: str) -> Judgment:
        try:
            value, written = read_bare_score(text)
        except VertParseError as e:
            return Judgment.unscored(str(e), raw=text if isinstance(text, str) else "")
        return Judgment(score=value, parsed=True, raw=text, details={"score_written": written})
