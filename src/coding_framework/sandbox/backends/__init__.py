"""Backends that start judge workers: `process` (bwrap) and `docker`."""
