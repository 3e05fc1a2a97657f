"""The statistics options the report commands share (compare, meta-eval, preference-eval, rexamine): a value
numpy or scipy would refuse after the metrics ran is a usage error before any work."""
from __future__ import annotations

import math

import click

#: numpy's generators take non-negative seeds only
SEED = click.IntRange(min=0)


class FiniteRange(click.FloatRange):
    """click's FloatRange, finite: every comparison with nan is false, so FloatRange passed it (--alpha nan was a
    ValueError traceback, --confidence nan printed every interval as n/a, --temperature nan reached the sampler),
    and an open end passed inf."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value} is not a finite number ({self._describe_range()})", param, ctx)
        return number


#: a significance level: strictly between 0 and 1
ALPHA = FiniteRange(0, 1, min_open=True, max_open=True)


class Confidence(FiniteRange):
    """An interval's level, strictly between 0 and 1; a percentage (95) is named as one."""

    def __init__(self) -> None:
        super().__init__(0, 1, min_open=True, max_open=True)

    def convert(self, value, param, ctx):
        number = click.FLOAT.convert(value, param, ctx)
        if 1 < number < 100:
            self.fail(f"{value} looks like a percentage: give the level as a fraction ({number / 100:g})", param, ctx)
        return super().convert(number, param, ctx)


CONFIDENCE = Confidence()


class Resamples(click.ParamType):
    """0 (no intervals, no randomization tests: "n/a"), or from compare_stats.MIN_RESAMPLES to MAX_RESAMPLES (the
    bounds `compare` checks in Python too; why, there)."""

    name = "integer"

    def convert(self, value, param, ctx):
        from radmetrics.meta.compare_stats import MAX_RESAMPLES, MIN_RESAMPLES  # numpy: only once a command runs

        try:
            number = int(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a whole number", param, ctx)
        if number != 0 and number < MIN_RESAMPLES:
            self.fail(f"{number} resamples give no interval worth the name: 0 for none, or at least {MIN_RESAMPLES} "
                      "(1000 is the default)", param, ctx)
        if number > MAX_RESAMPLES:
            self.fail(f"{number} resamples are more than any interval needs: at most {MAX_RESAMPLES:,} (1000 is the "
                      "default)", param, ctx)
        return number


RESAMPLES = Resamples()
