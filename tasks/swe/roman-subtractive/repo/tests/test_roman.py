from numerals.roman import to_int


def test_additive():
    assert to_int("III") == 3


def test_larger_additive():
    assert to_int("LVIII") == 58
