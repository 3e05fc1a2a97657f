"""Judge fine-tuning (LoRA/QLoRA with peft + trl); ER²Score training lives in radmetrics/er2score."""
