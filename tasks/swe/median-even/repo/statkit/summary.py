def mean(xs):
    """Arithmetic mean of a non-empty sequence."""
    return sum(xs) / len(xs)


def median(xs):
    """Median of a non-empty sequence (the mean of the two middle values when the length is even)."""
    ordered = sorted(xs)
    return ordered[len(ordered) // 2]
