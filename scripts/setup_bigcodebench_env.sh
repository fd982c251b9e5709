#!/usr/bin/env bash
# Builds the execution environment for BigCodeBench tasks: a venv with the libraries its tasks import,
# .venv-bigcodebench at the repository root. The in-process runner mounts it read-only in its sandbox.
#
#   bash scripts/setup_bigcodebench_env.sh                 # idempotent: a second run only checks
#   BIGCODEBENCH_VENV=/some/dir bash scripts/setup_bigcodebench_env.sh
#
# It is a venv of the same base interpreter as the main one, so the sandbox's read-only view of that
# runtime serves both. The bytecode is compiled here, and matplotlib's font cache built into
# share/mpl-cache, because the sandbox mounts the venv read-only: without them every worker start would
# compile pandas and rebuild the cache (tens of seconds on a busy machine).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${BIGCODEBENCH_VENV:-$root/.venv-bigcodebench}"
reqs="$root/scripts/bigcodebench-env-requirements.txt"
stamp="$venv/.bigcodebench-env.installed"
py="$venv/bin/python"

if [[ -f "$stamp" && "$stamp" -nt "$reqs" ]]; then
  "$py" -c "import numpy, pandas, matplotlib; print(f'bigcodebench env ok in $venv')"
  exit 0
fi
test -x "$py" || python3 -m venv "$venv"
"$py" -m pip install -q --upgrade pip
"$py" -m pip install -q -r "$reqs"
MPLCONFIGDIR="$venv/share/mpl-cache" "$py" -c "import matplotlib.pyplot"
"$py" -c "import numpy, pandas, matplotlib, scipy, sklearn; print(f'bigcodebench env built in $venv')"
touch "$stamp"
