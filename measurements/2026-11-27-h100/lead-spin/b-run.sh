# call b (after two calls that carried the second and third parts; carries the fourth): the peers installed in ~/peers/site, the lead probe with QuACK
R=$OUT/b; mkdir -p $R; P=~/peers; D=measurements/2026-11-27-h100/lead-spin
cp .whl/p4/* $P/; cd $P && cat cu13.part.aa cu13.part.ab cu13.part.ac > nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl && echo "$(cat cu13.sha256)  nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl" | sha256sum -c > $R/b-peers-install.log 2>&1
pip install --no-deps --target $P/site $P/*.whl >> $R/b-peers-install.log 2>&1; echo "pip rc=$?" >> $R/b-peers-install.log
cd - > /dev/null
export PYTHONPATH=$P/site:$P/site/nvidia_cutlass_dsl/dsl_packages
git log -1 --format="tree %h" > $R/b-env.txt 2>/dev/null; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/b-env.txt
timeout 400 python3 scripts/in_place.py python $D/probes/lead.py > $R/b-lead.log 2>&1; echo "lead rc=$?" >> $R/b-env.txt
tail -2 $R/b-peers-install.log; cat $R/b-env.txt $R/b-lead.log | tail -80
cd $OUT && tar czf b.tgz b && rm -rf b
