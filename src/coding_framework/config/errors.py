"""The one error type of the config layer."""

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """A configuration file or value is invalid; the message names the file, the field and the fix."""
