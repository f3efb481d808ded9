def split_line(line: str) -> list[str]:
    """Split one CSV line into fields. Fields may be quoted with double quotes; inside quotes a
    comma is literal and a doubled quote ("") stands for one quote character."""
    return line.split(",")
