"""tabular: a small library."""
