"""Fine-tuning a judge with LoRA (peft + trl's SFTTrainer): QLoRA 4-bit on a GPU with bitsandbytes,
plain LoRA on CPU.

Recipes:
- "vert" (VERT Sec. 4.1.4): user turn = the first two lines of the VERT prompt + reference + candidate;
  assistant turn = the expert score normalized to [0, 1] with one decimal. The chat template is applied so
  the model serves as is in vLLM and lm-eval (`--apply_chat_template`); score it with the `vert_ft` system.
- "green": the GREEN prompt in GREEN's chat format -> a GREEN-format analysis written by a teacher judge
  (any radmetrics backend); only analyses the GREEN parser can read are kept. The result is a GREEN model:
  its tokenizer carries GREEN's chat template, so radmetrics renders prompts for it in GREEN's format.
Training only learns the answer (completion-only loss). Outputs: the LoRA adapter, optionally the merged
model, `training.json` (settings, data, losses) and `loss_curve.png`.
"""
from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from radmetrics.errors import InputError
from radmetrics.types import is_finite_number, is_whole_number
from radmetrics.vert.prompt import vert_user_turn


@dataclass
class JudgeSFTConfig:
    base_model: str
    output_dir: str
    recipe: str = "vert"  # "vert" | "green"
    epochs: float = 1.0
    max_steps: int = -1
    learning_rate: float = 2e-4  # VERT Sec. 4.1.4 peak LR
    lora_r: int = 32  # VERT: rank 32, alpha 64
    lora_alpha: int = 64
    target_modules: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    batch_size: int = 4
    validation_fraction: float = 0.1  # VERT: 90% / 10%
    seed: int = 42
    max_length: int = 2048
    merge: bool = True
    quantize_4bit: str = "auto"  # "auto": QLoRA when a GPU and bitsandbytes are present
    save_steps: int = 50  # a checkpoint (adapter + optimizer) every N steps: an interrupted run resumes from it

    def __post_init__(self) -> None:
        if isinstance(self.base_model, str):  # peft records the base as given; here, so that resuming keys on it too
            from radmetrics.judge.preflight import full_local_path

            self.base_model = full_local_path(self.base_model)
        # a --config YAML or Python value out of range reached the trainer: max_steps 0 trained by epochs instead
        # (transformers reads max_steps <= 0 as "not set"), learning_rate .nan trained a model of nan weights,
        # validation_fraction 1 held back every row; now one line naming the setting, before any model loads
        def refuse(name: str, what: str) -> InputError:
            return InputError(f"training setting {name} must be {what}, not {getattr(self, name)!r}")

        for name in ("lora_r", "lora_alpha", "batch_size", "max_length", "save_steps"):
            value = getattr(self, name)
            if not is_whole_number(value) or value < 1:
                raise refuse(name, "a whole number of at least 1")
        if not is_whole_number(self.max_steps) or not (
                self.max_steps == -1 or self.max_steps >= 1):
            raise refuse("max_steps", "a whole number of at least 1 (or -1: train by epochs)")
        for name in ("epochs", "learning_rate"):
            value = getattr(self, name)
            if not is_finite_number(value) or value <= 0:
                raise refuse(name, "a finite number above 0")
        fraction = self.validation_fraction
        if not is_finite_number(fraction) or not 0 <= fraction < 1:
            raise refuse("validation_fraction", "a number from 0 up to (not including) 1")

    @classmethod
    def from_yaml(cls, path: str | Path, **overrides: Any) -> JudgeSFTConfig:
        from dataclasses import fields

        import yaml

        values = yaml.safe_load(Path(path).read_text()) or {}
        if not isinstance(values, dict):
            raise InputError(f"--config {path}: not a mapping of settings (name: value lines)")
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(values) - set(known), key=str)
        if unknown:  # a misspelt setting was a TypeError traceback (review 27)
            from radmetrics.errors import UnknownNameError

            raise UnknownNameError(f"--config {path} setting", str(unknown[0]), known)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


def _missing(value: Any) -> bool:
    """No value: None, NaN (a Parquet or pandas gap) or an empty CSV cell."""
    return value is None or (isinstance(value, float) and value != value) or (isinstance(value, str)
                                                                           and not value.strip())


def _expert_score(value: Any, row: int) -> float | None:
    """A row's expert score as a number; text too (a CSV file's values are all text); None when there is none."""
    if _missing(value):
        return None
    try:
        number = None if isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        number = None
    if number is None:
        raise InputError(f"row {row}: expert_score {value!r} is not a number (the vert recipe learns expert scores "
                         "in [0, 1])")
    return None if number != number else number  # "nan": an unreadable annotation, as a NaN


def vert_examples(references: Sequence[str], candidates: Sequence[str], scores: Sequence[Any],
                  higher_is_better: Sequence[Any] | None = None) -> tuple[list[dict], list[str]]:
    """Conversational prompt/completion rows and the rows left out (no expert score), each with why. Scores must
    be accuracy scores already in [0, 1], higher is better: VERT's answer. Error counts (a dataset's
    ``expert_higher_is_better`` false: RadEval, ReXVal, ReFiSco) would teach the judge the inverted scale, so they
    are refused, not trained on (review 19). Both columns are read from text too, the direction as the converters
    read a yes/no flag: a CSV's "False" or "0", or a JSON 0, is lower-is-better (review 20)."""
    from radmetrics.data.schema import read_yes_no

    directions = [] if higher_is_better is None else higher_is_better
    if any(not _missing(h) and not read_yes_no(h, f"row {i + 1}", "expert_higher_is_better")
           for i, h in enumerate(directions)):
        raise InputError("the vert recipe learns VERT's accuracy score (higher is better, in [0, 1]); this data's "
                         "expert_score is lower-is-better (expert_higher_is_better false: error counts, as in "
                         "RadEval, ReXVal, ReFiSco): a judge trained on it would answer the inverted scale. Use "
                         "accuracy scores (e.g. rate_eval), or --recipe green with a teacher")
    rows, dropped = [], []
    for i, (r, c, value) in enumerate(zip(references, candidates, scores)):
        s = _expert_score(value, i + 1)
        if s is None:  # an unreadable annotation or an empty cell: left out, said
            dropped.append(f"row {i + 1}: no expert score")
            continue
        if not 0 <= s <= 1:
            raise InputError(f"row {i + 1}: VERT recipe needs scores in [0, 1]; got {value!r} (normalize, e.g. "
                             "RaTE-Eval /5)")
        rows.append({"prompt": [{"role": "user", "content": vert_user_turn(r, c)}],
                     "completion": [{"role": "assistant", "content": f"{s:.1f}"}]})
    return rows, dropped


def green_examples(references: Sequence[str], candidates: Sequence[str], teacher, eos_token: str = "</s>",
                   config=None) -> tuple[list[dict], list[str]]:
    """Plain-text rows in GREEN's chat format; the teacher's unreadable analyses are dropped and reported."""
    from radmetrics.green.system import GreenSystem
    from radmetrics.judge.chat_formats import render_text

    from radmetrics.runner import row_problem
    from radmetrics.types import answer_problem

    system = GreenSystem()
    rows, dropped, keep = [], [], []
    for i, (r, c) in enumerate(zip(references, candidates)):
        problem = row_problem(r, "reference") or row_problem(c, "candidate")
        if problem:
            dropped.append(f"row {i + 1}: {problem}")
        else:
            keep.append(i)
    prompts = [system.build_prompt(references[i], candidates[i]) for i in keep]
    answers = teacher.generate(prompts, config, progress=False)
    for i, prompt, answer in zip(keep, prompts, answers):
        why = answer_problem(answer)  # a cut answer would teach the judge to stop mid-way
        if why:
            dropped.append(f"row {i + 1}: {why}")
            continue
        judgment = system.parse(answer)
        if not judgment.parsed:
            dropped.append(f"row {i + 1}: {judgment.reason}")
            continue
        rows.append({"prompt": render_text(prompt, "green", eos_token), "completion": answer.strip() + eos_token})
    return rows, dropped


# A plain template for bases without one (role/content messages), saved with the judge.
DEFAULT_CHAT_TEMPLATE = ("{% for message in messages %}{{ '<|' + message['role'] + '|>\n' + message['content'] + "
                         "eos_token + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}")


#: beside the checkpoints of a run: what it trains (settings and examples), so that only the same run resumes
RUN_FILE = "radmetrics_run.json"


def run_key(config: JudgeSFTConfig, rows: list[dict]) -> str:
    """The settings (not where they are written) and the examples of a training run."""
    import hashlib

    settings = {k: v for k, v in asdict(config).items() if k != "output_dir"}
    return hashlib.sha256(json.dumps([settings, rows], sort_keys=True).encode()).hexdigest()


def resumable_checkpoint(output_dir: str | Path, key: str) -> Path | None:
    """The last complete checkpoint an interrupted run of the same settings and examples left in OUTPUT/checkpoints
    (review 27, M1: a killed training kept nothing and its rerun was refused). A checkpoint is complete when
    trainer_state.json, written last, is there; one cut by kill -9 while being saved is passed over."""
    folder = Path(output_dir) / "checkpoints"
    try:
        same_run = json.loads((folder / RUN_FILE).read_text()).get("key") == key
    except (OSError, ValueError, AttributeError):
        return None
    done = [p for p in folder.glob("checkpoint-*") if (p / "trainer_state.json").is_file()
            and p.name.split("-")[-1].isdigit()]
    return max(done, key=lambda p: int(p.name.split("-")[-1])) if same_run and done else None


def train_judge(config: JudgeSFTConfig, rows: list[dict]) -> dict[str, Any]:
    """Train; resumes from the last checkpoint an interrupted run of the same settings and examples left in
    OUTPUT/checkpoints (starts over otherwise), and removes the checkpoints once the judge is saved."""
    import shutil

    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    if len(rows) < 2:
        raise InputError(f"need at least 2 training examples, got {len(rows)}")
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    key = run_key(config, rows)
    resume = resumable_checkpoint(out, key)
    if resume is None:  # another run's checkpoints (the CLI refuses them without --overwrite) or none
        shutil.rmtree(out / "checkpoints", ignore_errors=True)
    (out / "checkpoints").mkdir(exist_ok=True)
    (out / "checkpoints" / RUN_FILE).write_text(json.dumps({"key": key}))
    rng = random.Random(config.seed)
    rows = rows[:]
    rng.shuffle(rows)
    n_val = max(1, round(len(rows) * config.validation_fraction)) if config.validation_fraction > 0 else 0
    train_rows, val_rows = rows[n_val:], rows[:n_val]

    tokenizer = AutoTokenizer.from_pretrained(config.base_model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if config.recipe == "vert" and not getattr(tokenizer, "chat_template", None):
        tokenizer.chat_template = DEFAULT_CHAT_TEMPLATE
    if config.recipe == "green":
        from radmetrics.judge.chat_formats import GREEN_CHAT_TEMPLATE

        # saved with the judge: radmetrics (chat_template auto), vLLM and lm-eval then render every prompt in the
        # format it was trained on, whatever the folder is called (upstream GREEN sets this template at load)
        tokenizer.chat_template = GREEN_CHAT_TEMPLATE
    gpu = torch.cuda.is_available()
    model_kwargs: dict[str, Any] = {"dtype": torch.bfloat16 if gpu else torch.float32}
    quantized = False
    if config.quantize_4bit in ("auto", True, "true") and gpu:
        try:
            from transformers import BitsAndBytesConfig

            import bitsandbytes  # noqa: F401

            model_kwargs["quantization_config"] = BitsAndBytesConfig(
                load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16)
            quantized = True
        except ImportError:
            pass
    model = AutoModelForCausalLM.from_pretrained(config.base_model, **model_kwargs)
    lora = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=0.05,
                      target_modules=config.target_modules, task_type="CAUSAL_LM")
    args = SFTConfig(
        output_dir=str(out / "checkpoints"), num_train_epochs=config.epochs, max_steps=config.max_steps,
        learning_rate=config.learning_rate, lr_scheduler_type="cosine", per_device_train_batch_size=config.batch_size,
        per_device_eval_batch_size=config.batch_size, logging_steps=1, eval_strategy="epoch" if val_rows else "no",
        save_strategy="steps", save_steps=config.save_steps, save_total_limit=1, report_to=[], seed=config.seed,
        max_length=config.max_length, completion_only_loss=True,
        use_cpu=not gpu, bf16=gpu, disable_tqdm=True,
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(train_rows),
                         eval_dataset=Dataset.from_list(val_rows) if val_rows else None,
                         processing_class=tokenizer, peft_config=lora)
    trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    history = trainer.state.log_history  # restored from the checkpoint: a resumed run's curve is whole
    losses = [h["loss"] for h in history if "loss" in h]
    eval_losses = [h["eval_loss"] for h in history if "eval_loss" in h]
    adapter_dir = out / "adapter"
    trainer.model.save_pretrained(adapter_dir)
    tokenizer.save_pretrained(adapter_dir)
    merged_dir = None
    if config.merge and not quantized:
        merged = trainer.model.merge_and_unload()
        merged_dir = out / "merged"
        merged.save_pretrained(merged_dir)
        tokenizer.save_pretrained(merged_dir)
    _loss_curve(losses, eval_losses, out / "loss_curve.png")
    summary = {"config": asdict(config), "train_examples": len(train_rows), "validation_examples": len(val_rows),
               "losses": losses, "eval_losses": eval_losses, "quantized_4bit": quantized,
               "adapter": str(adapter_dir), "merged": str(merged_dir) if merged_dir else None}
    if resume:
        summary["resumed_from_step"] = int(resume.name.split("-")[-1])
    (out / "training.json").write_text(json.dumps(summary, indent=2))
    shutil.rmtree(out / "checkpoints", ignore_errors=True)  # the judge is saved: they are no longer needed
    return summary


def _loss_curve(losses: list[float], eval_losses: list[float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(range(1, len(losses) + 1), losses, label="train")
    if eval_losses:
        step = max(1, math.ceil(len(losses) / len(eval_losses)))
        ax.plot([step * (i + 1) for i in range(len(eval_losses))], eval_losses, "o-", label="validation")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
