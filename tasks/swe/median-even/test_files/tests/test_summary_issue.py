from statkit.summary import median


def test_median_even_sorted():
    assert median([1, 2, 3, 4]) == 2.5


def test_median_even_unsorted():
    assert median([10, 1, 4, 3]) == 3.5
