#!/usr/bin/env bash
# One device call for kernels-triton (NOTES.md): each stage under its own timeout, the whole
# within BUDGET seconds; full logs and JSON under $OUT (tarred: the device tool brings back
# at most 8 files), a short summary on stdout. Run from the repository root on the GPU machine:
#
#   packages/kernels-triton/scripts/gpu_session.sh tune tests sweep host compile
#
# Stages: tune (python -m kernels_triton.tune; the picks replace the package's), tests
# (GPU-marked kernels_triton tests, over 8 pytest-xdist workers where installed), sweep (lab
# bench softmax and softmax_backward: Triton and F.softmax at every shape), compile
# (torch.compile at $COMPILE_SHAPES only: its compile is the slow part), host (host time per call; before/after
# when /tmp/before holds an older packages/kernels-triton).
set -uo pipefail
OUT=${OUT:-out/ktriton}
BUDGET=${BUDGET:-450}  # seconds; both calls so far had 240 (tests then got 70 s: too few, see NOTES.md)
COMPILE_SHAPES=${COMPILE_SHAPES:-4096x600,65536x600,32768x1024}
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
  echo "=== $name: up to ${limit}s, from ${SECONDS}s" | tee -a "$LOGS/session.log"
  timeout "$limit" "$@" > "$LOGS/$name.log" 2>&1
  echo "=== $name: exit $? at ${SECONDS}s" | tee -a "$LOGS/session.log"
}

for s in "$@"; do
  case $s in
    tune) stage tune 80 "${PY[@]}" python -m kernels_triton.tune
          cp packages/kernels-triton/src/kernels_triton/autotune_picks.json "$OUT/" ;;
    tests) workers=(); python3 -c "import xdist" 2>/dev/null && workers=(-n 8)
           stage tests 180 scripts/test-in-place tests/kernels_triton -m gpu -x -q -p no:cacheprovider "${workers[@]}" ;;
    sweep) stage sweep 40 "${PY[@]}" lab bench softmax --impls Triton --json "$LOGS/sweep_softmax.json"
           stage sweep-bwd 30 "${PY[@]}" lab bench softmax_backward --impls "Triton bwd" \
             --json "$LOGS/sweep_softmax_backward.json" ;;
    compile) stage sweep-compile 60 "${PY[@]}" lab bench softmax --impls torch.compile --shapes "$COMPILE_SHAPES" \
               --json "$LOGS/sweep_compile.json" ;;
    host) [ -d /tmp/before/src ] && stage host-before 30 env PYTHONPATH=/tmp/before/src:packages/labtools/src \
            python3 "$HERE/host_overhead.py" --label before --shapes 2 --json "$LOGS/host_before.json"
          stage host 30 "${PY[@]}" python "$HERE/host_overhead.py" --label after --references \
            --json "$LOGS/host_after.json" ;;
    *) echo "gpu_session: unknown stage $s" ;;
  esac
done

tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$LOGS"
echo "=== summary"
tar xzf "$OUT/logs.tgz" -O logs/tune.log 2>/dev/null | grep -v "^ " | cut -c1-110 | tail -n 60
for f in sweep sweep-bwd sweep-compile host-before host tests session; do
  echo "--- $f"; tar xzf "$OUT/logs.tgz" -O "logs/$f.log" 2>/dev/null | grep -v "^\[ *[0-9]*/" | tail -n 40
done
