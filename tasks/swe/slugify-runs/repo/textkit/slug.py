import re


def slugify(text: str) -> str:
    """Lower-case `text` and join its words with single dashes: "Hello, World!" -> "hello-world"."""
    return re.sub(r"[^a-z0-9]", "-", text.lower())
