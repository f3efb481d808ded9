from versions.semver import compare, parse


def test_numeric_minor():
    assert compare("1.10.0", "1.9.0") == 1


def test_numeric_patch():
    assert compare("1.2.10", "1.2.9") == 1


def test_parse_gives_numbers():
    assert parse("1.10.2") == (1, 10, 2)
