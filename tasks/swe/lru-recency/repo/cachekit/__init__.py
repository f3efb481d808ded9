"""cachekit: a small library."""
