"""ER²Score's reward model: a causal-LM backbone (LoRA) with a linear multi-reward head of N outputs
(ER²Score Sec. 2.2): the reward of each criterion is read at the last token; the ER²Score is their sum."""
from __future__ import annotations

import json
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from radmetrics.er2score.pairs import reward_input
from radmetrics.errors import RadmetricsError

HEAD_FILE = "reward_head.pt"
CONFIG_FILE = "er2score_config.json"


def _torch():
    import torch

    return torch


class MultiRewardModel:
    """Backbone (transformers AutoModel, optionally a peft LoRA model) + Linear(hidden, N)."""

    def __init__(self, backbone, tokenizer, criteria: Sequence[str], base_model: str, head=None,
                 higher_is_better: bool = True):
        torch = _torch()
        self.backbone, self.tokenizer, self.criteria, self.base_model = backbone, tokenizer, list(criteria), base_model
        #: False for RadCliQ in the paper's convention: the rewards predict error counts
        self.higher_is_better = higher_is_better
        hidden = backbone.config.hidden_size
        self.head = head if head is not None else torch.nn.Linear(hidden, len(self.criteria))
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "right"

    @classmethod
    def new(cls, base_model: str, criteria: Sequence[str], lora_r: int = 8, lora_alpha: int = 16,
            target_modules: Sequence[str] | None = None, **load_kwargs: Any) -> MultiRewardModel:
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModel, AutoTokenizer

        from radmetrics.judge.preflight import full_local_path

        base_model = full_local_path(base_model)  # saved so: loadable from any folder (review 45)
        tokenizer = AutoTokenizer.from_pretrained(base_model, **load_kwargs)
        backbone = AutoModel.from_pretrained(base_model, **load_kwargs)
        config = LoraConfig(r=lora_r, lora_alpha=lora_alpha, lora_dropout=0.0,
                            target_modules=list(target_modules or ["q_proj", "v_proj"]))
        return cls(get_peft_model(backbone, config), tokenizer, criteria, base_model)

    def parameters(self):
        return [p for p in self.backbone.parameters() if p.requires_grad] + list(self.head.parameters())

    def rewards(self, texts: Sequence[str], max_length: int = 1024):
        torch = _torch()
        batch = self.tokenizer(list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        device = next(self.head.parameters()).device
        batch = {k: v.to(device) for k, v in batch.items()}
        hidden = self.backbone(**batch).last_hidden_state
        last = batch["attention_mask"].sum(dim=1) - 1  # right padding: the last real token
        features = hidden[torch.arange(hidden.shape[0], device=device), last]
        return self.head(features.to(self.head.weight.dtype))

    def score(self, references: Sequence[str], candidates: Sequence[str], batch_size: int = 8) -> list[dict[str, Any]]:
        torch = _torch()
        out = []
        self.backbone.eval()
        with torch.inference_mode():
            for start in range(0, len(references), batch_size):
                texts = [reward_input(r, c) for r, c in zip(references[start:start + batch_size],
                                                            candidates[start:start + batch_size])]
                for row in self.rewards(texts).float().cpu().tolist():
                    out.append({"rewards": dict(zip(self.criteria, row)), "er2score": float(sum(row))})
        return out

    def save(self, folder: str | Path) -> Path:
        torch = _torch()
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.backbone.save_pretrained(folder)  # the LoRA adapter (or the full backbone)
        self.tokenizer.save_pretrained(folder)
        torch.save(self.head.state_dict(), folder / HEAD_FILE)
        (folder / CONFIG_FILE).write_text(json.dumps({"criteria": self.criteria, "base_model": self.base_model,
                                                      "higher_is_better": self.higher_is_better}, indent=2))
        return folder

    @classmethod
    def load(cls, folder: str | Path, base_model: str | None = None, **load_kwargs: Any) -> MultiRewardModel:
        """From a folder (or Hub repo) written by `save`; `base_model` overrides the recorded base."""
        from huggingface_hub import snapshot_download
        from peft import PeftModel
        from transformers import AutoModel, AutoTokenizer

        torch = _torch()
        local = Path(folder).expanduser()
        if not local.exists():  # a missing folder in one line, not the Hub client's repo-id error
            from radmetrics.judge.preflight import check_hub_model

            check_hub_model(str(folder), what="ER²Score model", flag="model= (evaluate.load, er2score_reward) or --judge")
        folder = local if local.exists() else Path(snapshot_download(str(folder)))
        if not (folder / CONFIG_FILE).is_file():  # review 27: a bare FileNotFoundError
            raise RadmetricsError(f"'{folder}' is not an ER²Score model (no {CONFIG_FILE}): give the folder or Hub "
                                  "repo `radmetrics train er2score` wrote")
        config = json.loads((folder / CONFIG_FILE).read_text())
        base = base_model or config["base_model"]
        # weights_only: a downloaded head file is data, never code to run (a pickle may carry any callable).
        # Read first, so a refused file fails before the backbone is loaded.
        try:
            state = torch.load(folder / HEAD_FILE, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError as e:
            raise RadmetricsError(f"{folder / HEAD_FILE} is not plain tensors: refused to unpickle it "
                                  f"({str(e).splitlines()[0][:160]})") from None
        backbone = AutoModel.from_pretrained(base, **load_kwargs)
        if (folder / "adapter_config.json").exists():
            backbone = PeftModel.from_pretrained(backbone, str(folder))
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
        head = torch.nn.Linear(backbone.config.hidden_size, len(config["criteria"]))
        head.load_state_dict(state)
        return cls(backbone, tokenizer, config["criteria"], base, head, config.get("higher_is_better", True))
