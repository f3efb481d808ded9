from textkit.slug import slugify


def test_punctuation_runs_collapse():
    assert slugify("Hello,  World") == "hello-world"


def test_no_leading_or_trailing_dashes():
    assert slugify("  Hello, World!  ") == "hello-world"
