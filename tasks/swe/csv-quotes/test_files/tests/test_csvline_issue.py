from tabular.csvline import split_line


def test_quoted_comma():
    assert split_line('a,"b,c",d') == ["a", "b,c", "d"]


def test_doubled_quote():
    assert split_line('"say ""hi""",x') == ['say "hi"', "x"]
