"""calkit: a small library."""
