from numerals.roman import to_int


def test_four_and_nine():
    assert (to_int("IV"), to_int("IX")) == (4, 9)


def test_year():
    assert to_int("MCMXCIV") == 1994
