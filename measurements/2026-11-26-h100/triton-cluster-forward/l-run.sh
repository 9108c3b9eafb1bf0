# call l: probes/edges_regs.py, the cluster forward's head/body/tail split against element-wise reads at odd row lengths: registers, spills, device and warm back-to-back time
R=$OUT/l; mkdir -p $R; D=measurements/2026-11-26-h100/triton-cluster-forward
git log --oneline -1 > $R/l-env.txt; git status --short >> $R/l-env.txt
timeout 200 python3 scripts/in_place.py python $D/probes/edges_regs.py > $R/l-edges.log 2>&1; echo "probe rc=$?" >> $R/l-stages.txt
cat $R/l-stages.txt; grep -v -i warn $R/l-edges.log | tail -12
cd $OUT && tar czf l.tgz l && rm -rf l
