# call a (carries the first part of the peers' wheels): the lead probe without the peers
R=$OUT/a; mkdir -p $R; mkdir -p ~/peers; cp .whl/p1/* ~/peers/
D=measurements/2026-11-27-h100/lead-spin
git log -1 --format="tree %h" > $R/a-env.txt 2>/dev/null; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/a-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/a-env.txt
timeout 400 python3 scripts/in_place.py python $D/probes/lead.py > $R/a-lead.log 2>&1; echo "lead rc=$?" >> $R/a-env.txt
cat $R/a-env.txt $R/a-lead.log | tail -80
cd $OUT && tar czf a.tgz a && rm -rf a
