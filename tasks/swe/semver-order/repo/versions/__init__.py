"""versions: a small library."""
