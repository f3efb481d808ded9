"""spans: a small library."""
