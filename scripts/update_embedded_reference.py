"""Make a build of the default embedded recipe the reference build the package ships.

    .venv/bin/coding-framework bootstrap-model --force     # builds the recipe here (about 10 min, 2 cores)
    .venv/bin/python scripts/update_embedded_reference.py PATH_PRINTED_ABOVE

Copies the model files into ``src/coding_framework/embedded/reference/`` and writes its manifest (the
recipe's hash, the CPU, Python and torch it was built with, each file's sha256). Every figure measured on
the old reference must then be measured again.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from coding_framework.config import load_config, shipped_config
from coding_framework.config.embedded import EmbeddedModelConfig
from coding_framework.embedded.bootstrap import REPORT_FILE, training_problems
from coding_framework.embedded.reference import write_reference
from coding_framework.evaluation.machine import cpu_name


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir", type=Path, help="a build of the shipped embedded_model.yaml recipe")
    args = ap.parse_args()
    config = load_config(EmbeddedModelConfig, shipped_config("embedded_model"))
    report = args.model_dir / REPORT_FILE
    if not report.is_file():
        sys.exit(f"{report} does not exist: pass the directory `bootstrap-model --force` printed")
    built = json.loads(report.read_text())["config"]
    if built != config.model_dump(mode="json", exclude={"reference"}):
        sys.exit(f"{args.model_dir} was not built from the shipped embedded_model.yaml recipe")
    shipped = write_reference(args.model_dir, config, training_problems(config), cpu_name())
    print(json.dumps(shipped, indent=2))


if __name__ == "__main__":
    main()
