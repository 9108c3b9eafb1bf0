# call l: tests/minigpt_torch/test_torch_ddp.py on a two-GPU machine: torchrun --nproc-per-node 2 MiniGPT training with NCCL against one process on the same global batch (and the gloo test on CPU)
R=$OUT/l; mkdir -p $R
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv > $R/l-env.txt
env | grep -E "^NCCL_NVLS_ENABLE|^TORCH_SYMM_MEM_DISABLE_MULTICAST|^NVSHMEM_DISABLE_NVLS" >> $R/l-env.txt
python3 -c "import torch; print(torch.__version__, torch.cuda.nccl.version(), torch.cuda.device_count())" >> $R/l-env.txt
MINIGPT_DDP_REPORT=$R/l-ddp-nccl.json timeout 240 scripts/test-in-place tests/minigpt_torch/test_torch_ddp.py -q -p no:cacheprovider -rfE > $R/l-tests-ddp.log 2>&1; echo "tests rc=$?" >> $R/l-tests-ddp.log
cat $R/l-env.txt; tail -3 $R/l-tests-ddp.log; cat $R/l-ddp-nccl.json 2>/dev/null
cd $OUT && tar czf l.tgz l && rm -rf l
