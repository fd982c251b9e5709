"""coding-framework: train and serve Generator / Executor / Reviewer coding agents with RL."""

__version__ = "0.1.0"

__all__ = ["__version__"]
