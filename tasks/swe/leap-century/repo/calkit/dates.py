DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def is_leap(year: int) -> bool:
    """Whether `year` is a leap year in the Gregorian calendar."""
    return year % 4 == 0


def days_in_month(month: int, year: int) -> int:
    """Days in `month` (1-12) of `year`."""
    return 29 if month == 2 and is_leap(year) else DAYS[month - 1]
