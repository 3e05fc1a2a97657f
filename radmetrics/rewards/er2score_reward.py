"""ER²Score as a reward: a trained multi-reward model (ER²Score Sec. 2.2) scores completions in one forward
pass per batch, with no generation — the cheapest report reward there is.

`er2score_reward(folder)` is a TRL reward function returning the ER²Score (the sum of the per-criterion
rewards); `.criteria_functions()` gives one reward function per criterion (TRL then logs each one as
`rewards/er2score_<criterion>/mean`), all answered from the same forward pass; `.score()` and
`.as_reward_model()` serve it as a reward model outside TRL's reward-function path.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from radmetrics.errors import RadmetricsError
from radmetrics.rewards.base import RadmetricsReward
from radmetrics.runner import pair_problem
from radmetrics.types import DTYPE_CHOICES, TORCH_DTYPE_NAMES, is_whole_number


#: the options an ER²Score reward takes besides the reward ones (`er2score_reward`'s model_options)
MODEL_OPTIONS = ("base_model", "device", "dtype", "batch_size", "max_length")


class _SharedModel:
    """The loaded reward model and the last batch's rewards, shared by the sum and per-criterion functions."""

    def __init__(self, source: Any, base_model: str | None, device: str, dtype: str, batch_size: int | None,
                 max_length: int):
        if dtype not in DTYPE_CHOICES:  # refused here, not as a KeyError at the first reward call (a training step)
            raise RadmetricsError(f"ER2Score dtype must be one of {', '.join(DTYPE_CHOICES)}, not {dtype!r}")
        # batch_size=-1 made no forward pass (range with a negative step): every reward None, with no reason;
        # 2.5 a TypeError at the first training step; max_length=0 left every row unscored
        for name, value, allow_none in (("batch_size", batch_size, True), ("max_length", max_length, False)):
            if not (value is None and allow_none) and (not is_whole_number(value) or value < 1):
                raise RadmetricsError(f"ER2Score {name} must be a whole number of at least 1"
                                      f"{' (or None: one pass per call)' if allow_none else ''}, not {value!r}")
        self.source, self.base_model, self.device, self.dtype = source, base_model, device, dtype
        self.batch_size, self.max_length = batch_size, max_length
        self.model = source if not isinstance(source, str) else None
        self.forward_passes = 0
        self._memo: tuple[Any, Any] | None = None

    def load(self):
        if self.model is None:
            from radmetrics.er2score.model import MultiRewardModel

            try:
                self.model = MultiRewardModel.load(self.source, base_model=self.base_model)
            except OSError as e:
                raise RadmetricsError(f"Could not load the ER2Score model {self.source!r}: {e}") from e
            self._place()
        return self.model

    def _place(self) -> None:
        import torch

        device = self.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if self.dtype == "auto":
            dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
        else:
            dtype = getattr(torch, TORCH_DTYPE_NAMES[self.dtype])
        self.model.backbone.to(device=device, dtype=dtype).eval()
        self.model.head.to(device)  # the head stays fp32: rewards are read at full precision

    @property
    def criteria(self) -> list[str]:
        return list(self.load().criteria)

    def rewards(self, references: Sequence[Any], candidates: Sequence[Any]
                ) -> tuple[list[list[float] | None], list[str | None]]:
        """Per-criterion rewards of each pair (None with the reason for pairs it cannot score)."""
        key = (tuple(map(_key, references)), tuple(map(_key, candidates)))
        if self._memo is not None and self._memo[0] == key:
            return self._memo[1]
        import torch

        from radmetrics.er2score.pairs import reward_input

        model = self.load()
        out: list[list[float] | None] = [None] * len(references)
        reasons: list[str | None] = [None] * len(references)
        texts, rows = [], []
        for i, (ref, cand) in enumerate(zip(references, candidates)):
            # as the runner does: an empty completion is scored as written (it counts against the policy);
            # an empty reference leaves nothing to score against
            problem = pair_problem(ref, cand, generated=True)
            if problem:
                reasons[i] = f"row {i}: {problem}"
                continue
            text = reward_input(ref, cand)
            length = len(model.tokenizer(text)["input_ids"])
            if length > self.max_length:  # truncating would cut the candidate and the instruction it ends on
                reasons[i] = (f"row {i}: ER2Score input is {length} tokens, over max_length={self.max_length} "
                              f"(the reward is read at the last token)")
                continue
            texts.append(text)
            rows.append(i)
        step = self.batch_size or max(1, len(texts))
        with torch.inference_mode():
            for start in range(0, len(texts), step):
                values = model.rewards(texts[start:start + step], max_length=self.max_length).float().cpu().tolist()
                self.forward_passes += 1
                for i, row in zip(rows[start:start + step], values):
                    out[i] = row
        self._memo = (key, (out, reasons))
        return out, reasons


def _key(value: Any) -> Any:
    return value if isinstance(value, str | type(None)) else repr(value)


class ER2ScoreReward(RadmetricsReward):
    """The ER²Score of each completion (or one criterion's reward) as a TRL reward; higher is better: a model
    saved as lower-is-better (RadCliQ in the paper's convention, `radmetrics train er2score`'s default) is negated.

    model: a folder written by `radmetrics train er2score` (or `MultiRewardModel.save`), its Hub id, or a loaded
    `MultiRewardModel`. batch_size None scores the whole completion batch in one forward pass; a number splits
    it. Inputs longer than max_length tokens are unscored (None, with the reason), never truncated.
    """

    def __init__(self, model: Any, *, reference_column: str = "reference", criterion: str | None = None,
                 on_unscored: Any = "none", scale: Any = None, name: str | None = None,
                 base_model: str | None = None, device: str = "auto", dtype: str = "auto",
                 batch_size: int | None = None, max_length: int = 1024, _shared: _SharedModel | None = None):
        super().__init__(name or ("er2score" if criterion is None else f"er2score_{criterion}"),
                         reference_column, on_unscored, scale)
        self.criterion = criterion
        self.shared = _shared or _SharedModel(model, base_model, device, dtype, batch_size, max_length)

    @property
    def criteria(self) -> list[str]:
        return self.shared.criteria

    @property
    def higher_is_better(self) -> bool:  # type: ignore[override]
        """The trained model's direction, saved with it: False for RadCliQ in the paper's convention (the rewards
        predict error counts), so its rewards are negated like any lower-is-better metric's."""
        return bool(getattr(self.shared.load(), "higher_is_better", True))

    @property
    def forward_passes(self) -> int:
        return self.shared.forward_passes

    def criteria_functions(self) -> list[ER2ScoreReward]:
        """One reward function per criterion, sharing this one's model and forward pass. Passed together to
        GRPOTrainer they sum to the ER²Score; add `self` with reward weight 0 to log the total as well."""
        return [ER2ScoreReward(None, reference_column=self.reference_column, criterion=c,
                               on_unscored=self.fallback if self.fallback is not None else "none",
                               scale=self.scale, _shared=self.shared) for c in self.criteria]

    def _score(self, references: list[Any], candidates: list[Any]) -> tuple[list[float | None], list[str | None]]:
        before = self.shared.forward_passes
        values, reasons = self.shared.rewards(references, candidates)
        self._computed = self.shared.forward_passes > before or not values
        if self.criterion is None:
            return [None if v is None else float(sum(v)) for v in values], reasons
        if self.criterion not in self.criteria:
            raise RadmetricsError(f"ER2Score model has no criterion {self.criterion!r}: {', '.join(self.criteria)}")
        index = self.criteria.index(self.criterion)
        return [None if v is None else float(v[index]) for v in values], reasons

    def score(self, references: Sequence[Any], candidates: Sequence[Any]) -> list[dict[str, Any]]:
        """Metric view: per pair {"er2score", "rewards": {criterion: value}, "higher_is_better"} or {"er2score":
        None, "reason": ...}; the model's own numbers, in its direction (the reward functions return them negated
        when higher_is_better is False)."""
        values, reasons = self.shared.rewards(list(references), list(candidates))
        higher = self.higher_is_better
        return [{"er2score": None, "rewards": None, "reason": r, "higher_is_better": higher} if v is None else
                {"er2score": float(sum(v)), "rewards": dict(zip(self.criteria, v)), "reason": None,
                 "higher_is_better": higher}
                for v, r in zip(values, reasons)]

    def as_reward_model(self):
        """A torch module over token ids of `reward_input(reference, candidate)` texts (tokenized with
        `.tokenizer`, right padding) whose output `.logits` is [ER²Score, reward per criterion...] per row, higher
        is better (negated for a lower-is-better model, as the reward functions are): for trainers and best-of-n
        loops that take a sequence-scoring reward model."""
        return _module_class()(self.shared.load(), 1.0 if self.higher_is_better else -1.0)

    @property
    def tokenizer(self):
        return self.shared.load().tokenizer


_MODULE_CLASS = None


def _module_class():
    global _MODULE_CLASS
    if _MODULE_CLASS is None:
        import torch
        from transformers.modeling_outputs import SequenceClassifierOutput

        class ER2ScoreRewardModel(torch.nn.Module):
            def __init__(self, reward_model, sign: float = 1.0):
                super().__init__()
                self.backbone, self.head = reward_model.backbone, reward_model.head
                self.sign = sign  # -1 for a lower-is-better model: logits are rewards, higher is better
                self.criteria = list(reward_model.criteria)
                self.config = reward_model.backbone.config

            def forward(self, input_ids, attention_mask, **_: Any) -> SequenceClassifierOutput:
                hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
                last = attention_mask.sum(dim=1) - 1  # right padding: the last real token (as in training)
                features = hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
                per_criterion = self.sign * self.head(features.to(self.head.weight.dtype))
                return SequenceClassifierOutput(logits=torch.cat([per_criterion.sum(-1, keepdim=True),
                                                                  per_criterion], dim=-1))

        _MODULE_CLASS = ER2ScoreRewardModel
    return _MODULE_CLASS


def er2score_reward(model: Any, *, reference_column: str = "reference", criterion: str | None = None,
                    on_unscored: Any = "none", scale: Any = None, name: str | None = None,
                    **model_options: Any) -> ER2ScoreReward:
    """ER²Score (or one criterion) as a TRL reward function from a trained ER²Score folder or Hub id.
    model_options: base_model, device, dtype, batch_size, max_length (see `ER2ScoreReward`)."""
    return ER2ScoreReward(model, reference_column=reference_column, criterion=criterion, on_unscored=on_unscored,
                          scale=scale, name=name, **model_options)
