"""A tiny policy for RL tests: the tiny Llama of tests/tiny_judge.build_tiny_base with a minimal chat template,
fine-tuned for seconds to write sample reports, so that TRL samples report-like plain-text and conversational
completions from it offline."""
from __future__ import annotations

from pathlib import Path

CHAT_TEMPLATE = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}assistant:{% endif %}")


def policy_pairs() -> list[tuple[str, str, str]]:
    """(prompt, reference, report the policy learns to write) from the bundled sample's GREEN rows: the tiny
    judge was trained on exactly these pairs, so it answers the policy's completions in GREEN's format."""
    from tiny_judge import training_pairs

    pairs = sorted(training_pairs(), key=lambda p: len(p[1].split()))[:3]  # the shortest: quick to learn
    return [(f"Study {i}: write the radiology report.", ref, cand) for i, (ref, cand, _) in enumerate(pairs)]


def build_tiny_policy(out_dir: Path, steps: int = 300, seed: int = 1) -> Path:
    """The tiny base, fine-tuned for a few seconds to write (roughly) the sample candidates for its prompts;
    sampled at temperature 1 it varies them, so rewards vary within a group."""
    import torch
    from tiny_judge import build_tiny_base
    from transformers import AutoTokenizer, LlamaForCausalLM

    folder = build_tiny_base(Path(out_dir), seed=seed)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.chat_template = CHAT_TEMPLATE
    model = LlamaForCausalLM.from_pretrained(folder)
    torch.manual_seed(seed)
    examples = []
    for prompt, _, report in policy_pairs():
        for text in (prompt, tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                                           add_generation_prompt=True)):
            head = tokenizer(text)["input_ids"]
            ids = torch.tensor(head + tokenizer(" " + report, add_special_tokens=False)["input_ids"]
                               + [tokenizer.eos_token_id])
            labels = ids.clone()
            labels[: len(head)] = -100
            examples.append((ids, labels))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for step in range(steps):
        ids, labels = examples[step % len(examples)]
        model(input_ids=ids[None], labels=labels[None]).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def report_dataset(conversational: bool = False, empty_reference: bool = True):
    """Prompts with a `reference` column; one row with an empty reference, whose completions are unscored."""
    from datasets import Dataset

    rows = [(p, r) for p, r, _ in policy_pairs()] + ([("Study 9: write the radiology report.", "")]
                                                         if empty_reference else [])
    return Dataset.from_list([{"prompt": [{"role": "user", "content": p}] if conversational else p,
                               "reference": r} for p, r in rows])


def train_grpo(policy: Path, reward_funcs: list, dataset, out_dir: Path, steps: int = 2, weights=None,
               batch: int = 8, generations: int = 4, max_completion_length: int = 64):
    """GRPOTrainer on CPU for a few steps; returns the trainer (log_history, _logs) after training."""
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(output_dir=str(out_dir), per_device_train_batch_size=batch, num_generations=generations,
                      max_completion_length=max_completion_length, max_steps=steps, logging_steps=1, report_to="none",
                      save_strategy="no", use_cpu=True, bf16=False, disable_tqdm=True, seed=0,
                      reward_weights=weights)
    trainer = GRPOTrainer(model=str(policy), reward_funcs=reward_funcs, args=args, train_dataset=dataset)
    trainer.train()
    return trainer
