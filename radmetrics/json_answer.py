"""Reading JSON that a judge wrote: tolerant of fences, chatter, trailing commas and Python-style quotes.

Used by every room whose judge answers in JSON (FineRadScore, the RadCliQ rubric, MRScore) and by the LLM
data steps and ER²Score's teacher data. Errors say whether asking the judge again can help: a
truncated or malformed object can come out right on a re-ask; content that contradicts the format the
judge was asked for (e.g. swapped fields) is reported, not re-asked.
"""
from __future__ import annotations

import ast
import json
import re
import warnings
from collections.abc import Mapping
from textwrap import shorten
from typing import Any


class AnswerError(ValueError):
    """A judge answer that cannot be read; the message becomes the unscored row's reason.

    retryable: True when a re-ask can help (no JSON, malformed or truncated JSON), False when the answer
    is complete but says something the format does not allow.
    """

    def __init__(self, message: str, retryable: bool):
        super().__init__(message)
        self.retryable = retryable


def _objects(text: str) -> list[tuple[str, bool]]:
    """Every top-level balanced {...} of the text, in order, as (text, closed); braces inside strings are
    skipped (strings are only tracked inside an object: an apostrophe in prose opens nothing)."""
    found, depth, start, in_string, escape = [], 0, 0, None, False
    for end, ch in enumerate(text):
        if depth and in_string:
            escape = ch == "\\" and not escape
            if ch == in_string and not escape:
                in_string = None
            elif ch != "\\":
                escape = False
        elif depth and ch in "\"'":
            in_string = ch
        elif ch == "{":
            if depth == 0:
                start = end
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                found.append((text[start : end + 1], True))
    if depth:
        found.append((text[start:], False))
    return found


#: a reasoning model's drafting: "<think>...</think>" (GREEN reads past it the same way, review 28)
_THINK_TAG = re.compile(r"<(/?)think>", re.I)


def without_reasoning(text: str) -> str:
    """The text outside a reasoning model's "<think>...</think>" drafting (review 29b: a draft object in it was read
    as the answer when the output was cut before the answer, or made a second object beside the answer). A
    "</think>" with no "<think>" closes drafting the chat template opened in the prompt (Qwen3, R1): what comes
    before it is drafting too. One pass over the tags: linear time."""
    pieces, position, opened = [], 0, False
    for tag in _THINK_TAG.finditer(text):
        if not tag[1] and not opened:
            pieces.append(text[position:tag.start()])
            opened = True
        elif tag[1]:
            if not opened:
                pieces = []
            opened, position = False, tag.end()
    if opened:
        raise AnswerError("the output ends inside its <think> block, before an answer (cut off?)", retryable=True)
    pieces.append(text[position:])
    return "".join(pieces)


class JSONObject(dict):
    """A JSON object that also keeps every (key, value) pair in the order written, duplicates included
    (a dict keeps only the last value of a repeated key, silently)."""

    pairs: list[tuple[Any, Any]]


def written_pairs(mapping: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    """A judge's JSON object's (key, value) pairs in the order written, a repeated key's every value included
    (JSONObject); a plain mapping's items: what a reader checks for a key given twice with different values."""
    return list(getattr(mapping, "pairs", mapping.items()))


def _object(pairs: list[tuple[Any, Any]]) -> JSONObject:
    obj = JSONObject(pairs)
    obj.pairs = list(pairs)
    return obj


def _literal(node: ast.AST) -> Any:
    """ast.literal_eval that keeps duplicate keys of dict literals, as _object does for JSON."""
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("dict unpacking is no literal")
        return _object([(_literal(k), _literal(v)) for k, v in zip(node.keys, node.values, strict=True)])
    if isinstance(node, ast.List):
        return [_literal(e) for e in node.elts]
    return ast.literal_eval(node)


def _load_one(raw: str) -> Any:
    """json.loads, then with trailing commas removed, then as a Python literal (single quotes)."""
    attempts = [raw, re.sub(r",\s*([}\]])", r"\1", raw)]
    for candidate in attempts:
        try:
            return json.loads(candidate, strict=False, object_pairs_hook=_object)
        except ValueError:
            pass
    try:
        literal = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", attempts[1])))
        with warnings.catch_warnings():  # odd escapes in judge text warn (and may one day be errors)
            warnings.simplefilter("ignore")
            return _literal(ast.parse(literal.strip(), mode="eval").body)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as e:
        raise AnswerError(f"malformed JSON ({type(e).__name__})", retryable=True) from e


def _canonical(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, default=repr)
    except TypeError:  # keys of mixed types (a Python literal): their written order
        return repr(value)


def load_json_tolerant(text: str) -> Any:
    """The one JSON object the judge answered with: json.loads, then with trailing commas removed, then as a
    Python literal (single quotes).

    Every top-level {...} in the text is read, not just the first (a fidelity audit found an echoed output
    template, or Example 5's "{}" named before the answer, read as the answer: 0 errors). A reasoning model's
    "<think>...</think>" is drafting, not read; one left open is an answer cut while thinking (AnswerError).
    Braces that hold no "key: value" ("{report}") are prose; an empty {} before a non-empty object is a mention (an echoed example),
    one after it no single answer (a revision to "no errors"?); the same object written twice is one answer. Two different objects, an object cut off by the end of the output, or one
    that cannot be read beside one that can, have no single answer: AnswerError (retryable).

    Strings may hold raw line breaks (`strict=False`): papers print long strings wrapped over lines and
    judges copy them. Objects are JSONObject: `.pairs` keeps a repeated key's every value."""
    if not isinstance(text, str):
        raise AnswerError(f"judge output is {type(text).__name__}, not text", retryable=True)
    objects = _objects(without_reasoning(text))
    if not objects:
        raise AnswerError("no JSON object in the output", retryable=True)
    answers, error = [], None
    for raw, closed in objects:
        looks_like_json = ":" in raw
        if not closed:
            if looks_like_json or len(objects) == 1:
                raise AnswerError("JSON object is not closed (truncated output?)", retryable=True)
            continue
        try:
            answers.append(_load_one(raw))
        except AnswerError as e:
            if looks_like_json or len(objects) == 1:
                error = e
    if error is not None:
        if answers:
            raise AnswerError(f"{error} beside another JSON object: no single answer", retryable=True)
        raise error
    if not answers:
        raise AnswerError("no JSON object in the output", retryable=True)
    if any(a != {} for a in answers):
        if answers[-1] == {}:  # "... final answer: {}" after an object: which one is the answer?
            raise AnswerError("an empty {} after a non-empty JSON object: no single answer", retryable=True)
        answers = [a for a in answers if a != {}]
    distinct = {_canonical(a) for a in answers}
    if len(distinct) > 1:
        raise AnswerError(f"the output holds {len(distinct)} different JSON objects: no single answer",
                          retryable=True)
    return answers[-1]


#: words that take back or change what was answered: "Correction: omission should have 2", "Actually, line 1 is urgent",
#: "On reflection ...", "I miscounted"
_REVISING = re.compile(r"\b(?:correction|corrected|revis(?:e|ed|ing|ion)|on\s+(?:second\s+thought|reflection|further\s+"
                       r"review)|actually|instead|should\s+(?:be|have|read|count|get)|I\s+(?:miscounted|made\s+an?\s+"
                       r"(?:error|mistake))|amend\w*|change[ds]?\s+(?:to|it|this|that))\b", re.I)
_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?](?!\d)[^.!?\n]*)*?(?:[.!?](?=\s|$)|\n|$)")


def revision_after_answer(text: str, about: re.Pattern[str]) -> str | None:
    """A sentence after the JSON answer that revises it ("Correction: omission should have 2 significant errors."):
    revising words and, in the same sentence, what the answer gives (``about``: a count, a line, a severity). The
    answer then has no single reading (review 31: the JSON was read and the revision after it dropped). None where
    there is none. Linear time: one pass over the text after the answer."""
    if not isinstance(text, str):
        return None
    try:
        outside = without_reasoning(text)
    except AnswerError:
        return None
    closed = [raw for raw, ended in _objects(outside) if ended]
    if not closed:
        return None
    trailing = outside[outside.rfind(closed[-1]) + len(closed[-1]):]
    trailing = re.sub(r"^\s*`{3,}", "", trailing)  # the fence that closes the answer
    for sentence in _SENTENCE.finditer(trailing):
        if _REVISING.search(sentence.group()) and about.search(sentence.group()):
            return sentence.group().strip()
    return None


def revision_reason(text: str, about: re.Pattern[str]) -> str | None:
    """Why an answer revised after its JSON is unscored (`revision_after_answer`), in the words every reader
    gives; None where it is not revised."""
    revision = revision_after_answer(text, about)
    if revision is None:
        return None
    return f"the answer is revised after its JSON ({shorten(revision, 80)!r}): no single answer"


def load_json_object(text: str, what: str = "JSON") -> dict[str, Any]:
    """load_json_tolerant, requiring an object."""
    data = load_json_tolerant(text)
    if not isinstance(data, dict):
        raise AnswerError(f"{what} is a {type(data).__name__}, not an object", retryable=True)
    return data
