from tabular.csvline import split_line


def test_plain_fields():
    assert split_line("a,b,c") == ["a", "b", "c"]


def test_empty_fields():
    assert split_line("a,,c") == ["a", "", "c"]
