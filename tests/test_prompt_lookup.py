"""Prompt-lookup drafts (radmetrics.judge.prompt_lookup): what a row's tokens so far propose as its next tokens,
and the policy that uses drafted decode steps only where they were measured faster."""
from __future__ import annotations

from radmetrics.judge.prompt_lookup import AnswerLookup, DraftPolicy, PromptLookup


def test_the_latest_earlier_occurrence_of_the_last_tokens_proposes_what_followed_it():
    lookup = PromptLookup([1, 2, 3, 9, 1, 2, 3, 7, 8, 5, 1, 2, 3])
    assert lookup.draft(2) == [7, 8]  # 1 2 3 occurred twice before; the latest was followed by 7 8
    assert lookup.draft(10) == [7, 8, 5, 1, 2, 3]  # up to the end of what is known


def test_shorter_ngrams_are_tried_when_the_longest_never_occurred():
    lookup = PromptLookup([4, 5, 6, 7, 8, 6])
    assert lookup.draft(3) == [7, 8, 6]  # "6" alone; no earlier "8 6" or "7 8 6"
    assert PromptLookup([1, 2, 3]).draft(4) == []  # the last token never occurred before
    assert PromptLookup([]).draft(4) == [] and PromptLookup([5]).draft(4) == []


def test_extending_a_row_and_starting_from_a_shared_prefix():
    shared = PromptLookup([10, 11, 12, 13])
    row = PromptLookup.after(shared, [20, 10, 11])
    assert row.tokens == [10, 11, 12, 13, 20, 10, 11]
    assert row.draft(2) == [12, 13]  # found in the shared prefix's copied index
    row.extend([12, 30])
    assert row.draft(2) == []  # 30 is new
    row.extend([10, 11, 12])
    assert row.draft(2) == [30, 10]  # the latest "10 11 12" (the row's own) wins over the prefix's
    assert shared.tokens == [10, 11, 12, 13] and shared.draft(2) == []  # the shared index is not changed
    # one index, built incrementally, equals one built at once
    assert PromptLookup(row.tokens).index == row.index


def test_other_rows_answers_draft_when_they_match_longer_than_the_rows_own_tokens():
    answers = AnswerLookup(max_ngram=4)
    answers.add([50, 51, 52, 53, 60, 61, 62])
    answers.add([7])  # one token continues nothing: not kept
    row = PromptLookup([52, 53, 99, 8, 51, 52, 53])
    assert row.draft(3) == [99, 8, 51]  # its own tokens: "52 53" (2 tokens) occurred before ...
    assert row.draft(3, answers) == [60, 61, 62]  # ... loses to the answers' "51 52 53" (3 tokens)
    tie = PromptLookup([51, 52, 53, 70, 71, 51, 52, 53])
    assert tie.draft(2, answers) == [70, 71]  # equally long: the row's own continuation wins
    assert PromptLookup([1, 2, 50]).draft(2, answers) == [51, 52]  # nothing of its own: the answers' alone
    assert PromptLookup([1, 2, 3]).draft(2, answers) == []
    # indexed when first asked, and the latest answer with the n-gram wins
    answers.add([9, 50, 51, 52, 53, 80])
    assert answers.answers[-1] == [9, 50, 51, 52, 53, 80] and answers._indexed == 1
    assert row.draft(3, answers) == [80]
    assert answers._indexed == 2


def test_answers_kept_for_drafts_are_bounded_however_many_rows_a_call_judges():
    answers = AnswerLookup(max_tokens=10)
    answers.add([1, 2, 3, 4, 5, 6])
    answers.add([7, 8, 9, 10, 11])  # 11 tokens in all: over the bound, not kept
    answers.add([12, 13, 14, 15])
    assert answers.answers == [[1, 2, 3, 4, 5, 6], [12, 13, 14, 15]] and answers.kept_tokens == 10
    assert answers.draft([0, 8], 2) == [] and answers.draft([0, 13], 2) == [14, 15]


def test_policy_keeps_the_faster_kind_of_step_per_batch_size_and_re_measures_the_other():
    policy = DraftPolicy(trial_steps=2, explore_every=5)

    def run(rows, drafted_rate, plain_rate, steps):
        kinds = []
        for _ in range(steps):
            drafted = policy.use_drafts(rows)
            kinds.append(drafted)
            policy.record(rows, drafted, 1.0, drafted_rate if drafted else plain_rate)
        return kinds

    # 6 rows: drafts pay (two trial steps each way, then drafts)
    assert run(6, 20, 10, 8) == [True, True, False, False, True, True, True, True]
    # 96 rows, measured separately: drafts cost more than they save
    assert run(96, 5, 10, 6) == [True, True, False, False, False, False]
    # 6 rows again: after explore_every steps of drafts, plain steps are re-measured (now faster: plain wins)
    kinds = run(6, 20, 30, 6)
    assert kinds[:2] == [True, False] and kinds[-1] is False
    assert policy.steps[True] + policy.steps[False] == 20
    assert policy.tokens[True] == sum(20 for k in kinds if k) + 20 * 6 + 5 * 2


def test_a_negative_draft_count_is_a_clear_option_error():
    import pytest

    import radmetrics
    from radmetrics.judge.base import JudgeOptionError

    with pytest.raises(JudgeOptionError, match="'draft_tokens' .* must be at least 0, not -1"):
        radmetrics.get_judge("transformers", model="any/model", draft_tokens=-1, cache=False)
