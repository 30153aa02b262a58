"""Summaries of measured values that the benchmark scripts share."""


def percentile(values, fraction):
    """The value at `fraction` (0 to 1) of `values` sorted, the rank rounded down (NaN for none)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else float("nan")
