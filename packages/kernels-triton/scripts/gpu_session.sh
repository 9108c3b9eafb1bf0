#!/usr/bin/env bash
# One device call for kernels-triton (NOTES.md): each stage under its own timeout, the whole
# within BUDGET seconds; full logs and JSON under $OUT (tarred: the device tool brings back
# at most 8 files), a short summary on stdout. Run from the repository root on the GPU machine:
#
#   packages/kernels-triton/scripts/gpu_session.sh tune tests sweep host experiment
#
# Stages: tune (python -m kernels_triton.tune; the picks replace the package's), tests
# (GPU-marked kernels_triton tests), sweep (lab bench softmax and softmax_backward: Triton,
# F.softmax, and the implementations in $SWEEP_IMPLS), host (host time per call; before/after
# when /tmp/before holds an older packages/kernels-triton), experiment (tiles_experiment.py).
set -uo pipefail
OUT=${OUT:-out/ktriton}
BUDGET=${BUDGET:-230}
SWEEP_IMPLS=${SWEEP_IMPLS:-Triton}
LOGS=$OUT/logs
mkdir -p "$LOGS"
export PYTHONUNBUFFERED=1
PY=(python3 scripts/in_place.py)
HERE=packages/kernels-triton/scripts

stage() {  # stage NAME LIMIT CMD...: run under min(LIMIT, time left), log to $LOGS/NAME.log
  local name=$1 limit=$2; shift 2
  local left=$((BUDGET - SECONDS))
  [ "$limit" -gt "$left" ] && limit=$left
  if [ "$limit" -lt 10 ]; then echo "=== $name: skipped, ${left}s left"; return; fi
  echo "=== $name: up to ${limit}s, from ${SECONDS}s"
  timeout "$limit" "$@" > "$LOGS/$name.log" 2>&1
  echo "=== $name: exit $? at ${SECONDS}s"
}

for s in "$@"; do
  case $s in
    tune) stage tune 80 "${PY[@]}" python -m kernels_triton.tune
          cp packages/kernels-triton/src/kernels_triton/autotune_picks.json "$OUT/" ;;
    tests) stage tests 70 scripts/test-in-place tests/kernels_triton -m gpu -x -q -p no:cacheprovider ;;
    sweep) stage sweep 40 "${PY[@]}" lab bench softmax --impls "$SWEEP_IMPLS" --json "$LOGS/sweep_softmax.json"
           stage sweep-bwd 30 "${PY[@]}" lab bench softmax_backward --impls "Triton bwd" \
             --json "$LOGS/sweep_softmax_backward.json" ;;
    host) [ -d /tmp/before/src ] && stage host-before 30 env PYTHONPATH=/tmp/before/src:packages/labtools/src \
            python3 "$HERE/host_overhead.py" --label before --shapes 2 --json "$LOGS/host_before.json"
          stage host 30 "${PY[@]}" python "$HERE/host_overhead.py" --label after --references \
            --json "$LOGS/host_after.json" ;;
    experiment) stage experiment 200 "${PY[@]}" python "$HERE/tiles_experiment.py" --json "$LOGS/experiment.json" ;;
    *) echo "gpu_session: unknown stage $s" ;;
  esac
done

tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$LOGS"
echo "=== summary"
tar xzf "$OUT/logs.tgz" -O logs/tune.log 2>/dev/null | grep -v "^ " | cut -c1-160 | tail -n 50
for f in sweep sweep-bwd host-before host experiment tests; do
  echo "--- $f"; tar xzf "$OUT/logs.tgz" -O "logs/$f.log" 2>/dev/null | grep -v "^\[ *[0-9]*/" | tail -n 40
done
