"""statkit: a small library."""
