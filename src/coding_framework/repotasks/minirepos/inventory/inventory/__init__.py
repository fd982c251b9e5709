"""Stock levels, reordering, warehouse moves and valuation over plain dicts."""
