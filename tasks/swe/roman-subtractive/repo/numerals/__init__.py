"""numerals: a small library."""
