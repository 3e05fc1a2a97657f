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
from typing import Any


class AnswerError(ValueError):
    """A judge answer that cannot be read; the message becomes the unscored row's reason.

    retryable: True when a re-ask can help (no JSON, malformed or truncated JSON), False when the answer
    is complete but says something the format does not allow.
    """

    def __init__(self, message: str, retryable: bool):
        super().__init__(message)
        self.retryable = retryable


def json_text(text: str) -> str:
    """The first balanced {...} of the answer (inside a ``` fence when there is one)."""
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    body = fenced.group(1) if fenced else text
    start = body.find("{")
    if start < 0:
        raise AnswerError("no JSON object in the output", retryable=True)
    depth, in_string, escape = 0, None, False
    for end in range(start, len(body)):  # the matching brace, skipping braces inside strings
        ch = body[end]
        if in_string:
            escape = ch == "\\" and not escape
            if ch == in_string and not escape:
                in_string = None
            elif ch != "\\":
                escape = False
        elif ch in "\"'":
            in_string = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return body[start : end + 1]
    raise AnswerError("JSON object is not closed (truncated output?)", retryable=True)


class JSONObject(dict):
    """A JSON object that also keeps every (key, value) pair in the order written, duplicates included
    (a dict keeps only the last value of a repeated key, silently)."""

    pairs: list[tuple[Any, Any]]


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


def load_json_tolerant(text: str) -> Any:
    """json.loads, then with trailing commas removed, then as a Python literal (single quotes).

    Strings may hold raw line breaks (`strict=False`): papers print long strings wrapped over lines and
    judges copy them. Objects are JSONObject: `.pairs` keeps a repeated key's every value."""
    if not isinstance(text, str):
        raise AnswerError(f"judge output is {type(text).__name__}, not text", retryable=True)
    raw = json_text(text)
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


def load_json_object(text: str, what: str = "JSON") -> dict[str, Any]:
    """load_json_tolerant, requiring an object."""
    data = load_json_tolerant(text)
    if not isinstance(data, dict):
        raise AnswerError(f"{what} is a {type(data).__name__}, not an object", retryable=True)
    return data
