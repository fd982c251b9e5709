"""The trusted judge. It runs inside the sandbox, imported there as the package ``judge`` and started
with ``server.main()``, so it uses only the standard library and relative imports. The host speaks to
it through ``wire``'s frames."""

from . import wire

__all__ = ["wire"]
