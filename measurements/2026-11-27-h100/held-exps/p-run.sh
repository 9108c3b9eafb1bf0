# call p: call o's error probe on the tree before it (.ab/old = 45057cc's package: every fp32 launch held its exponentials, the factor in fp32), which call o's script pointed at the wrong path
R=$OUT/p; mkdir -p $R; D=$PWD/measurements/2026-11-27-h100/held-exps
git log --oneline -1 > $R/p-env.txt; git status --short >> $R/p-env.txt
timeout 150 python3 .ab/old/scripts/in_place.py python $D/probes/error_vs_torch.py 8x131072,16x131072,64x50257,4x262144 40 > $R/p-error-old.log 2>&1; echo "error old rc=$? $(date +%T)" >> $R/p-stages.txt
cat $R/p-stages.txt $R/p-error-old.log
cd $OUT && tar czf p.tgz p && rm -rf p
