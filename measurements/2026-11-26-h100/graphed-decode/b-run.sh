# device run: minigpt_torch GPU tests, then tokens/s (graphs and eager), into $OUT
mkdir -p $OUT/r
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import sys,torch,triton;print(sys.version.split()[0],'torch',torch.__version__,'triton',triton.__version__)"; } > $OUT/r/env.txt 2>&1
s=$(date +%s); timeout 120 scripts/test-in-place tests/minigpt_torch -m gpu -q -p no:cacheprovider -rfE > $OUT/r/tests-minigpt-gpu.log 2>&1; echo "tests-minigpt-gpu rc=$? $(( $(date +%s) - s ))s" >> $OUT/r/stages.txt
s=$(date +%s); timeout 420 python3 scripts/in_place.py python scripts/minigpt_tokens_per_second.py --min-pairs 256 --out $OUT/r/minigpt_tokens_per_second.json > $OUT/r/minigpt-tps.log 2>&1; echo "minigpt-tps rc=$? $(( $(date +%s) - s ))s" >> $OUT/r/stages.txt
cat $OUT/r/stages.txt; tail -3 $OUT/r/tests-minigpt-gpu.log; cat $OUT/r/minigpt-tps.log | tail -12
s=$(date +%s); timeout 120 python3 scripts/in_place.py python .probes/head_latency.py > $OUT/r/probe-head-latency.log 2>&1; echo "probe-head-latency rc=$? $(( $(date +%s) - s ))s" >> $OUT/r/stages.txt
cat $OUT/r/stages.txt; cat $OUT/r/probe-head-latency.log | tail -5
