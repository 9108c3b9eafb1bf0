# call a (carries the first part of the peers' wheels): the forms probe without the peers
R=$OUT/a; mkdir -p $R; mkdir -p ~/peers; cp .whl/p1/* ~/peers/; D=measurements/2026-11-27-h100/short-rows-wave
git log -1 --format="tree %h" > $R/a-env.txt 2>/dev/null; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/a-env.txt
timeout 300 python3 scripts/in_place.py python $D/probes/forms.py > $R/a-forms.log 2>&1; echo "forms rc=$?" >> $R/a-env.txt
cat $R/a-env.txt; tail -70 $R/a-forms.log
cd $OUT && tar czf a.tgz a && rm -rf a
