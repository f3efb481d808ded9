from spans.intervals import merge


def test_touching_intervals_merge():
    assert merge([(1, 2), (2, 3)]) == [(1, 3)]


def test_unsorted_input():
    assert merge([(8, 10), (1, 3), (2, 6)]) == [(1, 6), (8, 10)]
