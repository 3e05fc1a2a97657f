"""`replay`: answers from recorded judge outputs, matched on the exact prompt text.

A JSONL file of {"prompt": ..., "response": ...} lines. Used to score outputs recorded from a published
judge (and to run the bundled sample without a model). No network, no model. A prompt the file does not hold
answers a GenerationFailure: that row is unscored with the reason, the others are scored.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from radmetrics.errors import JudgeError
from radmetrics.judge.base import BackendOptions, JudgeBackend, OnResult
from radmetrics.types import GenerationConfig, GenerationFailure


@dataclass(frozen=True)
class ReplayOptions(BackendOptions):
    #: the JSONL file of {"prompt", "response"} lines (or give it as model=)
    path: str | None = None
    #: another name for path
    replay: str | None = None


class ReplayJudge(JudgeBackend):
    backend_name = "replay"
    options_class = ReplayOptions
    cache_by_default = False

    def __init__(self, model: str | None = None, **options: Any):
        settings = ReplayOptions.from_dict(options, self.backend_name)
        path = settings.path or settings.replay or model
        if not path:
            raise JudgeError("The replay backend needs a JSONL file: get_judge('replay', path='answers.jsonl').")
        self.path = Path(path)
        if not self.path.is_file():
            raise JudgeError(f"Replay file not found: {self.path}")
        super().__init__(model=str(self.path), **options)
        self.responses: dict[str, str] = {}
        #: prompt -> the lines of two different responses to it (a file made of two recordings): such rows are
        #: unscored, never answered with whichever came last
        self.conflicts: dict[str, tuple[int, int]] = {}
        try:
            self._read_answers()
        except UnicodeDecodeError as e:
            from radmetrics.io import not_utf8_file

            raise JudgeError(f"Replay file {not_utf8_file(self.path, e)}") from None
        if not self.responses and not self.conflicts:  # every row would be "no response": said once, up front
            raise JudgeError(f"Replay file {self.path} holds no answers (no {{'prompt', 'response'}} line): is it "
                             "the file you meant?")
        self._digest = hashlib.sha256(self.path.read_bytes()).hexdigest()[:16]

    def _read_answers(self) -> None:
        first_line: dict[str, int] = {}
        with self.path.open(encoding="utf-8-sig") as fh:  # a byte-order mark, as input files may have one
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    prompt, response = row["prompt"], row["response"]
                except (json.JSONDecodeError, KeyError, TypeError) as e:
                    raise JudgeError(f"{self.path}:{lineno}: not a {{'prompt', 'response'}} JSON line ({e})") from e
                if not isinstance(prompt, str) or not isinstance(response, str):
                    raise JudgeError(f"{self.path}:{lineno}: 'prompt' and 'response' must be strings")
                if prompt in self.responses and self.responses[prompt] != response:
                    self.conflicts.setdefault(prompt, (first_line[prompt], lineno))
                    continue
                first_line.setdefault(prompt, lineno)
                self.responses[prompt] = response

    def identity(self) -> dict[str, Any]:
        return {"backend": "replay", "model": self.path.name, "revision": self._digest}

    def _generate(self, prompts: list[str], config: GenerationConfig, on_result: OnResult | None,
                  progress: bool) -> list[str]:
        out: list[str] = []
        for i, prompt in enumerate(prompts):
            # a prompt the file does not hold fails that row only (unscored with this reason), as a failed call of
            # any backend does: the rows it does hold are still scored, e.g. one system's of several in compare
            if prompt in self.conflicts:
                first, other = self.conflicts[prompt]
                out.append(GenerationFailure(f"replay file {self.path} has different responses for this row's "
                                             f"prompt (lines {first} and {other}); keep one"))
            else:
                out.append(self.responses[prompt] if prompt in self.responses else GenerationFailure(
                    f"replay file {self.path} has no response for this row's prompt; prompts must match exactly, "
                    "including whitespace"))
            if on_result:
                on_result(i, out[-1])
        return out
