"""A tiny policy for RL tests: an untrained tiny Llama (tests/tiny_judge.build_tiny_base) with a minimal chat
template, so that TRL can sample plain-text and conversational completions from it offline in seconds."""
from __future__ import annotations

from pathlib import Path

CHAT_TEMPLATE = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}assistant:{% endif %}")

PROMPTS = [  # (findings the policy is asked to report, the reference report)
    ("Findings: heart size normal, lungs clear.", "Heart size is normal. Lungs are clear."),
    ("Findings: small left pleural effusion.", "Small left pleural effusion. No pneumothorax."),
    ("Findings: cardiomegaly, mild edema.", "Cardiomegaly with mild pulmonary edema."),
]


def build_tiny_policy(out_dir: Path, seed: int = 1) -> Path:
    from transformers import AutoTokenizer
    from tiny_judge import build_tiny_base

    folder = build_tiny_base(Path(out_dir), seed=seed)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(folder)
    return folder


def report_dataset(conversational: bool = False, empty_reference: bool = True):
    """Prompts with a `reference` column; one row with an empty reference, whose completions are unscored."""
    from datasets import Dataset

    rows = [(p, r) for p, r in PROMPTS] + ([("Findings: none given.", "")] if empty_reference else [])
    return Dataset.from_list([{"prompt": [{"role": "user", "content": p}] if conversational else p + "\nReport:",
                               "reference": r} for p, r in rows])


def train_grpo(policy: Path, reward_funcs: list, dataset, out_dir: Path, steps: int = 2, weights=None,
               batch: int = 8, generations: int = 4):
    """GRPOTrainer on CPU for a few steps; returns the trainer (log_history, _logs) after training."""
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(output_dir=str(out_dir), per_device_train_batch_size=batch, num_generations=generations,
                      max_completion_length=12, max_steps=steps, logging_steps=1, report_to="none",
                      save_strategy="no", use_cpu=True, bf16=False, disable_tqdm=True, seed=0,
                      reward_weights=weights)
    trainer = GRPOTrainer(model=str(policy), reward_funcs=reward_funcs, args=args, train_dataset=dataset)
    trainer.train()
    return trainer
