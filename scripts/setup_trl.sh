#!/usr/bin/env bash
# Installs TRL into its own virtual environment, .venv-trl at the repository root, for
# benchmarks/training/trl_throughput.py (our GRPO step against TRL's GRPOTrainer).
#
#   bash scripts/setup_trl.sh             # idempotent: a second run only checks and prints the versions
#   TRL_VENV=/some/dir bash scripts/setup_trl.sh
#
# Why a separate venv: TRL is a benchmark baseline, not a dependency, so it stays out of the main
# environment. TRL 1.16's requirements (transformers>=4.56.2, accelerate, datasets) are met by the main
# venv's pinned versions, so .venv-trl layers on top of .venv (a .pth file adds .venv's site-packages to
# its path) and pip installs only what is missing: both sides of the benchmark then run the very same
# torch, transformers and model code, and no second torch is downloaded. Run `make test` (or create .venv)
# first.
set -euo pipefail

TRL_VERSION=1.16.0

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${TRL_VENV:-$root/.venv-trl}"
base="$root/.venv"
py="$venv/bin/python"
stamp="$venv/.trl-$TRL_VERSION.installed"

print_version() {
  "$py" -c "import trl, transformers, torch; print(f'trl {trl.__version__} (transformers {transformers.__version__}, torch {torch.__version__}) in $venv')"
}

if [[ -f "$stamp" ]] && print_version 2>/dev/null; then
  exit 0
fi
if [[ ! -x "$base/bin/python" ]]; then
  echo "error: $base does not exist; create the main venv first (make test, or see the README)" >&2
  exit 2
fi

[[ -x "$py" ]] || python3 -m venv "$venv"
base_site="$("$base/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
venv_site="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
# addsitedir (not a bare path) so .venv's own .pth files run too: the editable coding-framework install.
echo "import site; site.addsitedir('$base_site')" >"$venv_site/_main_venv.pth"

# -c constraints.txt pins torch to the main venv's version, so pip never swaps it for a CUDA build.
"$py" -m pip install -q -c "$root/constraints.txt" "trl==$TRL_VERSION"
touch "$stamp"
print_version
