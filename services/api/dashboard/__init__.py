"""The web dashboard served by the API at `/` (see docs/dashboard.md)."""
