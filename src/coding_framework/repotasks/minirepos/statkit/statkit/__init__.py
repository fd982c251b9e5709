"""Descriptive statistics over plain lists of numbers."""
