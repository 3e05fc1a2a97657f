"""radmetrics metrics as rewards for reinforcement learning of report generators (TRL's GRPOTrainer and any
trainer that calls `reward(prompts=..., completions=..., **dataset_columns)`).

    from radmetrics.rewards import combined_reward, er2score_reward, reward_function
    green = reward_function("green", judge="StanfordAIMI/GREEN-RadLlama2-7b")       # judge-based, cached
    er2 = er2score_reward("my-lab/er2score")                                          # one forward pass
    trainer = GRPOTrainer(model=..., reward_funcs=[combined_reward(green, er2)], train_dataset=ds)  # "reference"

Importing this package imports no torch; models load on the first reward call.
"""
from radmetrics.rewards.base import CombinedReward, RadmetricsReward, RewardBatch, combined_reward
from radmetrics.rewards.completions import completion_text
from radmetrics.rewards.er2score_reward import ER2ScoreReward, er2score_reward
from radmetrics.rewards.judge_reward import JudgeReward, reward_function
from radmetrics.rewards.layouts import memory_capped_options

__all__ = ["CombinedReward", "ER2ScoreReward", "JudgeReward", "RadmetricsReward", "RewardBatch", "combined_reward",
           "completion_text", "er2score_reward", "memory_capped_options", "reward_function"]
