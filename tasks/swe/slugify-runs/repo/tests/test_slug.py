from textkit.slug import slugify


def test_simple_words():
    assert slugify("hello world") == "hello-world"


def test_lowercases():
    assert slugify("ABC") == "abc"


def test_digits_kept():
    assert slugify("route 66") == "route-66"
