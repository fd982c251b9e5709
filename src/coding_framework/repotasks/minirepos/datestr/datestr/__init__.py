"""datestr: Gregorian calendar arithmetic on (year, month, day) tuples and "YYYY-MM-DD" strings."""
