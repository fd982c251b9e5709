"""Which model: the on-disk layout of a model directory, its checksums, the MLflow registry contract, and
the one resolver from a ``ModelRef`` to a local, attested directory or an endpoint.

Training writes through this package and serving reads through it, so neither imports the other.
"""

from coding_framework.models.checksums import adapter_checksums, version_checksum, weights_checksum
from coding_framework.models.layout import (
    ADAPTER_CONFIG,
    ADAPTER_FILE,
    ADAPTERS_DIR,
    RoleAdapter,
    is_model_dir,
    policies_for,
    role_adapter_map,
    roles_for,
)
from coding_framework.models.registry import RegistryError
from coding_framework.models.resolve import ModelError, ResolvedModel, resolve_model

__all__ = [
    "ADAPTERS_DIR",
    "ADAPTER_CONFIG",
    "ADAPTER_FILE",
    "ModelError",
    "RegistryError",
    "ResolvedModel",
    "RoleAdapter",
    "adapter_checksums",
    "is_model_dir",
    "policies_for",
    "resolve_model",
    "role_adapter_map",
    "roles_for",
    "version_checksum",
    "weights_checksum",
]
