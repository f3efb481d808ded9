VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def to_int(numeral: str) -> int:
    """The value of a Roman numeral such as "XIV" (14) or "MCMXCIV" (1994)."""
    return sum(VALUES[ch] for ch in numeral)
