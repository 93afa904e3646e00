#!/usr/bin/env bash
# What a machine with a GPU runs, in one call (device time is short): the GPU measurements of the
# minimax round (VGG-11, 15 clients) and of FedAc (the a9a λ = 1e-3 jobs on CUDA), then the CUDA
# tests. Each part has its own time limit and log under $OUT (default: ./gpu_out); the last lines
# printed are a summary. The device image has torch, numpy, pyarrow, numba, scipy and pytest but
# not fedbench's workflow packages, so fedbench runs from src/ (PYTHONPATH) and no Snakemake job runs.
#
#     OUT=/tmp/gpu bash benchmarks/gpu_checks.sh
#     OUT=/tmp/gpu PARTS="cuda_tests fedac" bash benchmarks/gpu_checks.sh     # some parts only
#
# Parts: minimax (the VGG-11 round at 64·10 and 3,333 samples a client), cuda_tests (every CUDA
# test of tests/engine), layouts (one step of the whole-rounds tensor path in three layouts),
# fedac (FedAc's jobs on CUDA at M ∈ $FEDAC_M, K ∈ $FEDAC_K, and the estimate of the whole
# a9a λ = 1e-3 figure set from them), fedac_versions (FedAc-I jobs with the round's Triton kernels
# and with its torch operations, side by side), fedac_set (the whole a9a λ = 1e-3 figure set's 432
# jobs, $SET_GROUPS jobs (the K values of an (algorithm, M)) a process as stack_groups_per_job runs
# them, $SET_PARALLEL processes at a time, timed; no process starts after $SET_LIMIT s),
# tiles (the round kernels' tile shapes, ms per round at M = 8,192).
set -u
PARTS=${PARTS:-cuda_tests fedac_set tiles}
SET_PARALLEL=${SET_PARALLEL:-16}
SET_GROUPS=${SET_GROUPS:-9}
SET_LIMIT=${SET_LIMIT:-200}
FEDAC_M=${FEDAC_M:-256,2048,8192}
FEDAC_K=${FEDAC_K:-1,16,256}
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
want() { case " $PARTS " in *" $1 "*) return 0;; esac; return 1; }
if want minimax; then
  part minimax_640 90 "$PY" benchmarks/minimax_costs.py --device cuda --unit epochs --samples 640
  part minimax_3333 150 "$PY" benchmarks/minimax_costs.py --device cuda --unit epochs --samples 3333
fi
if want fedac_versions; then
  for v in kernels torch; do
    part "fedac_$v" 50 "$PY" benchmarks/fedac_speed.py --device cuda --algorithms fedac --M 256,8192 --K 1,16 \
      --T-fedbench 512 --json "$OUT/fedac_$v.json" $([ $v = torch ] && echo --torch-rounds)
  done
fi
want tiles && part tiles 45 "$PY" benchmarks/round_kernel_tiles.py --M 8192 --K 1,16 --tiles 512,1024 --warps 1,2,4
if want fedac_set; then
  part fedac_set $((SET_LIMIT + 60)) "$PY" benchmarks/fedac_figure_set.py --device cuda --warm \
    --parallel "$SET_PARALLEL" --groups-per-job "$SET_GROUPS" --limit-s "$SET_LIMIT" --json "$OUT/fedac_set.json"
fi
want cuda_tests && part cuda_tests 100 "$PY" -m pytest -q -n 8 -p no:cacheprovider tests/engine -k "cuda or graph"
if want layouts; then
  part layouts 60 sh -c "\"$PY\" benchmarks/tensor_step_layouts.py --M 8192 && \"$PY\" benchmarks/tensor_step_layouts.py --M 256"
fi
if want fedac; then
  part fedac 180 "$PY" benchmarks/fedac_speed.py --device cuda --algorithms fedac --M "$FEDAC_M" \
    --K "$FEDAC_K" --T-fedbench 1024 --json "$OUT/fedac.json"
  part fedac_others 40 "$PY" benchmarks/fedac_speed.py --device cuda --algorithms fedavg,mb_sgd,mb_ac_sgd \
    --M 2048 --K 16 --T-fedbench 1024 --json "$OUT/fedac_others.json"
  part fedac_estimate 20 "$PY" benchmarks/fedac_speed.py --estimate-from "$OUT/fedac.json,$OUT/fedac_others.json"
fi
cat "$OUT/machine.txt"
for f in minimax_640 minimax_3333; do [ -f "$OUT/$f.log" ] && { echo "== $f"; tail -8 "$OUT/$f.log"; }; done
for f in fedac fedac_others fedac_kernels fedac_torch; do
  [ -f "$OUT/$f.log" ] && { echo "== $f"; grep "^| fedac\|^| fedavg\|^| mb_\|Error\|error" "$OUT/$f.log" | sed 's/skipped: git clone[^|]*|/-|/'; }
done
[ -f "$OUT/fedac_set.log" ] && { echo "== fedac_set"; tail -9 "$OUT/fedac_set.log"; }
[ -f "$OUT/tiles.log" ] && { echo "== tiles"; cat "$OUT/tiles.log"; }
[ -f "$OUT/layouts.log" ] && { echo "== layouts"; cat "$OUT/layouts.log"; }
[ -f "$OUT/fedac_estimate.log" ] && { echo "== fedac_estimate"; tail -3 "$OUT/fedac_estimate.log"; }
[ -f "$OUT/cuda_tests.log" ] && { echo "== cuda_tests"; tail -4 "$OUT/cuda_tests.log"; }
echo "== summary"; cat "$OUT/summary.txt"
