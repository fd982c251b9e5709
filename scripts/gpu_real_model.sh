#!/usr/bin/env bash
# The smollm2_lora recipe on a lent GPU machine (the `device` tool): the real model's greedy HumanEval
# baseline, then a few GRPO + LoRA steps, both on CUDA with the HF engine (that machine has torch,
# transformers and peft, but not vLLM, ray, mlflow, langgraph or pydantic, and Python 3.12).
#
# A device call carries at most 64 MiB, so our other dependencies travel as Python 3.12 wheels in parts:
#
#   bash scripts/gpu_real_model.sh stage            # here: wheels -> .whl/part-N (each under 60 MiB)
#   # one device call per part, on the same warm machine, carry [".whl/part-N"]:
#   bash scripts/gpu_real_model.sh install .whl/part-N
#   # then one call, carry [".whl/part-last"] if any is left, with ../shared/data copied to shared/data:
#   bash scripts/gpu_real_model.sh run [STEPS]
#
# `run` prints the baseline's and the training's last JSON lines; `run`'s figures go to $OUT if set.
set -euo pipefail

site=/tmp/site
part_mib=60

stage() {
  echo /.whl/ >>.git/info/exclude
  rm -rf .whl && mkdir -p .whl/all
  # Everything this venv has beyond what the GPU machine already has (and beyond verl's and vLLM's stacks).
  .venv/bin/python -m pip freeze --exclude-editable |
    grep -viE '^(torch|transformers|peft|nvidia-|triton|verl|vllm|tensordict|transferqueue|msgspec)[=_-]' \
      >.whl/requirements.txt
  python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform any -d .whl/all -r .whl/requirements.txt
  python3 -m pip wheel --no-deps -w .whl/all .
  local n=0 size=0
  mkdir -p ".whl/part-$n"
  for wheel in .whl/all/*.whl; do
    local mib=$(( $(stat -c %s "$wheel") / 1048576 + 1 ))
    if (( size + mib > part_mib )); then n=$((n + 1)); size=0; mkdir -p ".whl/part-$n"; fi
    mv "$wheel" ".whl/part-$n/"
    size=$((size + mib))
  done
  rmdir .whl/all
  du -sh .whl/part-*
}

install() {
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$1"/*.whl
}

run() {
  local steps=${1:-3}
  export PYTHONPATH=$site CODING_FRAMEWORK_DATA_DIR=${CODING_FRAMEWORK_DATA_DIR:-shared/data}
  local cli=(python3 -m coding_framework.cli) out=${OUT:-/tmp/gpu_real_model}
  mkdir -p "$out"
  python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'needs a CUDA device')"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
  "${cli[@]}" bootstrap-model smollm2-135m
  "${cli[@]}" evaluate --benchmark humaneval --model smollm2-135m --max-rounds 1 --temperature 0 \
    --results "$out/humaneval-greedy.jsonl" | tail -n 1 | tee "$out/baseline.json"
  "${cli[@]}" train --config smollm2_lora --engine local --device cuda --steps "$steps" \
    --run-dir "$out/train" --no-progress | tail -n 1 | tee "$out/train.json"
}

case "${1:-}" in
  stage) stage ;;
  install) install "${2:?install needs a part directory}" ;;
  run) run "${2:-}" ;;
  *) echo "usage: $0 stage | install .whl/part-N | run [STEPS]" >&2; exit 2 ;;
esac
