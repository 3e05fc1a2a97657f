"""Meta-evaluation: how well a metric agrees with experts (statistics, reports, ReXamine-Global)."""
