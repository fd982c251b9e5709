"""Accounts, postings, transfers, interest and statements over plain dicts."""
