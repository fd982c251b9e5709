"""Small-matrix arithmetic on plain lists of lists."""
