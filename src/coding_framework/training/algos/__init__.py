"""The pure layer of training: advantage algorithms, losses, KL, off-policy corrections, batch hygiene,
schedules, the value head and seed derivation. No I/O, and nothing from the rest of ``training``
but the ``Trajectory`` row type."""

__all__: list[str] = []  # a namespace of modules: import from them
