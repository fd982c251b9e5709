"""What a training run starts from, records and leaves: its setup and data, the process state it scopes,
checkpoints, tracking, held-out and benchmark evaluations, the regression gate, results and report."""

__all__: list[str] = []  # a namespace of modules: import from them
