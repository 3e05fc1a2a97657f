"""Training ER²Score's reward model with the MRE loss (LoRA parameters and the reward head)."""
from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from radmetrics.er2score.loss import mre_loss
from radmetrics.er2score.model import MultiRewardModel
from radmetrics.er2score.pairs import reward_input


def train_reward_model(model: MultiRewardModel, pairs: Sequence[dict[str, Any]], steps: int = 100,
                       batch_size: int = 4, lr: float = 1e-4, lam: float = 1.0, c: float = 1e-2, seed: int = 0,
                       progress: bool = True) -> list[float]:
    """Returns the loss of every step. Pairs come from `build_pairs`; sub-score margins from their scores."""
    import torch
    from tqdm.auto import tqdm

    if not pairs:
        raise ValueError("no training pairs")
    from radmetrics.errors import InputError
    from radmetrics.types import is_finite_number, is_whole_number

    # steps=0 returned no loss (the CLI's report was an IndexError), lam=nan trained nan weights, batch_size=0
    # stepped on empty batches
    if not is_whole_number(steps) or steps < 1:
        raise InputError(f"ER2Score training steps must be a whole number of at least 1, not {steps!r}")
    if not is_whole_number(batch_size) or batch_size < 1:
        raise InputError(f"ER2Score training batch_size must be a whole number of at least 1, not {batch_size!r}")
    for name, value, least_open in (("lr", lr, True), ("lam", lam, False), ("c", c, False)):
        if not is_finite_number(value) or (value <= 0 if least_open else value < 0):
            raise InputError(f"ER2Score training {name} must be a finite number {'above' if least_open else 'at least'}"
                             f" 0, not {value!r}")
    carried = pairs_direction(pairs)
    if carried is not None:  # the model learns what the pairs' sub-scores mean: error counts are lower-is-better
        model.higher_is_better = carried
    torch.manual_seed(seed)
    rng = random.Random(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.backbone.train()
    losses = []
    for _ in tqdm(range(steps), desc="ER2Score", disable=not progress):
        batch = rng.sample(list(pairs), min(batch_size, len(pairs)))
        r_w = model.rewards([reward_input(p["reference"], p["accepted"]) for p in batch])
        r_l = model.rewards([reward_input(p["reference"], p["rejected"]) for p in batch])
        s_w = torch.tensor([p["accepted_scores"] for p in batch], dtype=torch.float32)
        s_l = torch.tensor([p["rejected_scores"] for p in batch], dtype=torch.float32)
        loss = mre_loss(r_w.float(), r_l.float(), s_w, s_l, lam=lam, c=c, reduction="mean")
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(loss.detach()))
    model.backbone.eval()
    return losses


def pairs_direction(pairs: Sequence[dict[str, Any]]) -> bool | None:
    """Whether the pairs' sub-scores are higher-is-better, as their "higher_is_better" says (`generate_pairs` writes
    it: RadCliQ in the paper's convention counts errors), or None when no pair says. A model trained on error counts
    but saved as higher-is-better would reward more errors in RL (review 30b), so pairs that disagree are refused."""
    given = [p["higher_is_better"] for p in pairs if isinstance(p, dict) and p.get("higher_is_better") is not None]
    odd = next((value for value in given if not isinstance(value, bool)), None)
    if odd is not None:  # "false" as a string would read as true
        raise ValueError(f"a pair's higher_is_better is {odd!r}; it must be true or false")
    said = set(given)
    if len(said) > 1:
        raise ValueError("the pairs disagree on their direction: some say higher_is_better true, some false (pairs "
                         "made with both RadCliQ conventions?); train on pairs of one convention")
    return said.pop() if said else None
