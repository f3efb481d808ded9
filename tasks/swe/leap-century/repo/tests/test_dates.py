from calkit.dates import days_in_month, is_leap


def test_common_leap_year():
    assert is_leap(2024)


def test_common_year():
    assert not is_leap(2023)


def test_month_lengths():
    assert [days_in_month(m, 2023) for m in (1, 2, 4)] == [31, 28, 30]
