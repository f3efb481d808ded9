from versions.semver import compare


def test_equal():
    assert compare("1.2.3", "1.2.3") == 0


def test_major():
    assert compare("2.0.0", "1.9.9") == 1


def test_patch():
    assert compare("1.2.3", "1.2.4") == -1
