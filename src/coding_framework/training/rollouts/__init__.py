"""Where a run's training batches come from: the episodes (``episodes``), their rewards shaped into rows
(``scoring``), the rollout engines that sample them (``engines``), and the one seam the trainer sees,
``source.BatchSource``."""

__all__: list[str] = []  # a namespace of modules: import from them
