"""Repository tasks: SWE-bench-shaped tasks over a repository snapshot, and the offline mini-repositories."""

from coding_framework.repotasks.minirepo import load_minirepos
from coding_framework.repotasks.swebench import SwebenchLoadError, load_swebench
from coding_framework.repotasks.task import PatchError, RepoTask, RepoTaskSource, apply_patch

__all__ = ["PatchError", "RepoTask", "RepoTaskSource", "SwebenchLoadError", "apply_patch", "load_minirepos",
           "load_swebench"]
