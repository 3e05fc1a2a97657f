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
