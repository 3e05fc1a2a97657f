"""`radmetrics reward-check`: before spending GPU hours on GRPO, score a sample of the base policy's completions
with the reward and see whether it can teach anything.

GRPO's advantage is a completion's reward minus its group's mean (DeepSeekMath Sec. 4.1; TRL's
`_generate_and_score_completions`): a group whose rewards are all equal (or all unscored) contributes no
gradient. The check reports, per group of completions for one prompt, the spread of the rewards; the share of
groups with no spread; the unscored share with reasons; and the reward's speed (completions per second).
"""
from __future__ import annotations

import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from radmetrics.errors import InputError
from radmetrics.rewards.base import RadmetricsReward, summarize_reasons
from radmetrics.types import is_whole_number

#: below this standard deviation a group's rewards count as equal
FLAT = 1e-9


@dataclass
class GroupSpread:
    prompt: str
    scored: int
    unscored: int
    mean: float | None
    std: float | None
    min: float | None
    max: float | None

    @property
    def flat(self) -> bool:
        """No learning signal: fewer than two scored completions, or all scored rewards equal."""
        return self.scored < 2 or (self.std is not None and self.std < FLAT)


@dataclass
class RewardCheck:
    reward: str
    groups: list[GroupSpread]
    completions: int
    unscored: int
    unscored_reasons: dict[str, int]
    reward_seconds: float
    generation_seconds: float | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def flat_groups(self) -> int:
        return sum(g.flat for g in self.groups)

    @property
    def unscored_groups(self) -> int:
        """Flat because completions went unscored (fewer than two scored), not because equal rewards came back."""
        return sum(g.scored < 2 and g.unscored > 0 for g in self.groups)

    @property
    def samples_per_second(self) -> float | None:
        return self.completions / self.reward_seconds if self.reward_seconds > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {"reward": self.reward, "completions": self.completions, "groups": len(self.groups),
                "flat_groups": self.flat_groups,
                "flat_group_share": self.flat_groups / len(self.groups) if self.groups else None,
                "unscored_groups": self.unscored_groups,
                "unscored": self.unscored, "unscored_share": self.unscored / self.completions if self.completions else None,
                "unscored_reasons": self.unscored_reasons, "reward_seconds": self.reward_seconds,
                "reward_samples_per_s": self.samples_per_second, "generation_seconds": self.generation_seconds,
                "mean_group_std": _mean([g.std for g in self.groups if g.std is not None]),
                "settings": self.settings,
                "per_group": [{**asdict(g), "flat": g.flat} for g in self.groups]}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def group_spread(prompt: str, rewards: Sequence[float | None]) -> GroupSpread:
    scored = [r for r in rewards if r is not None and not math.isnan(r)]
    return GroupSpread(prompt=prompt, scored=len(scored), unscored=len(rewards) - len(scored),
                       mean=statistics.fmean(scored) if scored else None,
                       std=statistics.pstdev(scored) if scored else None,
                       min=min(scored) if scored else None, max=max(scored) if scored else None)


def check_reward(reward: RadmetricsReward, prompts: Sequence[Any], references: Sequence[Any],
                 completions: Sequence[Sequence[Any]], batch_size: int | None = None,
                 generation_seconds: float | None = None, settings: dict[str, Any] | None = None) -> RewardCheck:
    """Score completions[i] (the group sampled for prompts[i]) against references[i] with `reward`, in calls of
    `batch_size` completions (default: all at once, like one GRPO generation batch)."""
    from radmetrics.rewards.completions import completion_text

    if batch_size is not None and (not is_whole_number(batch_size) or batch_size < 1):
        # 0 scored all at once as if unset, -3 scored nothing (an empty range) and reported no rewards
        raise InputError(f"check_reward's batch_size must be a whole number of at least 1, not {batch_size!r}")
    flat_refs, flat_cands, owner = [], [], []
    for i, (ref, group) in enumerate(zip(references, completions)):
        for completion in group:
            flat_refs.append(ref)
            flat_cands.append(completion_text(completion))
            owner.append(i)
    step = batch_size or max(1, len(flat_cands))
    rewards: list[float | None] = []
    reasons: list[str | None] = []
    seconds = 0.0
    for start in range(0, len(flat_cands), step):
        batch = reward.score_batch(flat_refs[start:start + step], flat_cands[start:start + step])
        reward._report(batch)
        rewards += batch.rewards
        reasons += [r if s is None else None for s, r in zip(batch.scores, batch.reasons)]
        seconds += batch.seconds
    groups = []
    for i, prompt in enumerate(prompts):
        groups.append(group_spread(_prompt_text(prompt), [r for r, o in zip(rewards, owner) if o == i]))
    unscored = [r for r in reasons if r is not None]
    return RewardCheck(reward=reward.__name__, groups=groups, completions=len(flat_cands), unscored=len(unscored),
                       unscored_reasons=dict(summarize_reasons(unscored).most_common()), reward_seconds=seconds,
                       generation_seconds=generation_seconds, settings=dict(settings or {}))


def _prompt_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], dict):
        return str(prompt[-1].get("content", ""))
    return str(prompt)


def policy_prompt_ids(tokenizer, prompts: Sequence[Any], policy: str = "the policy") -> list[list[int]]:
    """Each prompt's token ids as TRL's GRPOTrainer builds them: a conversational prompt through the chat template,
    tokenized by it (the template writes any BOS: tokenizing its text again added a second BOS for Llama-style
    tokenizers, so the check sampled from another input than GRPO does), a plain prompt with the tokenizer's
    special tokens."""
    from radmetrics.errors import RadmetricsError

    ids = []
    for prompt in prompts:
        if isinstance(prompt, list):
            if not getattr(tokenizer, "chat_template", None):
                raise RadmetricsError(f"conversational prompts need a chat template; {policy} has none")
            ids.append(list(tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True,
                                                          return_dict=True)["input_ids"]))
        else:
            ids.append(list(tokenizer(str(prompt))["input_ids"]))
    return ids


def sample_completions(policy: str, prompts: Sequence[Any], num_generations: int = 4, max_new_tokens: int = 256,
                       temperature: float = 1.0, top_p: float = 1.0, seed: int = 0, batch_size: int = 8,
                       revision: str | None = None) -> tuple[list[list[str]], float]:
    """`num_generations` sampled completions per prompt from the policy, as GRPO samples them (plain prompts as
    text, conversational prompts through the tokenizer's chat template); returns them and the seconds taken.

    This is the policy, not a judge: the one model call outside radmetrics/judge/, kept to HF `generate`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from radmetrics.errors import RadmetricsError

    try:
        tokenizer = AutoTokenizer.from_pretrained(policy, revision=revision)
        model = AutoModelForCausalLM.from_pretrained(policy, revision=revision)
    except OSError as e:
        raise RadmetricsError(f"Could not load the policy {policy!r}: {e}") from e
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = model.to(device).eval()
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    inputs = policy_prompt_ids(tokenizer, prompts, policy)
    torch.manual_seed(seed)
    start = time.perf_counter()
    out: list[list[str]] = []
    for i in range(0, len(inputs), batch_size):
        batch = tokenizer.pad({"input_ids": inputs[i:i + batch_size]}, padding=True, return_tensors="pt").to(device)
        with torch.inference_mode():
            # GRPOConfig's defaults for the rest (top_k=0: every token), not generate's (top_k=50, or the
            # checkpoint's generation config), which sampled from a narrower distribution than GRPO does
            generated = model.generate(**batch, do_sample=True, temperature=temperature, top_p=top_p, top_k=0,
                                       min_p=None, repetition_penalty=1.0, max_new_tokens=max_new_tokens,
                                       num_return_sequences=num_generations, pad_token_id=tokenizer.pad_token_id)
        decoded = tokenizer.batch_decode(generated[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)
        out += [decoded[k:k + num_generations] for k in range(0, len(decoded), num_generations)]
    return out, time.perf_counter() - start
