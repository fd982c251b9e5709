#!/usr/bin/env bash
# The GPU smoke test: 2 steps of verl-train on a small model -> verl-export -> load the export in vLLM.
# Run it by hand on a CUDA machine (or through `pytest -m gpu tests/test_gpu_smoke.py`), in the GPU
# environment of docs/scale_out.md (verl's vLLM stack, verl==0.9.1, our wheel with --no-deps).
#
#   bash scripts/gpu_smoke.sh                 # the embedded model, run dir runs/gpu_smoke
#   bash scripts/gpu_smoke.sh MODEL_DIR RUN_DIR
#
# What it proves, in order: verl's FSDP trainer runs our agent loop on a real vLLM rollout and writes a
# checkpoint (verl-train), that checkpoint merges into a Hugging Face model and registers in MLflow
# (verl-export), and vLLM serves the merged model. The last stdout line is JSON.
set -euo pipefail

python=${PYTHON:-python}
model=${1:-$("$python" -c "from coding_framework.embedded import ensure_embedded_model as e; print(e(progress=False))")}
run=${2:-runs/gpu_smoke}
cli=("$python" -m coding_framework.cli)

"$python" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'gpu_smoke.sh needs a CUDA device')"
"$python" -c "import vllm" || { echo "gpu_smoke.sh needs vLLM (the GPU environment)" >&2; exit 1; }
rm -rf "$run"
start=$(date +%s)

# 2 steps of 4 problems x 8 samples; a checkpoint at step 2; no validation pass.
"${cli[@]}" verl-train --model "$model" --run-dir "$run" --config grpo_basic --verl-config verl_smoke \
  --override data.train_batch_size=4 --override actor_rollout_ref.actor.ppo_mini_batch_size=4 \
  --override critic.ppo_mini_batch_size=4 --override trainer.total_training_steps=2 \
  --override trainer.save_freq=2 --override trainer.val_before_train=false --override trainer.test_freq=-1 \
  | tee "$run.train.log"
test -f "$run/checkpoints/latest_checkpointed_iteration.txt"

"${cli[@]}" verl-export --checkpoint "$run/checkpoints" --out "$run/hf" --register verl-smoke | tee "$run.export.log"

"$python" - "$run/hf" "$start" <<'PY'
import json, sys, time
from vllm import LLM, SamplingParams

hf, start = sys.argv[1], float(sys.argv[2])
llm = LLM(model=hf, dtype="bfloat16", gpu_memory_utilization=0.3, max_model_len=1024)
out = llm.generate(["def add(a, b):"], SamplingParams(max_tokens=16, temperature=0.0))[0].outputs[0]
assert out.token_ids, "vLLM produced no tokens from the exported model"
print(json.dumps({"hf_dir": hf, "vllm_tokens": len(out.token_ids), "text": out.text,
                  "seconds": round(time.time() - start, 1)}))
PY
