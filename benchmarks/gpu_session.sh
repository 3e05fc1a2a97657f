#!/usr/bin/env bash
# The GPU measurements a session that is lent a device runs, prepared so that they fit its 15 minutes (a start
# costs ~1-1.5 min; one command may run 10 min). Calls of the device tool's `run`, each from the checkout root:
#
#   bash benchmarks/gpu_session.sh kernels      # ~5 min: one layer's decode attention, then the GPU tests
#   bash benchmarks/gpu_session.sh tests        # ~4 min: the engine's GPU tests and the context limit on CUDA
#   bash benchmarks/gpu_session.sh throughput   # ~4 min on an H200: judge_throughput gpu-7b, 128 GREEN prompts, one round
#   bash benchmarks/gpu_session.sh first-call   # ~3 min: the first full-size call against the next ones
#
# Results go to $OUT (the device tool brings that folder back): the card and versions, each step's output and
# JSON. The device image has torch, transformers and pytest; radmetrics runs from the checkout (PYTHONPATH).
# Figures go to BENCHMARKS.md with these commands; which card gave each number is in $OUT/device.txt.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
OUT="${OUT:-/tmp/radmetrics-gpu-session}"
mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
  python -c "import sys, torch, transformers; print(sys.version.split()[0], torch.__version__, transformers.__version__)"
} > "$OUT/device.txt" 2>&1
step() {  # step NAME SECONDS COMMAND...: the command's output in $OUT/NAME.txt, its status and time on stdout
  local name=$1 limit=$2 start=$SECONDS
  shift 2
  timeout "$limit" "$@" > "$OUT/$name.txt" 2>&1
  echo "[gpu] $name: exit $? after $((SECONDS - start)) s"
  tail -n 25 "$OUT/$name.txt"
}
case "${1:-}" in
  kernels)
    # the length-aware decode attention (decode_attention="varlen") against the shipped kernels, each checked
    # against float64; then token equality with `generate` on CUDA (graphs, cuDNN and varlen kernels included)
    step attention 120 python benchmarks/decode_attention.py --preset gpu-7b --json "$OUT/attention.json"
    step tests 240 python -m pytest -q -p no:cacheprovider tests/test_greedy_engine.py tests/test_lean_decode.py
    ;;
  tests)
    # token equality with `generate` on CUDA (graphs, cuDNN and varlen kernels), the CPU-linear tests' device pins,
    # and the per-row context limit inside decode steps replayed from CUDA graphs (the trained tiny judge, fp32)
    step tests 420 python -m pytest -q -p no:cacheprovider -rs tests/test_greedy_engine.py tests/test_lean_decode.py \
      tests/test_cpu_linear.py tests/test_cut_answers.py
    ;;
  throughput)
    # the official loop, the default (no options), tuned, without stem sharing and with the varlen attention
    step throughput 560 python benchmarks/judge_throughput.py --preset gpu-7b --n 128 --rounds 1 \
      --no-engine-off --no-vllm --json "$OUT/throughput.json"
    ;;
  first-call)
    # does a process's first full-size call pay a one-time cost (the default row runs first and trails the tuned
    # row, which plans the same table, by 7-10%: BENCHMARKS.md session 32)? With and without cuDNN attention; ~3 min
    step first_call 200 python benchmarks/first_call.py --preset gpu-7b --json "$OUT/first_call.json"
    step first_call_no_cudnn 200 python benchmarks/first_call.py --preset gpu-7b --no-cudnn-sdp \
      --json "$OUT/first_call_no_cudnn.json"
    ;;
  profile)
    # where a 128-row decode step's time goes (if device time is left)
    step profile 300 python benchmarks/decode_profile.py --preset gpu-7b --json "$OUT/profile.json"
    ;;
  *)
    echo "usage: bash benchmarks/gpu_session.sh kernels|tests|throughput|first-call|profile" >&2
    exit 2
    ;;
esac
