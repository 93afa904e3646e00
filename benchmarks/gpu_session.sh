#!/usr/bin/env bash
# What a session lent a GPU runs, in one call (the device's time is short): the GPU targets of the
# minimax round (VGG-11, 15 clients) and of FedAc (the a9a λ = 1e-3 jobs on CUDA), then the CUDA
# tests. Each part has its own time limit and log under $OUT (default: ./gpu_out); the last lines
# printed are a summary. The device image has torch, numpy, pyarrow, numba, scipy and pytest but
# not fedbench's workflow packages, so fedbench runs from src/ (PYTHONPATH) and no Snakemake job runs.
#
#     OUT=/tmp/gpu bash benchmarks/gpu_session.sh
set -u
OUT=${OUT:-gpu_out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 MPLBACKEND=Agg WANDB_MODE=disabled
PY=${PYTHON:-python3}
part() {  # part NAME LIMIT_S COMMAND...: run, log to $OUT/NAME.log, record exit status and seconds
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc $((SECONDS - t0))s" >> "$OUT/summary.txt"
}
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv
  "$PY" -c "import torch, sys; print(sys.version.split()[0], torch.__version__, torch.cuda.get_device_name())"
  nproc; } > "$OUT/machine.txt" 2>&1
: > "$OUT/summary.txt"
part minimax_640 90 "$PY" benchmarks/minimax_costs.py --device cuda --unit epochs --samples 640
part minimax_3333 150 "$PY" benchmarks/minimax_costs.py --device cuda --unit epochs --samples 3333
part cuda_tests 130 "$PY" -m pytest -q -n 8 -p no:cacheprovider tests/engine -k "cuda or graph"
part fedac_k16 110 "$PY" benchmarks/fedac_speed.py --device cuda --algorithms fedac,fedavg --M 256,8192 \
  --K 16,256 --json "$OUT/fedac_k16.json"
part fedac_k1 90 "$PY" benchmarks/fedac_speed.py --device cuda --algorithms fedac --M 256,8192 --K 1 \
  --T-fedbench 512 --json "$OUT/fedac_k1.json"
cat "$OUT/machine.txt"
for f in minimax_640 minimax_3333; do echo "== $f"; tail -8 "$OUT/$f.log"; done
for f in fedac_k16 fedac_k1; do echo "== $f"; grep "^| fedac\|^| fedavg\|Error\|error" "$OUT/$f.log" | cut -c1-200; done
echo "== cuda_tests"; tail -4 "$OUT/cuda_tests.log"
echo "== summary"; cat "$OUT/summary.txt"
