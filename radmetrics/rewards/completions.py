"""What TRL hands a reward function, read as report pairs: completions (plain text or conversational) and the
reference column among the dataset columns it passes as keyword arguments.

TRL's contract (trl/trainer/grpo_trainer.py `_calculate_rewards`): `reward(prompts=..., completions=...,
completion_ids=..., **columns)` where `columns` are the dataset's other columns repeated once per generation,
plus `trainer_state`, `log_extra` and `log_metric`. A conversational completion is a list of messages
(`[{"role": "assistant", "content": ...}]`, content a string or a list of content blocks). Return one float
or None per completion; TRL ignores None (NaN) in the group baseline and gives the row no advantage.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from radmetrics.errors import InputError

#: dataset columns TRL's GRPOTrainer does not pass to reward functions (trl/trainer/grpo_trainer.py)
TRL_KEEPS = frozenset({"prompt", "completion", "completion_ids"})

#: keyword arguments TRL adds besides the dataset's columns
TRAINER_KWARGS = frozenset({"trainer_state", "log_extra", "log_metric", "environments", "completion_ids"})


def completion_text(completion: Any) -> Any:
    """The report a completion holds: the text itself, or the assistant messages' text joined by newlines, without a
    reasoning block (`report_after_reasoning`); an assistant turn with no text (a bare tool call, an image block)
    is an empty report, judged as written (as None it went unscored, and a policy escaped the reward by answering
    with no text). Messages with no assistant turn are None, and anything else is returned as is (the runner marks
    it unscored, naming its type)."""
    if isinstance(completion, str):
        return report_after_reasoning(completion)
    if isinstance(completion, dict):
        completion = [completion]
    if isinstance(completion, list | tuple) and all(isinstance(m, dict) for m in completion):
        turns = [m for m in completion if m.get("role", "assistant") == "assistant"]
        if not turns:
            return None
        return report_after_reasoning("\n".join(text for text in (_content_text(m.get("content")) for m in turns)
                                                if text))
    return completion


def report_after_reasoning(text: str) -> str:
    """A reasoning policy's report without its "<think>...</think>" drafting (a Qwen3 or R1 policy's completion holds
    it, and the judge read the draft as part of the report: its findings counted as the report's). A "</think>"
    alone ends drafting the chat template opened. A completion that never closes its block wrote no report: the empty
    report, judged as such, so cutting the answer off inside the draft is no way around the reward."""
    from radmetrics.json_answer import AnswerError, without_reasoning

    try:
        report = without_reasoning(text)
    except AnswerError:
        return ""
    return report.strip() if report != text else text


def _content_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks: [{"type": "text", "text": "..."}, {"type": "image"}, ...]
        texts = [b.get("text") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
        return "".join(texts) if texts else None
    return None


def reference_values(column: str, completions: Sequence[Any], columns: dict[str, Any]) -> list[Any]:
    """The reference report of every completion, from the dataset column TRL passed; a missing column is a
    set-up error (every row would be unscored), so it fails loudly, naming the columns there are."""
    if column not in columns and column in TRL_KEEPS:
        # e.g. SFT data (prompt, completion = the reference report) reused for GRPO: TRL drops the column itself
        raise InputError(f"TRL does not pass dataset column '{column}' to reward functions (it keeps "
                         f"{', '.join(sorted(TRL_KEEPS))} for itself): copy the reference into another column, "
                         f"e.g. dataset.map(lambda row: {{'reference': row['{column}']}}), and pass "
                         f"reference_column=<its name> (default 'reference').")
    if column not in columns:
        available = sorted(k for k in columns if k not in TRAINER_KWARGS)
        raise InputError(f"The reward needs the reference report in dataset column '{column}', but the trainer "
                         f"passed only these columns: {', '.join(available) or '(none)'}. Add the column to the "
                         f"training dataset or pass reference_column=<its name>.")
    values = list(columns[column])
    if len(values) != len(completions):
        raise InputError(f"column '{column}' has {len(values)} values for {len(completions)} completions")
    return values


def training_step(columns: dict[str, Any], fallback: int) -> int:
    state = columns.get("trainer_state")
    return int(getattr(state, "global_step", fallback))
