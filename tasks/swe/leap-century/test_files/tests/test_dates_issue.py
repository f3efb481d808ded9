from calkit.dates import days_in_month, is_leap


def test_century_not_leap():
    assert not is_leap(1900)
    assert days_in_month(2, 1900) == 28


def test_four_hundred_rule():
    assert is_leap(2000)
    assert not is_leap(2100)
