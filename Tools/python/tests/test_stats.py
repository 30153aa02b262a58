import math

from livelist_tools import percentile


def test_percentile_rounds_the_rank_down_and_stays_in_range():
    values = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6]
    assert percentile(values, 0.5) == 6
    assert percentile(values, 0.99) == 10
    assert percentile(values, 0.0) == 1
    assert percentile(values, 1.0) == 10


def test_percentile_of_nothing_is_nan():
    assert math.isnan(percentile([], 0.5))
