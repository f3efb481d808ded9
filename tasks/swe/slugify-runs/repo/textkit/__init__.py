"""textkit: a small library."""
