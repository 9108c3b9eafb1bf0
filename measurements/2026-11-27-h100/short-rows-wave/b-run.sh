# call b (after calls that carried the second and third parts; carries the fourth): the peers installed in ~/peers/site; the forms probe with QuACK; QuACK's PTX and SASS for rows of 600 kept
R=$OUT/b; mkdir -p $R; P=~/peers; D=measurements/2026-11-27-h100/short-rows-wave
cp .whl/p4/* $P/; cd $P && cat cu13.part.aa cu13.part.ab cu13.part.ac > nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl && echo "$(cat cu13.sha256)  nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl" | sha256sum -c > $R/b-peers-install.log 2>&1
pip install --no-deps --target $P/site $P/*.whl >> $R/b-peers-install.log 2>&1; echo "pip rc=$?" >> $R/b-peers-install.log
cd - > /dev/null
export PYTHONPATH=$P/site:$P/site/nvidia_cutlass_dsl/dsl_packages
git log -1 --format="tree %h" > $R/b-env.txt 2>/dev/null; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/b-env.txt
timeout 330 python3 scripts/in_place.py python $D/probes/forms.py > $R/b-forms.log 2>&1; echo "forms rc=$?" >> $R/b-env.txt
rm -rf /tmp/*/quack_cache; mkdir -p $R/quack-dump
CUTE_DSL_KEEP=ptx,sass CUTE_DSL_DUMP_DIR=$R/quack-dump timeout 120 python3 -c "
import torch; from quack.softmax import softmax_fwd, softmax_bwd
for dt in (torch.float32, torch.bfloat16):
    x = torch.randn(4096, 600, device='cuda', dtype=dt); y = softmax_fwd(x); softmax_bwd(torch.randn_like(y), y)
torch.cuda.synchronize(); print('dumped')" > $R/b-dump.log 2>&1; ls $R/quack-dump >> $R/b-dump.log
tail -2 $R/b-peers-install.log; cat $R/b-env.txt $R/b-dump.log; tail -80 $R/b-forms.log
cd $OUT && tar czf b.tgz b && rm -rf b
