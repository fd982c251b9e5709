"""The reference build of the embedded model, shipped with the package so every machine starts from it.

The recipe's weights depend on the CPU's float rounding, so two machines building it get two models. The
package therefore ships one build (``reference/``) with a manifest: the recipe's hash, where it was built,
and each file's sha256. ``ensure_embedded_model`` installs it into the cache (checking every file against
the manifest) whenever the requested config is that recipe; ``bootstrap-model --force`` or
``reference: false`` still builds the recipe on this machine. ``scripts/update_embedded_reference.py``
replaces the shipped build.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
from pathlib import Path
from typing import Any

import torch

from coding_framework.config.embedded import EmbeddedModelConfig
from coding_framework.problems import Problem

__all__ = [
    "LOCAL_SUFFIX",
    "MANIFEST_FILE",
    "RECIPE_VERSION",
    "REFERENCE_DIR",
    "WEIGHT_FILES",
    "file_sha256",
    "install_reference",
    "manifest",
    "recipe_key",
    "reference_mismatches",
    "reference_name",
    "write_reference",
]

# Bump when the recipe changes in a way EmbeddedModelConfig does not capture, so old caches are not reused.
RECIPE_VERSION = "2"
REFERENCE_DIR = Path(__file__).parent / "reference"
MANIFEST_FILE = "manifest.json"
LOCAL_SUFFIX = "-local"  # a build of this machine, kept apart from the reference of the same recipe
# What a build computes with; its report (build time included) differs between any two builds.
WEIGHT_FILES = ("config.json", "model.safetensors", "tokenizer.json")
MODEL_FILES = (
    "bootstrap.json", "chat_template.jinja", "config.json", "generation_config.json", "model.safetensors",
    "tokenizer.json", "tokenizer_config.json",
)


def recipe_key(config: EmbeddedModelConfig, problems: list[Problem]) -> str:
    """Hash of the recipe alone: config (less the ``reference`` switch), recipe version and training data."""
    h = hashlib.sha256()
    h.update(config.model_dump_json(exclude={"reference"}).encode())
    h.update(RECIPE_VERSION.encode())
    for p in problems:
        h.update(p.model_dump_json(include={"task_id", "prompt", "solutions", "test_code"}).encode())
    return h.hexdigest()[:16]


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def manifest(reference_dir: Path = REFERENCE_DIR) -> dict[str, Any] | None:
    """The shipped build's manifest, or None when the package ships none."""
    path = reference_dir / MANIFEST_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def reference_name(config: EmbeddedModelConfig, problems: list[Problem]) -> str | None:
    """The shipped build's name when ``config`` (with ``problems``) is the recipe it was built from."""
    shipped = manifest()
    if shipped is None or shipped["recipe_key"] != recipe_key(config, problems):
        return None
    return str(shipped["name"])


def reference_mismatches(
    model_dir: Path = REFERENCE_DIR, reference_dir: Path = REFERENCE_DIR, only: tuple[str, ...] | None = None
) -> list[str]:
    """One line per file of the shipped manifest (or of ``only``) that ``model_dir`` lacks or holds with
    another sha256."""
    shipped = manifest(reference_dir)
    if shipped is None:
        return [f"{reference_dir / MANIFEST_FILE}: no manifest"]
    problems = []
    for name, digest in shipped["files"].items():
        if only is not None and name not in only:
            continue
        path = model_dir / name
        if not path.is_file():
            problems.append(f"{name}: missing")
        elif (actual := file_sha256(path)) != digest:
            problems.append(f"{name}: sha256 {actual[:12]}... != manifest {digest[:12]}...")
    return problems


def install_reference(dest: Path, reference_dir: Path = REFERENCE_DIR) -> None:
    """Copy the shipped build's files into ``dest``; ValueError if any differs from the manifest."""
    problems = reference_mismatches(reference_dir, reference_dir)
    if problems:
        raise ValueError(
            f"the shipped reference build is damaged ({'; '.join(problems)}); reinstall the package "
            "or build the recipe here with `coding-framework bootstrap-model --force`"
        )
    dest.mkdir(parents=True, exist_ok=True)
    for name in manifest(reference_dir)["files"]:  # type: ignore[index]
        shutil.copyfile(reference_dir / name, dest / name)


def write_reference(
    model_dir: Path, config: EmbeddedModelConfig, problems: list[Problem], cpu: str,
    reference_dir: Path = REFERENCE_DIR,
) -> dict[str, Any]:
    """Make ``model_dir`` (a build of ``config``) the shipped reference, with its manifest."""
    if reference_dir.exists():
        shutil.rmtree(reference_dir)
    reference_dir.mkdir(parents=True)
    for name in MODEL_FILES:
        shutil.copyfile(model_dir / name, reference_dir / name)
    shipped = {
        "name": model_dir.name.removesuffix(LOCAL_SUFFIX),
        "recipe_key": recipe_key(config, problems),
        "built_on": {"cpu": cpu, "python": platform.python_version(), "torch": torch.__version__},
        "files": {name: file_sha256(reference_dir / name) for name in MODEL_FILES},
    }
    (reference_dir / MANIFEST_FILE).write_text(json.dumps(shipped, indent=2) + "\n")
    return shipped
