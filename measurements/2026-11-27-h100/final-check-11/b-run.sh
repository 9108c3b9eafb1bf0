# call b (tree f56d7a9; carries the second part of the peers' wheels): kernels_cuda before (8cbc81b's sources and launches) and after, in turns (row-base/probes/variants.py --ab)
R=$OUT/b; mkdir -p $R; cp .whl/p2/* ~/peers/
timeout 300 python3 scripts/in_place.py python measurements/2026-11-27-h100/row-base/probes/variants.py --ab > $R/b-ab.log 2>&1; echo "probe rc=$?" > $R/b-stages.txt
cat $R/b-stages.txt; grep -v "^checking" $R/b-ab.log | tail -120
cd $OUT && tar czf b.tgz b && rm -rf b
