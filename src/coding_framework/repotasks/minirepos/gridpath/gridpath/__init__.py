"""gridpath: grid coordinates, neighbours, shortest paths and flood fill on grids of strings."""
