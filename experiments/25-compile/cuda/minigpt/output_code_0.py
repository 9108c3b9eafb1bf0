# AOT ID: ['1_inference']
from ctypes import c_void_p, c_long, c_int
import torch
import math
import random
import os
import tempfile
from math import inf, nan
from cmath import nanj
from torch._inductor.hooks import run_intermediate_hooks
from torch._inductor.utils import maybe_profile
from torch._inductor.codegen.memory_planning import _align as align
from torch import device, empty_strided
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.select_algorithm import extern_kernels
import triton
import triton.language as tl
from torch._inductor.runtime.triton_heuristics import start_graph, end_graph
from torch._C import _cuda_getCurrentRawStream as get_raw_stream

aten = torch.ops.aten
inductor_ops = torch.ops.inductor
_quantized = torch.ops._quantized
assert_size_stride = torch._C._dynamo.guards.assert_size_stride
assert_alignment = torch._C._dynamo.guards.assert_alignment
empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu
empty_strided_cpu_pinned = torch._C._dynamo.guards._empty_strided_cpu_pinned
empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda
empty_strided_xpu = torch._C._dynamo.guards._empty_strided_xpu
empty_strided_mtia = torch._C._dynamo.guards._empty_strided_mtia
reinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor
alloc_from_pool = torch.ops.inductor._alloc_from_pool
async_compile = AsyncCompile()
empty_strided_p2p = torch._C._distributed_c10d._SymmetricMemory.empty_strided_p2p


# kernel path: /tmp/tmp8jbttgus/nq/cnqohx65ostuaoqoergshliiaqgqmxhc2a6vsw5snf2t7afkdshw.py
# Topologically Sorted Source Nodes: [embedding, arange, embedding_1, x, layer_norm], Original ATen: [aten.embedding, aten.arange, aten.add, aten.native_layer_norm]
# Source node to ATen node mapping:
#   arange => iota
#   embedding => embedding
#   embedding_1 => embedding_1
#   layer_norm => add_1, add_2, mul, mul_1, rsqrt, sub, var_mean
#   x => add
# Graph fragment:
#   %arg0_1 : Tensor "i64[2, 16][16, 1]cuda:0" = PlaceHolder[target=arg0_1]
#   %arg1_1 : Tensor "f32[616, 64][64, 1]cuda:0" = PlaceHolder[target=arg1_1]
#   %arg2_1 : Tensor "f32[32, 64][64, 1]cuda:0" = PlaceHolder[target=arg2_1]
#   %getitem_1 : Tensor "f32[2, 16, 1][16, 1, 32]cuda:0" = PlaceHolder[target=getitem_1]
#   %buf1 : Tensor "f32[2, 16, 1][16, 1, 32]cuda:0" = PlaceHolder[target=buf1]
#   %arg3_1 : Tensor "f32[64][1]cuda:0" = PlaceHolder[target=arg3_1]
#   %arg4_1 : Tensor "f32[64][1]cuda:0" = PlaceHolder[target=arg4_1]
#   %embedding : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.embedding.default](args = (%arg1_1, %arg0_1), kwargs = {})
#   %iota : Tensor "i64[16][1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.iota.default](args = (16,), kwargs = {start: 0, step: 1, dtype: torch.int64, device: cuda:0, requires_grad: False})
#   %embedding_1 : Tensor "f32[16, 64][64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.embedding.default](args = (%arg2_1, %iota), kwargs = {})
#   %add : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.add.Tensor](args = (%embedding, %embedding_1), kwargs = {})
#   %var_mean : [num_users=2] = call_function[target=torch.ops.aten.var_mean.correction](args = (%add, [2]), kwargs = {correction: 0, keepdim: True})
#   %sub : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%add, %getitem_1), kwargs = {})
#   %add_1 : Tensor "f32[2, 16, 1][16, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%getitem, 1e-05), kwargs = {})
#   %rsqrt : Tensor "f32[2, 16, 1][16, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_1,), kwargs = {})
#   %mul : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%sub, %rsqrt), kwargs = {})
#   %mul_1 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul, %arg3_1), kwargs = {})
#   %add_2 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul_1, %arg4_1), kwargs = {})
#   return %getitem_1,%buf1,%add_2
triton_per_fused_var_mean_add_embedding_embedding_1_iota_add_2_mul_1_mul_sub_rsqrt_add_1_0 = async_compile.triton('triton_per_fused_var_mean_add_embedding_embedding_1_iota_add_2_mul_1_mul_sub_rsqrt_add_1_0', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 32, 'r0_': 64},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*i64', 'in_ptr1': '*fp32', 'in_ptr2': '*fp32', 'in_ptr3': '*fp32', 'in_ptr4': '*fp32', 'out_ptr2': '*fp32', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]], (7,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused_var_mean_add_embedding_embedding_1_iota_add_2_mul_1_mul_sub_rsqrt_add_1_0', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 4, 'num_store': 1, 'num_reduction': 4, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': False, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 256, 'r0_': 20992}}
)
@triton.jit
def triton_per_fused_var_mean_add_embedding_embedding_1_iota_add_2_mul_1_mul_sub_rsqrt_add_1_0(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, out_ptr2, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 32
    r0_numel = 64
    R0_BLOCK: tl.constexpr = 64
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    x3 = xindex
    r0_2 = r0_index
    x0 = (xindex % 16)
    tmp0 = tl.load(in_ptr0 + (x3), xmask, eviction_policy='evict_last')
    tmp7 = tl.load(in_ptr2 + (r0_2 + 64*x0), xmask, eviction_policy='evict_last', other=0.0)
    tmp32 = tl.load(in_ptr3 + (r0_2), None, eviction_policy='evict_last')
    tmp34 = tl.load(in_ptr4 + (r0_2), None, eviction_policy='evict_last')
    tmp1 = tl.full([1, 1], 616, tl.int32)
    tmp2 = tmp0 + tmp1
    tmp3 = tmp0 < 0
    tmp4 = tl.where(tmp3, tmp2, tmp0)
    tl.device_assert(((0 <= tmp4) & (tmp4 < 616)) | ~(xmask), "index out of bounds: 0 <= tmp4 < 616")
    tmp6 = tl.load(in_ptr1 + (r0_2 + 64*tmp4), xmask, other=0.0)
    tmp8 = tmp6 + tmp7
    tmp9 = tl.broadcast_to(tmp8, [XBLOCK, R0_BLOCK])
    tmp11 = tl.where(xmask, tmp9, 0)
    tmp12 = tl.broadcast_to(tmp9, [XBLOCK, R0_BLOCK])
    tmp14 = tl.where(xmask, tmp12, 0)
    tmp15 = tl.sum(tmp14, 1)[:, None].to(tl.float32)
    tmp16 = tl.full([1, 1], 64, tl.int32)
    tmp17 = tmp16.to(tl.float32)
    tmp18 = (tmp15 / tmp17)
    tmp19 = tmp9 - tmp18
    tmp20 = tmp19 * tmp19
    tmp21 = tl.broadcast_to(tmp20, [XBLOCK, R0_BLOCK])
    tmp23 = tl.where(xmask, tmp21, 0)
    tmp24 = tl.sum(tmp23, 1)[:, None].to(tl.float32)
    tmp25 = tmp8 - tmp18
    tmp26 = tl.full([1, 1], 64.0, tl.float32)
    tmp27 = (tmp24 / tmp26)
    tmp28 = tl.full([1, 1], 1e-05, tl.float32)
    tmp29 = tmp27 + tmp28
    tmp30 = libdevice.rsqrt(tmp29)
    tmp31 = tmp25 * tmp30
    tmp33 = tmp31 * tmp32
    tmp35 = tmp33 + tmp34
    tl.store(out_ptr2 + (r0_2 + 64*x3), tmp35, xmask)
''', device_str='cuda')


# kernel path: /tmp/tmp8jbttgus/po/cpo7wviv7gg4w6ls35esspmqewy53mnocaeohwvxcpf4vp5sbwau.py
# Topologically Sorted Source Nodes: [linear, split, view, q_1, matmul], Original ATen: [aten.addmm, aten.view, aten.split, aten.transpose, aten.clone]
# Source node to ATen node mapping:
#   linear => add_tensor_15, view_1
#   matmul => clone
#   q_1 => permute_1
#   split => split
#   view => view_2
# Graph fragment:
#   %arg6_1 : Tensor "f32[192][1]cuda:0" = PlaceHolder[target=arg6_1]
#   %mm_default_15 : Tensor "f32[32, 192][192, 1]cuda:0" = PlaceHolder[target=mm_default_15]
#   %add_tensor_15 : Tensor "f32[32, 192][192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%arg6_1, %mm_default_15), kwargs = {})
#   %view_1 : Tensor "f32[2, 16, 192][3072, 192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%add_tensor_15, [2, 16, 192]), kwargs = {})
#   %split : [num_users=3] = call_function[target=torch.ops.aten.split.Tensor](args = (%view_1, 64, 2), kwargs = {})
#   %view_2 : Tensor "f32[2, 16, 4, 16][3072, 192, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%getitem_2, [2, 16, 4, 16]), kwargs = {})
#   %permute_1 : Tensor "f32[2, 4, 16, 16][3072, 16, 192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_2, [0, 2, 1, 3]), kwargs = {})
#   %clone : Tensor "f32[2, 4, 16, 16][1024, 256, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.clone.default](args = (%expand,), kwargs = {memory_format: torch.contiguous_format})
#   return %clone
triton_poi_fused_clone_permute_1_view_2_split_view_1_add_tensor_15_1 = async_compile.triton('triton_poi_fused_clone_permute_1_view_2_split_view_1_add_tensor_15_1', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 2048}, 
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'in_ptr1': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_clone_permute_1_view_2_split_view_1_add_tensor_15_1', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': False, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 24832}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_clone_permute_1_view_2_split_view_1_add_tensor_15_1(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 2048
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = (xindex % 16)
    x2 = ((xindex // 256) % 4)
    x1 = ((xindex // 16) % 16)
    x3 = xindex // 1024
    x4 = xindex
    tmp0 = tl.load(in_ptr0 + (x0 + 16*x2), xmask, eviction_policy='evict_last')
    tmp1 = tl.load(in_ptr1 + (x0 + 16*x2 + 192*x1 + 3072*x3), xmask)
    tmp2 = tmp0 + tmp1
    tl.store(out_ptr0 + (x4), tmp2, xmask)
''', device_str='cuda')


# kernel path: /tmp/tmp8jbttgus/n5/cn542vhityqxko27rmamxmxc7scubjr5wztniuvomj7xgong7epl.py
# Topologically Sorted Source Nodes: [linear, split, view_1, k_1, transpose_3, matmul], Original ATen: [aten.addmm, aten.view, aten.split, aten.transpose, aten.clone]
# Source node to ATen node mapping:
#   k_1 => permute_2
#   linear => add_tensor_15, view_1
#   matmul => clone_1
#   split => split
#   transpose_3 => permute_4
#   view_1 => view_3
# Graph fragment:
#   %arg6_1 : Tensor "f32[192][1]cuda:0" = PlaceHolder[target=arg6_1]
#   %mm_default_15 : Tensor "f32[32, 192][192, 1]cuda:0" = PlaceHolder[target=mm_default_15]
#   %add_tensor_15 : Tensor "f32[32, 192][192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%arg6_1, %mm_default_15), kwargs = {})
#   %view_1 : Tensor "f32[2, 16, 192][3072, 192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%add_tensor_15, [2, 16, 192]), kwargs = {})
#   %split : [num_users=3] = call_function[target=torch.ops.aten.split.Tensor](args = (%view_1, 64, 2), kwargs = {})
#   %view_3 : Tensor "f32[2, 16, 4, 16][3072, 192, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%getitem_3, [2, 16, 4, 16]), kwargs = {})
#   %permute_2 : Tensor "f32[2, 4, 16, 16][3072, 16, 192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_3, [0, 2, 1, 3]), kwargs = {})
#   %permute_4 : Tensor "f32[2, 4, 16, 16][3072, 16, 1, 192]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%permute_2, [0, 1, 3, 2]), kwargs = {})
#   %clone_1 : Tensor "f32[2, 4, 16, 16][1024, 256, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.clone.default](args = (%expand_1,), kwargs = {memory_format: torch.contiguous_format})
#   return %clone_1
triton_poi_fused_clone_1_permute_4_permute_2_view_3_split_view_1_add_tensor_15_2 = async_compile.triton('triton_poi_fused_clone_1_permute_4_permute_2_view_3_split_view_1_add_tensor_15_2', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'y': 128, 'x': 16}, tile_hint=TileHint.DEFAULT,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'in_ptr1': '*fp32', 'out_ptr0': '*fp32', 'ynumel': 'i32', 'xnumel': 'i32', 'YBLOCK': 'constexpr', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid2D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_clone_1_permute_4_permute_2_view_3_split_view_1_add_tensor_15_2', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': False, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'y': 8448, 'x': 16384}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_clone_1_permute_4_permute_2_view_3_split_view_1_add_tensor_15_2(in_ptr0, in_ptr1, out_ptr0, ynumel, xnumel, YBLOCK : tl.constexpr, XBLOCK : tl.constexpr):
    ynumel = 128
    xnumel = 16
    yoffset = tl.program_id(1) * YBLOCK
    yindex = yoffset + tl.arange(0, YBLOCK)[:, None]
    ymask = yindex < ynumel
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[None, :]
    xmask = xindex < xnumel
    y0 = (yindex % 64)
    x2 = xindex
    y1 = yindex // 64
    y3 = yindex
    tmp0 = tl.load(in_ptr0 + (64 + y0), ymask, eviction_policy='evict_last')
    tmp1 = tl.load(in_ptr1 + (64 + y0 + 192*x2 + 3072*y1), xmask & ymask, eviction_policy='evict_last')
    tmp2 = tmp0 + tmp1
    tl.store(out_ptr0 + (x2 + 16*y3), tmp2, xmask & ymask)
''', device_str='cuda')


# kernel path: /tmp/tmp8jbttgus/gq/cgqj444berbtzl63tt3rthbococl252n2prrpbdp5vd2umn43xne.py
# Topologically Sorted Source Nodes: [getitem_3, masked_fill, matmul, scores, att], Original ATen: [aten.slice, aten.masked_fill, aten.view, aten.mul, prims.prepare_softmax_online, aten.sub, aten.exp, aten._softmax]
# Source node to ATen node mapping:
#   att => div
#   getitem_3 => slice_1, slice_2
#   masked_fill => full_default, where
#   matmul => view_7
#   scores => mul_2
# Graph fragment:
#   %arg7_1 : Tensor "b8[32, 32][32, 1]cuda:0" = PlaceHolder[target=arg7_1]
#   %bmm : Tensor "f32[8, 16, 16][256, 16, 1]cuda:0" = PlaceHolder[target=bmm]
#   %getitem_36 : Tensor "f32[2, 4, 16, 1][64, 16, 1, 128]cuda:0" = PlaceHolder[target=getitem_36]
#   %getitem_37 : Tensor "f32[2, 4, 16, 1][64, 16, 1, 128]cuda:0" = PlaceHolder[target=getitem_37]
#   %slice_1 : Tensor "b8[16, 32][32, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice.Tensor](args = (%arg7_1, 0, 0, 16), kwargs = {})
#   %slice_2 : Tensor "b8[16, 16][32, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice.Tensor](args = (%slice_1, 1, 0, 16), kwargs = {})
#   %full_default : Tensor "f32[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], -inf), kwargs = {dtype: torch.float32, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %view_7 : Tensor "f32[2, 4, 16, 16][1024, 256, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%bmm, [2, 4, 16, 16]), kwargs = {})
#   %mul_2 : Tensor "f32[2, 4, 16, 16][1024, 256, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%view_7, 0.25), kwargs = {})
#   %where : Tensor "f32[2, 4, 16, 16][1024, 256, 16, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.where.self](args = (%slice_2, %full_default, %mul_2), kwargs = {})
#   %prepare_softmax_online_default_3 : [num_users=2] = call_function[target=torch.ops.prims.prepare_softmax_online.default](args = (%where, -1), kwargs = {})
#   %sub_tensor_3 : Tensor "f32[2, 4, 16, 16][1024, 256, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%where, %getitem_36), kwargs = {})
#   %exp_default_3 : Tensor "f32[2, 4, 16, 16][1024, 256, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.exp.default](args = (%sub_tensor_3,), kwargs = {})
#   %div : Tensor "f32[2, 4, 16, 16][1024, 256, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.div.Tensor](args = (%exp_default_3, %getitem_37), kwargs = {})
#   return %getitem_36,%getitem_37,%expand_2
triton_per_fused_prepare_softmax_online_default_3_where_slice_2_slice_1_full_default_mul_2_view_7_div_exp_default_3_sub_tensor_3_3 = async_compile.triton('triton_per_fused_prepare_softmax_online_default_3_where_slice_2_slice_1_full_default_mul_2_view_7_div_exp_default_3_sub_tensor_3_3', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 128, 'r0_': 16},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*fp32', 'in_ptr0': '*i1', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused_prepare_softmax_online_default_3_where_slice_2_slice_1_full_default_mul_2_view_7_div_exp_default_3_sub_tensor_3_3', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 4, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': False, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 0, 'r0_': 24832}}
)
@triton.jit
def triton_per_fused_prepare_softmax_online_default_3_where_slice_2_slice_1_full_default_mul_2_view_7_div_exp_default_3_sub_tensor_3_3(in_out_ptr0, in_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 128
    r0_numel = 16
    R0_BLOCK: tl.constexpr = 16
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_2 = r0_index
    x0 = (xindex % 16)
    x3 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_2 + 32*x0), xmask, eviction_policy='evict_last', other=0.0).to(tl.int1)
    tmp1 = tl.load(in_out_ptr0 + (r0_2 + 16*x3), xmask, other=0.0)
    tmp2 = tl.full([1, 1], 0.25, tl.float32)
    tmp3 = tmp1 * tmp2
    tmp4 = tl.full([1, 1], float("-inf"), tl.float32)
    tmp5 = tl.where(tmp0, tmp4, tmp3)
    tmp6 = tl.broadcast_to(tmp5, [XBLOCK, R0_BLOCK])
    tmp8 = tl.broadcast_to(tmp6, [XBLOCK, R0_BLOCK])
    tmp10 = tl.where(xmask, tmp8, float("-inf"))
    tmp11 = triton_helpers.max2(tmp10, 1)[:, None].to(tl.float32)
    tmp12 = tmp6 - tmp11
    tmp13 = libdevice.exp(tmp12)
    tmp14 = tl.broadcast_to(tmp13, [XBLOCK, R0_BLOCK])
    tmp16 = tl.where(xmask, tmp14, 0)
    tmp17 = tl.sum(tmp16, 1)[:, None].to(tl.float32)
    tmp18 = tmp5 - tmp11
    tmp19 = libdevice.exp(tmp18)
    tmp20 = (tmp19 / tmp17)
    tl.store(in_out_ptr0 + (r0_2 + 16*x3), tmp20, xmask)
''', device_str='cuda')


# kernel path: /tmp/tmp8jbttgus/st/cstzexrx3u7ezg3h7r7lw5mnataazacme33oulbtgwowhnv5kdkj.py
# Topologically Sorted Source Nodes: [linear, split, view_2, v_1, matmul_1], Original ATen: [aten.addmm, aten.view, aten.split, aten.transpose, aten.clone]
# Source node to ATen node mapping:
#   linear => add_tensor_15, view_1
#   matmul_1 => clone_2
#   split => split
#   v_1 => permute_3
#   view_2 => view_4
# Graph fragment:
#   %arg6_1 : Tensor "f32[192][1]cuda:0" = PlaceHolder[target=arg6_1]
#   %mm_default_15 : Tensor "f32[32, 192][192, 1]cuda:0" = PlaceHolder[target=mm_default_15]
#   %add_tensor_15 : Tensor "f32[32, 192][192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%arg6_1, %mm_default_15), kwargs = {})
#   %view_1 : Tensor "f32[2, 16, 192][3072, 192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%add_tensor_15, [2, 16, 192]), kwargs = {})
#   %split : [num_users=3] = call_function[target=torch.ops.aten.split.Tensor](args = (%view_1, 64, 2), kwargs = {})
#   %view_4 : Tensor "f32[2, 16, 4, 16][3072, 192, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%getitem_4, [2, 16, 4, 16]), kwargs = {})
#   %permute_3 : Tensor "f32[2, 4, 16, 16][3072, 16, 192, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_4, [0, 2, 1, 3]), kwargs = {})
#   %clone_2 : Tensor "f32[2, 4, 16, 16][1024, 256, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.clone.default](args = (%expand_3,), kwargs = {memory_format: torch.contiguous_format})
#   return %clone_2
triton_poi_fused_clone_2_permute_3_view_4_split_view_1_add_tensor_15_4 = async_compile.triton('triton_poi_fused_clone_2_permute_3_view_4_split_view_1_add_tensor_15_4', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 2048}, 
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'in_ptr1': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_clone_2_permute_3_view_4_split_view_1_add_tensor_15_4', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': False, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 24832}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_clone_2_permute_3_view_4_split_view_1_add_tensor_15_4(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 2048
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = (xindex % 16)
    x2 = ((xindex // 256) % 4)
    x1 = ((xindex // 16) % 16)
    x3 = xindex // 1024
    x4 = xindex
    tmp0 = tl.load(in_ptr0 + (128 + x0 + 16*x2), xmask, eviction_policy='evict_last')
    tmp1 = tl.load(in_ptr1 + (128 + x0 + 16*x2 + 192*x1 + 3072*x3), xmask)
    tmp2 = tmp0 + tmp1
    tl.store(out_ptr0 + (x4), tmp2, xmask)
''', device_str='cuda')


# kernel path: /tmp/tmp8jbttgus/e4/ce4zuor2tfybj7gvhmojk3ohrd5wvuvk2clssnpervbzkfknivbl.py
# Topologically Sorted Source Nodes: [matmul_1, transpose_4, y], Original ATen: [aten.view, aten.transpose, aten.clone]
# Source node to ATen node mapping:
#   matmul_1 => view_10
#   transpose_4 => permute_5
#   y => clone_3
# Graph fragment:
#   %bmm_1 : Tensor "f32[8, 16, 16][256, 16, 1]cuda:0" = PlaceHolder[target=bmm_1]
#   %view_10 : Tensor "f32[2, 4, 16, 16][1024, 256, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%bmm_1, [2, 4, 16, 16]), kwargs = {})
#   %permute_5 : Tensor "f32[2, 16, 4, 16][1024, 16, 256, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_10, [0, 2, 1, 3]), kwargs = {})
#   %clone_3 : Tensor "f32[2, 16, 4, 16][1024, 64, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.clone.default](args = (%permute_5,), kwargs = {memory_format: torch.contiguous_format})
#   return %clone_3
triton_poi_fused_clone_3_permute_5_view_10_5 = async_compile.triton('triton_poi_fused_clone_3_permute_5_view_10_5', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 2048}, 
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_clone_3_permute_5_view_10_5', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 1, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': False, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 24576}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_clone_3_permute_5_view_10_5(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 2048
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = (xindex % 16)
    x1 = ((xindex // 16) % 4)
    x2 = ((xindex // 64) % 16)
    x3 = xindex // 1024
    x4 = xindex
    tmp0 = tl.load(in_ptr0 + (x0 + 16*x2 + 256*x1 + 1024*x3), xmask)
    tl.store(out_ptr0 + (x4), tmp0, xmask)
''', device_str='cuda')


# kernel path: /tmp/tmp8jbttgus/sp/cspxgiopprs3mfqhbexjnwrg2mrab65xydscdnhrvva42whdfkt3.py
# Topologically Sorted Source Nodes: [embedding, arange, embedding_1, x, linear_1, x_1, layer_norm_1], Original ATen: [aten.embedding, aten.arange, aten.add, aten.addmm, aten.view, aten.native_layer_norm]
# Source node to ATen node mapping:
#   arange => iota
#   embedding => embedding
#   embedding_1 => embedding_1
#   layer_norm_1 => add_4, add_5, mul_3, mul_4, rsqrt_1, sub_2, var_mean_1
#   linear_1 => add_tensor_14, view_13
#   x => add
#   x_1 => add_3
# Graph fragment:
#   %arg0_1 : Tensor "i64[2, 16][16, 1]cuda:0" = PlaceHolder[target=arg0_1]
#   %arg1_1 : Tensor "f32[616, 64][64, 1]cuda:0" = PlaceHolder[target=arg1_1]
#   %arg2_1 : Tensor "f32[32, 64][64, 1]cuda:0" = PlaceHolder[target=arg2_1]
#   %arg9_1 : Tensor "f32[64][1]cuda:0" = PlaceHolder[target=arg9_1]
#   %mm_default_14 : Tensor "f32[32, 64][64, 1]cuda:0" = PlaceHolder[target=mm_default_14]
#   %add_3 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0" = PlaceHolder[target=add_3]
#   %getitem_6 : Tensor "f32[2, 16, 1][16, 1, 32]cuda:0" = PlaceHolder[target=getitem_6]
#   %buf17 : Tensor "f32[2, 16, 1][16, 1, 32]cuda:0" = PlaceHolder[target=buf17]
#   %arg10_1 : Tensor "f32[64][1]cuda:0" = PlaceHolder[target=arg10_1]
#   %arg11_1 : Tensor "f32[64][1]cuda:0" = PlaceHolder[target=arg11_1]
#   %embedding : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.embedding.default](args = (%arg1_1, %arg0_1), kwargs = {})
#   %iota : Tensor "i64[16][1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.iota.default](args = (16,), kwargs = {start: 0, step: 1, dtype: torch.int64, device: cuda:0, requires_grad: False})
#   %embedding_1 : Tensor "f32[16, 64][64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.embedding.default](args = (%arg2_1, %iota), kwargs = {})
#   %add : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.add.Tensor](args = (%embedding, %embedding_1), kwargs = {})
#   %add_tensor_14 : Tensor "f32[32, 64][64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%arg9_1, %mm_default_14), kwargs = {})
#   %view_13 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%add_tensor_14, [2, 16, 64]), kwargs = {})
#   %add_3 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.add.Tensor](args = (%add, %view_13), kwargs = {})
#   %var_mean_1 : [num_users=2] = call_function[target=torch.ops.aten.var_mean.correction](args = (%add_3, [2]), kwargs = {correction: 0, keepdim: True})
#   %sub_2 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%add_3, %getitem_6), kwargs = {})
#   %add_4 : Tensor "f32[2, 16, 1][16, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%getitem_5, 1e-05), kwargs = {})
#   %rsqrt_1 : Tensor "f32[2, 16, 1][16, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_4,), kwargs = {})
#   %mul_3 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%sub_2, %rsqrt_1), kwargs = {})
#   %mul_4 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_3, %arg10_1), kwargs = {})
#   %add_5 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul_4, %arg11_1), kwargs = {})
#   return %add_3,%getitem_6,%buf17,%add_5
triton_per_fused_add_3_add_embedding_embedding_1_iota_view_13_add_tensor_14_var_mean_1_add_5_mul_4_mul_3_sub_2_rsqrt_1_add_4_6 = async_compile.triton('triton_per_fused_add_3_add_embedding_embedding_1_iota_view_13_add_tensor_14_var_mean_1_add_5_mul_4_mul_3_sub_2_rsqrt_1_add_4_6', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 32, 'r0_': 64},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*fp32', 'in_ptr0': '*i64', 'in_ptr1': '*fp32', 'in_ptr2': '*fp32', 'in_ptr3': '*fp32', 'in_ptr4': '*fp32', 'in_ptr5': '*fp32', 'out_ptr2': '*fp32', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]], (7,): [['tt.divisibility', 16]], (8,): [['tt.divisibility', 16]], (9,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused_add_3_add_embedding_embedding_1_iota_view_13_add_tensor_14_var_mean_1_add_5_mul_4_mul_3_sub_2_rsqrt_1_add_4_6', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 6, 'num_store': 2, 'num_reduction': 4, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': False, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 256, 'r0_': 45824}}
)
@triton.jit
def triton_per_fused_add_3_add_embedding_embedding_1_iota_view_13_add_tensor_14_var_mean_1_add_5_mul_4_mul_3_sub_2_rsqrt_1_add_4_6(in_out_ptr0, in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, in_ptr5, out_ptr2, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 32
    r0_numel = 64
    R0_BLOCK: tl.constexpr = 64
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    x3 = xindex
    r0_2 = r0_index
    x0 = (xindex % 16)
    tmp0 = tl.load(in_ptr0 + (x3), xmask, eviction_policy='evict_last')
    tmp7 = tl.load(in_ptr2 + (r0_2 + 64*x0), xmask, eviction_policy='evict_last', other=0.0)
    tmp9 = tl.load(in_ptr3 + (r0_2), None, eviction_policy='evict_last')
    tmp10 = tl.load(in_out_ptr0 + (r0_2 + 64*x3), xmask, other=0.0)
    tmp36 = tl.load(in_ptr4 + (r0_2), None, eviction_policy='evict_last')
    tmp38 = tl.load(in_ptr5 + (r0_2), None, eviction_policy='evict_last')
    tmp1 = tl.full([1, 1], 616, tl.int32)
    tmp2 = tmp0 + tmp1
    tmp3 = tmp0 < 0
    tmp4 = tl.where(tmp3, tmp2, tmp0)
    tl.device_assert(((0 <= tmp4) & (tmp4 < 616)) | ~(xmask), "index out of bounds: 0 <= tmp4 < 616")
    tmp6 = tl.load(in_ptr1 + (r0_2 + 64*tmp4), xmask, other=0.0)
    tmp8 = tmp6 + tmp7
    tmp11 = tmp9 + tmp10
    tmp12 = tmp8 + tmp11
    tmp13 = tl.broadcast_to(tmp12, [XBLOCK, R0_BLOCK])
    tmp15 = tl.where(xmask, tmp13, 0)
    tmp16 = tl.broadcast_to(tmp13, [XBLOCK, R0_BLOCK])
    tmp18 = tl.where(xmask, tmp16, 0)
    tmp19 = tl.sum(tmp18, 1)[:, None].to(tl.float32)
    tmp20 = tl.full([1, 1], 64, tl.int32)
    tmp21 = tmp20.to(tl.float32)
    tmp22 = (tmp19 / tmp21)
    tmp23 = tmp13 - tmp22
    tmp24 = tmp23 * tmp23
    tmp25 = tl.broadcast_to(tmp24, [XBLOCK, R0_BLOCK])
    tmp27 = tl.where(xmask, tmp25, 0)
    tmp28 = tl.sum(tmp27, 1)[:, None].to(tl.float32)
    tmp29 = tmp12 - tmp22
    tmp30 = tl.full([1, 1], 64.0, tl.float32)
    tmp31 = (tmp28 / tmp30)
    tmp32 = tl.full([1, 1], 1e-05, tl.float32)
    tmp33 = tmp31 + tmp32
    tmp34 = libdevice.rsqrt(tmp33)
    tmp35 = tmp29 * tmp34
    tmp37 = tmp35 * tmp36
    tmp39 = tmp37 + tmp38
    tl.store(in_out_ptr0 + (r0_2 + 64*x3), tmp12, xmask)
    tl.store(out_ptr2 + (r0_2 + 64*x3), tmp39, xmask)
''', device_str='cuda')


# kernel path: /tmp/tmp8jbttgus/w6/cw6qrrydgrxzhvyo7gauqvyx2hl4hvchquxwihac24cd7uvqal4o.py
# Topologically Sorted Source Nodes: [linear_2, gelu], Original ATen: [aten.addmm, aten.view, aten.gelu]
# Source node to ATen node mapping:
#   gelu => add_6, add_7, mul_10, mul_5, mul_6, mul_7, mul_8, mul_9, tanh
#   linear_2 => add_tensor_13, view_15
# Graph fragment:
#   %arg13_1 : Tensor "f32[256][1]cuda:0" = PlaceHolder[target=arg13_1]
#   %mm_default_13 : Tensor "f32[32, 256][256, 1]cuda:0" = PlaceHolder[target=mm_default_13]
#   %add_tensor_13 : Tensor "f32[32, 256][256, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%arg13_1, %mm_default_13), kwargs = {})
#   %view_15 : Tensor "f32[2, 16, 256][4096, 256, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.aten.reshape.default](args = (%add_tensor_13, [2, 16, 256]), kwargs = {})
#   %mul_9 : Tensor "f32[2, 16, 256][4096, 256, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%view_15, 0.5), kwargs = {})
#   %mul_5 : Tensor "f32[2, 16, 256][4096, 256, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%view_15, %view_15), kwargs = {})
#   %mul_6 : Tensor "f32[2, 16, 256][4096, 256, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_5, %view_15), kwargs = {})
#   %mul_7 : Tensor "f32[2, 16, 256][4096, 256, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_6, 0.044715), kwargs = {})
#   %add_6 : Tensor "f32[2, 16, 256][4096, 256, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%view_15, %mul_7), kwargs = {})
#   %mul_8 : Tensor "f32[2, 16, 256][4096, 256, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%add_6, 0.7978845608028654), kwargs = {})
#   %tanh : Tensor "f32[2, 16, 256][4096, 256, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.tanh.default](args = (%mul_8,), kwargs = {})
#   %add_7 : Tensor "f32[2, 16, 256][4096, 256, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%tanh, 1), kwargs = {})
#   %mul_10 : Tensor "f32[2, 16, 256][4096, 256, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_9, %add_7), kwargs = {})
#   return %mul_10
triton_poi_fused_mul_10_mul_9_view_15_add_tensor_13_add_7_tanh_mul_8_add_6_mul_7_mul_6_mul_5_7 = async_compile.triton('triton_poi_fused_mul_10_mul_9_view_15_add_tensor_13_add_7_tanh_mul_8_add_6_mul_7_mul_6_mul_5_7', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 8192}, 
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*fp32', 'in_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_mul_10_mul_9_view_15_add_tensor_13_add_7_tanh_mul_8_add_6_mul_7_mul_6_mul_5_7', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': False, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 99328}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_mul_10_mul_9_view_15_add_tensor_13_add_7_tanh_mul_8_add_6_mul_7_mul_6_mul_5_7(in_out_ptr0, in_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 8192
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)[:]
    x0 = (xindex % 256)
    x2 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), None, eviction_policy='evict_last')
    tmp1 = tl.load(in_out_ptr0 + (x2), None)
    tmp2 = tmp0 + tmp1
    tmp3 = tl.full([1], 0.5, tl.float32)
    tmp4 = tmp2 * tmp3
    tmp5 = tmp2 * tmp2
    tmp6 = tmp5 * tmp2
    tmp7 = tl.full([1], 0.044715, tl.float32)
    tmp8 = tmp6 * tmp7
    tmp9 = tmp2 + tmp8
    tmp10 = tl.full([1], 0.7978845608028654, tl.float32)
    tmp11 = tmp9 * tmp10
    tmp12 = libdevice.tanh(tmp11)
    tmp13 = tl.full([1], 1.0, tl.float32)
    tmp14 = tmp12 + tmp13
    tmp15 = tmp4 * tmp14
    tl.store(in_out_ptr0 + (x2), tmp15, None)
''', device_str='cuda')


# kernel path: /tmp/tmp8jbttgus/zc/czcwdarsdkdsywrco7rvuxn4kydmhlfur2dfzdqznehvi3nbxsvl.py
# Topologically Sorted Source Nodes: [linear_3, x_2, layer_norm_2], Original ATen: [aten.addmm, aten.view, aten.add, aten.native_layer_norm]
# Source node to ATen node mapping:
#   layer_norm_2 => add_10, add_9, mul_11, mul_12, rsqrt_2, sub_3, var_mean_2
#   linear_3 => add_tensor_12, view_17
#   x_2 => add_8
# Graph fragment:
#   %add_3 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0" = PlaceHolder[target=add_3]
#   %arg15_1 : Tensor "f32[64][1]cuda:0" = PlaceHolder[target=arg15_1]
#   %mm_default_12 : Tensor "f32[32, 64][64, 1]cuda:0" = PlaceHolder[target=mm_default_12]
#   %getitem_8 : Tensor "f32[2, 16, 1][16, 1, 32]cuda:0" = PlaceHolder[target=getitem_8]
#   %buf24 : Tensor "f32[2, 16, 1][16, 1, 32]cuda:0" = PlaceHolder[target=buf24]
#   %arg16_1 : Tensor "f32[64][1]cuda:0" = PlaceHolder[target=arg16_1]
#   %arg17_1 : Tensor "f32[64][1]cuda:0" = PlaceHolder[target=arg17_1]
#   %add_tensor_12 : Tensor "f32[32, 64][64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%arg15_1, %mm_default_12), kwargs = {})
#   %view_17 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%add_tensor_12, [2, 16, 64]), kwargs = {})
#   %add_8 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_3, %view_17), kwargs = {})
#   %var_mean_2 : [num_users=2] = call_function[target=torch.ops.aten.var_mean.correction](args = (%add_8, [2]), kwargs = {correction: 0, keepdim: True})
#   %sub_3 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%add_8, %getitem_8), kwargs = {})
#   %add_9 : Tensor "f32[2, 16, 1][16, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%getitem_7, 1e-05), kwargs = {})
#   %rsqrt_2 : Tensor "f32[2, 16, 1][16, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_9,), kwargs = {})
#   %mul_11 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%sub_3, %rsqrt_2), kwargs = {})
#   %mul_12 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_11, %arg16_1), kwargs = {})
#   %add_10 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul_12, %arg17_1), kwargs = {})
#   return %getitem_8,%buf24,%add_10
triton_per_fused_var_mean_2_add_8_view_17_add_tensor_12_add_10_mul_12_mul_11_sub_3_rsqrt_2_add_9_8 = async_compile.triton('triton_per_fused_var_mean_2_add_8_view_17_add_tensor_12_add_10_mul_12_mul_11_sub_3_rsqrt_2_add_9_8', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 32, 'r0_': 64},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'in_ptr1': '*fp32', 'in_ptr2': '*fp32', 'in_ptr3': '*fp32', 'in_ptr4': '*fp32', 'out_ptr2': '*fp32', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]], (7,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused_var_mean_2_add_8_view_17_add_tensor_12_add_10_mul_12_mul_11_sub_3_rsqrt_2_add_9_8', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 5, 'num_store': 1, 'num_reduction': 4, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': False, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 0, 'r0_': 33536}}
)
@triton.jit
def triton_per_fused_var_mean_2_add_8_view_17_add_tensor_12_add_10_mul_12_mul_11_sub_3_rsqrt_2_add_9_8(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, out_ptr2, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 32
    r0_numel = 64
    R0_BLOCK: tl.constexpr = 64
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + 64*x0), xmask, other=0.0)
    tmp1 = tl.load(in_ptr1 + (r0_1), None, eviction_policy='evict_last')
    tmp2 = tl.load(in_ptr2 + (r0_1 + 64*x0), xmask, other=0.0)
    tmp28 = tl.load(in_ptr3 + (r0_1), None, eviction_policy='evict_last')
    tmp30 = tl.load(in_ptr4 + (r0_1), None, eviction_policy='evict_last')
    tmp3 = tmp1 + tmp2
    tmp4 = tmp0 + tmp3
    tmp5 = tl.broadcast_to(tmp4, [XBLOCK, R0_BLOCK])
    tmp7 = tl.where(xmask, tmp5, 0)
    tmp8 = tl.broadcast_to(tmp5, [XBLOCK, R0_BLOCK])
    tmp10 = tl.where(xmask, tmp8, 0)
    tmp11 = tl.sum(tmp10, 1)[:, None].to(tl.float32)
    tmp12 = tl.full([1, 1], 64, tl.int32)
    tmp13 = tmp12.to(tl.float32)
    tmp14 = (tmp11 / tmp13)
    tmp15 = tmp5 - tmp14
    tmp16 = tmp15 * tmp15
    tmp17 = tl.broadcast_to(tmp16, [XBLOCK, R0_BLOCK])
    tmp19 = tl.where(xmask, tmp17, 0)
    tmp20 = tl.sum(tmp19, 1)[:, None].to(tl.float32)
    tmp21 = tmp4 - tmp14
    tmp22 = tl.full([1, 1], 64.0, tl.float32)
    tmp23 = (tmp20 / tmp22)
    tmp24 = tl.full([1, 1], 1e-05, tl.float32)
    tmp25 = tmp23 + tmp24
    tmp26 = libdevice.rsqrt(tmp25)
    tmp27 = tmp21 * tmp26
    tmp29 = tmp27 * tmp28
    tmp31 = tmp29 + tmp30
    tl.store(out_ptr2 + (r0_1 + 64*x0), tmp31, xmask)
''', device_str='cuda')


# kernel path: /tmp/tmp8jbttgus/jf/cjf22gdsjga6lhvnkc3tmrm7zvkjkldxd3zjua5tfe66shhnuumc.py
# Topologically Sorted Source Nodes: [linear_3, x_2, linear_5, x_3, layer_norm_3], Original ATen: [aten.addmm, aten.view, aten.add, aten.native_layer_norm]
# Source node to ATen node mapping:
#   layer_norm_3 => add_12, add_13, mul_14, mul_15, rsqrt_3, sub_5, var_mean_3
#   linear_3 => add_tensor_12, view_17
#   linear_5 => add_tensor_10, view_31
#   x_2 => add_8
#   x_3 => add_11
# Graph fragment:
#   %add_3 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0" = PlaceHolder[target=add_3]
#   %arg15_1 : Tensor "f32[64][1]cuda:0" = PlaceHolder[target=arg15_1]
#   %mm_default_12 : Tensor "f32[32, 64][64, 1]cuda:0" = PlaceHolder[target=mm_default_12]
#   %arg22_1 : Tensor "f32[64][1]cuda:0" = PlaceHolder[target=arg22_1]
#   %mm_default_10 : Tensor "f32[32, 64][64, 1]cuda:0" = PlaceHolder[target=mm_default_10]
#   %add_11 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0" = PlaceHolder[target=add_11]
#   %getitem_13 : Tensor "f32[2, 16, 1][16, 1, 32]cuda:0" = PlaceHolder[target=getitem_13]
#   %buf40 : Tensor "f32[2, 16, 1][16, 1, 32]cuda:0" = PlaceHolder[target=buf40]
#   %arg23_1 : Tensor "f32[64][1]cuda:0" = PlaceHolder[target=arg23_1]
#   %arg24_1 : Tensor "f32[64][1]cuda:0" = PlaceHolder[target=arg24_1]
#   %add_tensor_12 : Tensor "f32[32, 64][64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%arg15_1, %mm_default_12), kwargs = {})
#   %view_17 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%add_tensor_12, [2, 16, 64]), kwargs = {})
#   %add_8 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_3, %view_17), kwargs = {})
#   %add_tensor_10 : Tensor "f32[32, 64][64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%arg22_1, %mm_default_10), kwargs = {})
#   %view_31 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%add_tensor_10, [2, 16, 64]), kwargs = {})
#   %add_11 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_8, %view_31), kwargs = {})
#   %var_mean_3 : [num_users=2] = call_function[target=torch.ops.aten.var_mean.correction](args = (%add_11, [2]), kwargs = {correction: 0, keepdim: True})
#   %sub_5 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%add_11, %getitem_13), kwargs = {})
#   %add_12 : Tensor "f32[2, 16, 1][16, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%getitem_12, 1e-05), kwargs = {})
#   %rsqrt_3 : Tensor "f32[2, 16, 1][16, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_12,), kwargs = {})
#   %mul_14 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%sub_5, %rsqrt_3), kwargs = {})
#   %mul_15 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_14, %arg23_1), kwargs = {})
#   %add_13 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul_15, %arg24_1), kwargs = {})
#   return %add_11,%getitem_13,%buf40,%add_13
triton_per_fused_add_11_add_8_view_17_add_tensor_12_view_31_add_tensor_10_var_mean_3_add_13_mul_15_mul_14_sub_5_rsqrt_3_add_12_9 = async_compile.triton('triton_per_fused_add_11_add_8_view_17_add_tensor_12_view_31_add_tensor_10_var_mean_3_add_13_mul_15_mul_14_sub_5_rsqrt_3_add_12_9', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 32, 'r0_': 64},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*fp32', 'in_ptr0': '*fp32', 'in_ptr1': '*fp32', 'in_ptr2': '*fp32', 'in_ptr3': '*fp32', 'in_ptr4': '*fp32', 'in_ptr5': '*fp32', 'out_ptr2': '*fp32', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]], (7,): [['tt.divisibility', 16]], (8,): [['tt.divisibility', 16]], (9,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused_add_11_add_8_view_17_add_tensor_12_view_31_add_tensor_10_var_mean_3_add_13_mul_15_mul_14_sub_5_rsqrt_3_add_12_9', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 7, 'num_store': 2, 'num_reduction': 4, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': False, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 0, 'r0_': 58368}}
)
@triton.jit
def triton_per_fused_add_11_add_8_view_17_add_tensor_12_view_31_add_tensor_10_var_mean_3_add_13_mul_15_mul_14_sub_5_rsqrt_3_add_12_9(in_out_ptr0, in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, in_ptr5, out_ptr2, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 32
    r0_numel = 64
    R0_BLOCK: tl.constexpr = 64
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_out_ptr0 + (r0_1 + 64*x0), xmask, other=0.0)
    tmp1 = tl.load(in_ptr0 + (r0_1), None, eviction_policy='evict_last')
    tmp2 = tl.load(in_ptr1 + (r0_1 + 64*x0), xmask, other=0.0)
    tmp5 = tl.load(in_ptr2 + (r0_1), None, eviction_policy='evict_last')
    tmp6 = tl.load(in_ptr3 + (r0_1 + 64*x0), xmask, other=0.0)
    tmp32 = tl.load(in_ptr4 + (r0_1), None, eviction_policy='evict_last')
    tmp34 = tl.load(in_ptr5 + (r0_1), None, eviction_policy='evict_last')
    tmp3 = tmp1 + tmp2
    tmp4 = tmp0 + tmp3
    tmp7 = tmp5 + tmp6
    tmp8 = tmp4 + tmp7
    tmp9 = tl.broadcast_to(tmp8, [XBLOCK, R0_BLOCK])
    tmp11 = tl.where(xmask, tmp9, 0)
    tmp12 = tl.broadcast_to(tmp9, [XBLOCK, R0_BLOCK])
    tmp14 = tl.where(xmask, tmp12, 0)
    tmp15 = tl.sum(tmp14, 1)[:, None].to(tl.float32)
    tmp16 = tl.full([1, 1], 64, tl.int32)
    tmp17 = tmp16.to(tl.float32)
    tmp18 = (tmp15 / tmp17)
    tmp19 = tmp9 - tmp18
    tmp20 = tmp19 * tmp19
    tmp21 = tl.broadcast_to(tmp20, [XBLOCK, R0_BLOCK])
    tmp23 = tl.where(xmask, tmp21, 0)
    tmp24 = tl.sum(tmp23, 1)[:, None].to(tl.float32)
    tmp25 = tmp8 - tmp18
    tmp26 = tl.full([1, 1], 64.0, tl.float32)
    tmp27 = (tmp24 / tmp26)
    tmp28 = tl.full([1, 1], 1e-05, tl.float32)
    tmp29 = tmp27 + tmp28
    tmp30 = libdevice.rsqrt(tmp29)
    tmp31 = tmp25 * tmp30
    tmp33 = tmp31 * tmp32
    tmp35 = tmp33 + tmp34
    tl.store(in_out_ptr0 + (r0_1 + 64*x0), tmp8, xmask)
    tl.store(out_ptr2 + (r0_1 + 64*x0), tmp35, xmask)
''', device_str='cuda')


# kernel path: /tmp/tmp8jbttgus/ze/cze6yq37ndqft2xyytdq2bbxy2cjmz72jog25tinc72fwkmzdesi.py
# Topologically Sorted Source Nodes: [linear_15, x_8, layer_norm_8], Original ATen: [aten.addmm, aten.view, aten.add, aten.native_layer_norm]
# Source node to ATen node mapping:
#   layer_norm_8 => add_33, add_34, mul_44, mul_45, rsqrt_8, sub_12, var_mean_8
#   linear_15 => add_tensor, view_71
#   x_8 => add_32
# Graph fragment:
#   %add_27 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0" = PlaceHolder[target=add_27]
#   %arg54_1 : Tensor "f32[64][1]cuda:0" = PlaceHolder[target=arg54_1]
#   %mm_default : Tensor "f32[32, 64][64, 1]cuda:0" = PlaceHolder[target=mm_default]
#   %getitem_29 : Tensor "f32[2, 16, 1][16, 1, 32]cuda:0" = PlaceHolder[target=getitem_29]
#   %buf93 : Tensor "f32[2, 16, 1][16, 1, 32]cuda:0" = PlaceHolder[target=buf93]
#   %arg55_1 : Tensor "f32[64][1]cuda:0" = PlaceHolder[target=arg55_1]
#   %arg56_1 : Tensor "f32[64][1]cuda:0" = PlaceHolder[target=arg56_1]
#   %add_tensor : Tensor "f32[32, 64][64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%arg54_1, %mm_default), kwargs = {})
#   %view_71 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%add_tensor, [2, 16, 64]), kwargs = {})
#   %add_32 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_27, %view_71), kwargs = {})
#   %var_mean_8 : [num_users=2] = call_function[target=torch.ops.aten.var_mean.correction](args = (%add_32, [2]), kwargs = {correction: 0, keepdim: True})
#   %sub_12 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%add_32, %getitem_29), kwargs = {})
#   %add_33 : Tensor "f32[2, 16, 1][16, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%getitem_28, 1e-05), kwargs = {})
#   %rsqrt_8 : Tensor "f32[2, 16, 1][16, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_33,), kwargs = {})
#   %mul_44 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%sub_12, %rsqrt_8), kwargs = {})
#   %mul_45 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_44, %arg55_1), kwargs = {})
#   %add_34 : Tensor "f32[2, 16, 64][1024, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul_45, %arg56_1), kwargs = {})
#   return %getitem_29,%buf93,%add_34
triton_per_fused_var_mean_8_add_32_view_71_add_tensor_add_34_mul_45_mul_44_sub_12_rsqrt_8_add_33_10 = async_compile.triton('triton_per_fused_var_mean_8_add_32_view_71_add_tensor_add_34_mul_45_mul_44_sub_12_rsqrt_8_add_33_10', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 32, 'r0_': 64},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*fp32', 'in_ptr0': '*fp32', 'in_ptr1': '*fp32', 'in_ptr2': '*fp32', 'in_ptr3': '*fp32', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused_var_mean_8_add_32_view_71_add_tensor_add_34_mul_45_mul_44_sub_12_rsqrt_8_add_33_10', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 5, 'num_store': 1, 'num_reduction': 4, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': False, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 0, 'r0_': 33536}}
)
@triton.jit
def triton_per_fused_var_mean_8_add_32_view_71_add_tensor_add_34_mul_45_mul_44_sub_12_rsqrt_8_add_33_10(in_out_ptr0, in_ptr0, in_ptr1, in_ptr2, in_ptr3, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 32
    r0_numel = 64
    R0_BLOCK: tl.constexpr = 64
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_out_ptr0 + (r0_1 + 64*x0), xmask, other=0.0)
    tmp1 = tl.load(in_ptr0 + (r0_1), None, eviction_policy='evict_last')
    tmp2 = tl.load(in_ptr1 + (r0_1 + 64*x0), xmask, other=0.0)
    tmp28 = tl.load(in_ptr2 + (r0_1), None, eviction_policy='evict_last')
    tmp30 = tl.load(in_ptr3 + (r0_1), None, eviction_policy='evict_last')
    tmp3 = tmp1 + tmp2
    tmp4 = tmp0 + tmp3
    tmp5 = tl.broadcast_to(tmp4, [XBLOCK, R0_BLOCK])
    tmp7 = tl.where(xmask, tmp5, 0)
    tmp8 = tl.broadcast_to(tmp5, [XBLOCK, R0_BLOCK])
    tmp10 = tl.where(xmask, tmp8, 0)
    tmp11 = tl.sum(tmp10, 1)[:, None].to(tl.float32)
    tmp12 = tl.full([1, 1], 64, tl.int32)
    tmp13 = tmp12.to(tl.float32)
    tmp14 = (tmp11 / tmp13)
    tmp15 = tmp5 - tmp14
    tmp16 = tmp15 * tmp15
    tmp17 = tl.broadcast_to(tmp16, [XBLOCK, R0_BLOCK])
    tmp19 = tl.where(xmask, tmp17, 0)
    tmp20 = tl.sum(tmp19, 1)[:, None].to(tl.float32)
    tmp21 = tmp4 - tmp14
    tmp22 = tl.full([1, 1], 64.0, tl.float32)
    tmp23 = (tmp20 / tmp22)
    tmp24 = tl.full([1, 1], 1e-05, tl.float32)
    tmp25 = tmp23 + tmp24
    tmp26 = libdevice.rsqrt(tmp25)
    tmp27 = tmp21 * tmp26
    tmp29 = tmp27 * tmp28
    tmp31 = tmp29 + tmp30
    tl.store(in_out_ptr0 + (r0_1 + 64*x0), tmp31, xmask)
''', device_str='cuda')


async_compile.wait(globals())
del async_compile

class Runner:
    def __init__(self, partitions):
        self.partitions = partitions

    def recursively_apply_fns(self, fns):
        new_callables = []
        for fn, c in zip(fns, self.partitions):
            new_callables.append(fn(c))
        self.partitions = new_callables

    def call(self, args):
        arg0_1, arg1_1, arg2_1, arg3_1, arg4_1, arg5_1, arg6_1, arg7_1, arg8_1, arg9_1, arg10_1, arg11_1, arg12_1, arg13_1, arg14_1, arg15_1, arg16_1, arg17_1, arg18_1, arg19_1, arg20_1, arg21_1, arg22_1, arg23_1, arg24_1, arg25_1, arg26_1, arg27_1, arg28_1, arg29_1, arg30_1, arg31_1, arg32_1, arg33_1, arg34_1, arg35_1, arg36_1, arg37_1, arg38_1, arg39_1, arg40_1, arg41_1, arg42_1, arg43_1, arg44_1, arg45_1, arg46_1, arg47_1, arg48_1, arg49_1, arg50_1, arg51_1, arg52_1, arg53_1, arg54_1, arg55_1, arg56_1, arg57_1, arg58_1 = args
        args.clear()
        assert_size_stride(arg0_1, (2, 16), (16, 1))
        assert_size_stride(arg1_1, (616, 64), (64, 1))
        assert_size_stride(arg2_1, (32, 64), (64, 1))
        assert_size_stride(arg3_1, (64, ), (1, ))
        assert_size_stride(arg4_1, (64, ), (1, ))
        assert_size_stride(arg5_1, (192, 64), (64, 1))
        assert_size_stride(arg6_1, (192, ), (1, ))
        assert_size_stride(arg7_1, (32, 32), (32, 1))
        assert_size_stride(arg8_1, (64, 64), (64, 1))
        assert_size_stride(arg9_1, (64, ), (1, ))
        assert_size_stride(arg10_1, (64, ), (1, ))
        assert_size_stride(arg11_1, (64, ), (1, ))
        assert_size_stride(arg12_1, (256, 64), (64, 1))
        assert_size_stride(arg13_1, (256, ), (1, ))
        assert_size_stride(arg14_1, (64, 256), (256, 1))
        assert_size_stride(arg15_1, (64, ), (1, ))
        assert_size_stride(arg16_1, (64, ), (1, ))
        assert_size_stride(arg17_1, (64, ), (1, ))
        assert_size_stride(arg18_1, (192, 64), (64, 1))
        assert_size_stride(arg19_1, (192, ), (1, ))
        assert_size_stride(arg20_1, (32, 32), (32, 1))
        assert_size_stride(arg21_1, (64, 64), (64, 1))
        assert_size_stride(arg22_1, (64, ), (1, ))
        assert_size_stride(arg23_1, (64, ), (1, ))
        assert_size_stride(arg24_1, (64, ), (1, ))
        assert_size_stride(arg25_1, (256, 64), (64, 1))
        assert_size_stride(arg26_1, (256, ), (1, ))
        assert_size_stride(arg27_1, (64, 256), (256, 1))
        assert_size_stride(arg28_1, (64, ), (1, ))
        assert_size_stride(arg29_1, (64, ), (1, ))
        assert_size_stride(arg30_1, (64, ), (1, ))
        assert_size_stride(arg31_1, (192, 64), (64, 1))
        assert_size_stride(arg32_1, (192, ), (1, ))
        assert_size_stride(arg33_1, (32, 32), (32, 1))
        assert_size_stride(arg34_1, (64, 64), (64, 1))
        assert_size_stride(arg35_1, (64, ), (1, ))
        assert_size_stride(arg36_1, (64, ), (1, ))
        assert_size_stride(arg37_1, (64, ), (1, ))
        assert_size_stride(arg38_1, (256, 64), (64, 1))
        assert_size_stride(arg39_1, (256, ), (1, ))
        assert_size_stride(arg40_1, (64, 256), (256, 1))
        assert_size_stride(arg41_1, (64, ), (1, ))
        assert_size_stride(arg42_1, (64, ), (1, ))
        assert_size_stride(arg43_1, (64, ), (1, ))
        assert_size_stride(arg44_1, (192, 64), (64, 1))
        assert_size_stride(arg45_1, (192, ), (1, ))
        assert_size_stride(arg46_1, (32, 32), (32, 1))
        assert_size_stride(arg47_1, (64, 64), (64, 1))
        assert_size_stride(arg48_1, (64, ), (1, ))
        assert_size_stride(arg49_1, (64, ), (1, ))
        assert_size_stride(arg50_1, (64, ), (1, ))
        assert_size_stride(arg51_1, (256, 64), (64, 1))
        assert_size_stride(arg52_1, (256, ), (1, ))
        assert_size_stride(arg53_1, (64, 256), (256, 1))
        assert_size_stride(arg54_1, (64, ), (1, ))
        assert_size_stride(arg55_1, (64, ), (1, ))
        assert_size_stride(arg56_1, (64, ), (1, ))
        assert_size_stride(arg57_1, (616, 64), (64, 1))
        assert_size_stride(arg58_1, (616, ), (1, ))
        with torch.cuda._DeviceGuard(0):
            torch.cuda.set_device(0)
            buf3 = empty_strided_cuda((2, 16, 64), (1024, 64, 1), torch.float32)
            # Topologically Sorted Source Nodes: [embedding, arange, embedding_1, x, layer_norm], Original ATen: [aten.embedding, aten.arange, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_per_fused_var_mean_add_embedding_embedding_1_iota_add_2_mul_1_mul_sub_rsqrt_add_1_0.run(arg0_1, arg1_1, arg2_1, arg3_1, arg4_1, buf3, 32, 64, stream=stream0)
            del arg3_1
            del arg4_1
            buf4 = empty_strided_cuda((32, 192), (192, 1), torch.float32)
            # Topologically Sorted Source Nodes: [embedding, arange, embedding_1, x, layer_norm, linear], Original ATen: [aten.embedding, aten.arange, aten.add, aten.native_layer_norm, aten.view, aten.t, aten.addmm]
            extern_kernels.mm(reinterpret_tensor(buf3, (32, 64), (64, 1), 0), reinterpret_tensor(arg5_1, (64, 192), (1, 64), 0), out=buf4)
            del arg5_1
            buf5 = reinterpret_tensor(buf3, (2, 4, 16, 16), (1024, 256, 16, 1), 0); del buf3  # reuse
            # Topologically Sorted Source Nodes: [linear, split, view, q_1, matmul], Original ATen: [aten.addmm, aten.view, aten.split, aten.transpose, aten.clone]
            stream0 = get_raw_stream(0)
            triton_poi_fused_clone_permute_1_view_2_split_view_1_add_tensor_15_1.run(arg6_1, buf4, buf5, 2048, stream=stream0)
            buf6 = empty_strided_cuda((2, 4, 16, 16), (1024, 256, 16, 1), torch.float32)
            # Topologically Sorted Source Nodes: [linear, split, view_1, k_1, transpose_3, matmul], Original ATen: [aten.addmm, aten.view, aten.split, aten.transpose, aten.clone]
            stream0 = get_raw_stream(0)
            triton_poi_fused_clone_1_permute_4_permute_2_view_3_split_view_1_add_tensor_15_2.run(arg6_1, buf4, buf6, 128, 16, stream=stream0)
            buf7 = empty_strided_cuda((8, 16, 16), (256, 16, 1), torch.float32)
            # Topologically Sorted Source Nodes: [linear, split, view, q_1, matmul, view_1, k_1, transpose_3], Original ATen: [aten.addmm, aten.view, aten.split, aten.transpose, aten.clone, aten._unsafe_view, aten.bmm]
            extern_kernels.bmm(reinterpret_tensor(buf5, (8, 16, 16), (256, 16, 1), 0), reinterpret_tensor(buf6, (8, 16, 16), (256, 16, 1), 0), out=buf7)
            buf10 = reinterpret_tensor(buf7, (2, 4, 16, 16), (1024, 256, 16, 1), 0); del buf7  # reuse
            # Topologically Sorted Source Nodes: [getitem_3, masked_fill, matmul, scores, att], Original ATen: [aten.slice, aten.masked_fill, aten.view, aten.mul, prims.prepare_softmax_online, aten.sub, aten.exp, aten._softmax]
            stream0 = get_raw_stream(0)
            triton_per_fused_prepare_softmax_online_default_3_where_slice_2_slice_1_full_default_mul_2_view_7_div_exp_default_3_sub_tensor_3_3.run(buf10, arg7_1, 128, 16, stream=stream0)
            del arg7_1
            buf11 = buf6; del buf6  # reuse
            # Topologically Sorted Source Nodes: [linear, split, view_2, v_1, matmul_1], Original ATen: [aten.addmm, aten.view, aten.split, aten.transpose, aten.clone]
            stream0 = get_raw_stream(0)
            triton_poi_fused_clone_2_permute_3_view_4_split_view_1_add_tensor_15_4.run(arg6_1, buf4, buf11, 2048, stream=stream0)
            del arg6_1
            buf12 = reinterpret_tensor(buf5, (8, 16, 16), (256, 16, 1), 0); del buf5  # reuse
            # Topologically Sorted Source Nodes: [linear, split, getitem_3, masked_fill, matmul, scores, att, matmul_1, view_2, v_1], Original ATen: [aten.addmm, aten.view, aten.split, aten.slice, aten.masked_fill, aten.mul, aten.sub, aten.exp, aten._softmax, aten.transpose, aten.clone, aten._unsafe_view, aten.bmm]
            extern_kernels.bmm(reinterpret_tensor(buf10, (8, 16, 16), (256, 16, 1), 0), reinterpret_tensor(buf11, (8, 16, 16), (256, 16, 1), 0), out=buf12)
            buf13 = reinterpret_tensor(buf11, (2, 16, 4, 16), (1024, 64, 16, 1), 0); del buf11  # reuse
            # Topologically Sorted Source Nodes: [matmul_1, transpose_4, y], Original ATen: [aten.view, aten.transpose, aten.clone]
            stream0 = get_raw_stream(0)
            triton_poi_fused_clone_3_permute_5_view_10_5.run(buf12, buf13, 2048, stream=stream0)
            buf14 = reinterpret_tensor(buf12, (32, 64), (64, 1), 0); del buf12  # reuse
            # Topologically Sorted Source Nodes: [matmul_1, transpose_4, y, linear_1], Original ATen: [aten.view, aten.transpose, aten.clone, aten._unsafe_view, aten.t, aten.addmm]
            extern_kernels.mm(reinterpret_tensor(buf13, (32, 64), (64, 1), 0), reinterpret_tensor(arg8_1, (64, 64), (1, 64), 0), out=buf14)
            del arg8_1
            buf15 = reinterpret_tensor(buf14, (2, 16, 64), (1024, 64, 1), 0); del buf14  # reuse
            buf19 = reinterpret_tensor(buf13, (2, 16, 64), (1024, 64, 1), 0); del buf13  # reuse
            # Topologically Sorted Source Nodes: [embedding, arange, embedding_1, x, linear_1, x_1, layer_norm_1], Original ATen: [aten.embedding, aten.arange, aten.add, aten.addmm, aten.view, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_per_fused_add_3_add_embedding_embedding_1_iota_view_13_add_tensor_14_var_mean_1_add_5_mul_4_mul_3_sub_2_rsqrt_1_add_4_6.run(buf15, arg0_1, arg1_1, arg2_1, arg9_1, arg10_1, arg11_1, buf19, 32, 64, stream=stream0)
            del arg0_1
            del arg10_1
            del arg11_1
            del arg1_1
            del arg2_1
            del arg9_1
            buf20 = empty_strided_cuda((32, 256), (256, 1), torch.float32)
            # Topologically Sorted Source Nodes: [layer_norm_1, linear_2], Original ATen: [aten.native_layer_norm, aten.view, aten.t, aten.addmm]
            extern_kernels.mm(reinterpret_tensor(buf19, (32, 64), (64, 1), 0), reinterpret_tensor(arg12_1, (64, 256), (1, 64), 0), out=buf20)
            del arg12_1
            buf21 = reinterpret_tensor(buf20, (2, 16, 256), (4096, 256, 1), 0); del buf20  # reuse
            # Topologically Sorted Source Nodes: [linear_2, gelu], Original ATen: [aten.addmm, aten.view, aten.gelu]
            stream0 = get_raw_stream(0)
            triton_poi_fused_mul_10_mul_9_view_15_add_tensor_13_add_7_tanh_mul_8_add_6_mul_7_mul_6_mul_5_7.run(buf21, arg13_1, 8192, stream=stream0)
            del arg13_1
            buf22 = reinterpret_tensor(buf19, (32, 64), (64, 1), 0); del buf19  # reuse
            # Topologically Sorted Source Nodes: [linear_2, gelu, linear_3], Original ATen: [aten.addmm, aten.view, aten.gelu, aten.t]
            extern_kernels.mm(reinterpret_tensor(buf21, (32, 256), (256, 1), 0), reinterpret_tensor(arg14_1, (256, 64), (1, 256), 0), out=buf22)
            del arg14_1
            buf26 = reinterpret_tensor(buf10, (2, 16, 64), (1024, 64, 1), 0); del buf10  # reuse
            # Topologically Sorted Source Nodes: [linear_3, x_2, layer_norm_2], Original ATen: [aten.addmm, aten.view, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_per_fused_var_mean_2_add_8_view_17_add_tensor_12_add_10_mul_12_mul_11_sub_3_rsqrt_2_add_9_8.run(buf15, arg15_1, buf22, arg16_1, arg17_1, buf26, 32, 64, stream=stream0)
            del arg16_1
            del arg17_1
            buf27 = buf4; del buf4  # reuse
            # Topologically Sorted Source Nodes: [linear_3, x_2, layer_norm_2, linear_4], Original ATen: [aten.addmm, aten.view, aten.add, aten.native_layer_norm, aten.t]
            extern_kernels.mm(reinterpret_tensor(buf26, (32, 64), (64, 1), 0), reinterpret_tensor(arg18_1, (64, 192), (1, 64), 0), out=buf27)
            del arg18_1
            buf28 = reinterpret_tensor(buf26, (2, 4, 16, 16), (1024, 256, 16, 1), 0); del buf26  # reuse
            # Topologically Sorted Source Nodes: [linear_4, split_1, view_3, q_3, matmul_2], Original ATen: [aten.addmm, aten.view, aten.split, aten.transpose, aten.clone]
            stream0 = get_raw_stream(0)
            triton_poi_fused_clone_permute_1_view_2_split_view_1_add_tensor_15_1.run(arg19_1, buf27, buf28, 2048, stream=stream0)
            buf29 = empty_strided_cuda((2, 4, 16, 16), (1024, 256, 16, 1), torch.float32)
            # Topologically Sorted Source Nodes: [linear_4, split_1, view_4, k_3, transpose_8, matmul_2], Original ATen: [aten.addmm, aten.view, aten.split, aten.transpose, aten.clone]
            stream0 = get_raw_stream(0)
            triton_poi_fused_clone_1_permute_4_permute_2_view_3_split_view_1_add_tensor_15_2.run(arg19_1, buf27, buf29, 128, 16, stream=stream0)
            buf30 = empty_strided_cuda((8, 16, 16), (256, 16, 1), torch.float32)
            # Topologically Sorted Source Nodes: [linear_4, split_1, view_3, q_3, matmul_2, view_4, k_3, transpose_8], Original ATen: [aten.addmm, aten.view, aten.split, aten.transpose, aten.clone, aten._unsafe_view, aten.bmm]
            extern_kernels.bmm(reinterpret_tensor(buf28, (8, 16, 16), (256, 16, 1), 0), reinterpret_tensor(buf29, (8, 16, 16), (256, 16, 1), 0), out=buf30)
            buf33 = reinterpret_tensor(buf30, (2, 4, 16, 16), (1024, 256, 16, 1), 0); del buf30  # reuse
            # Topologically Sorted Source Nodes: [getitem_7, masked_fill_1, matmul_2, scores_1, att_1], Original ATen: [aten.slice, aten.masked_fill, aten.view, aten.mul, prims.prepare_softmax_online, aten.sub, aten.exp, aten._softmax]
            stream0 = get_raw_stream(0)
            triton_per_fused_prepare_softmax_online_default_3_where_slice_2_slice_1_full_default_mul_2_view_7_div_exp_default_3_sub_tensor_3_3.run(buf33, arg20_1, 128, 16, stream=stream0)
            del arg20_1
            buf34 = buf29; del buf29  # reuse
            # Topologically Sorted Source Nodes: [linear_4, split_1, view_5, v_3, matmul_3], Original ATen: [aten.addmm, aten.view, aten.split, aten.transpose, aten.clone]
            stream0 = get_raw_stream(0)
            triton_poi_fused_clone_2_permute_3_view_4_split_view_1_add_tensor_15_4.run(arg19_1, buf27, buf34, 2048, stream=stream0)
            del arg19_1
            buf35 = reinterpret_tensor(buf28, (8, 16, 16), (256, 16, 1), 0); del buf28  # reuse
            # Topologically Sorted Source Nodes: [linear_4, split_1, getitem_7, masked_fill_1, matmul_2, scores_1, att_1, matmul_3, view_5, v_3], Original ATen: [aten.addmm, aten.view, aten.split, aten.slice, aten.masked_fill, aten.mul, aten.sub, aten.exp, aten._softmax, aten.transpose, aten.clone, aten._unsafe_view, aten.bmm]
            extern_kernels.bmm(reinterpret_tensor(buf33, (8, 16, 16), (256, 16, 1), 0), reinterpret_tensor(buf34, (8, 16, 16), (256, 16, 1), 0), out=buf35)
            buf36 = reinterpret_tensor(buf34, (2, 16, 4, 16), (1024, 64, 16, 1), 0); del buf34  # reuse
            # Topologically Sorted Source Nodes: [matmul_3, transpose_9, y_1], Original ATen: [aten.view, aten.transpose, aten.clone]
            stream0 = get_raw_stream(0)
            triton_poi_fused_clone_3_permute_5_view_10_5.run(buf35, buf36, 2048, stream=stream0)
            buf37 = reinterpret_tensor(buf35, (32, 64), (64, 1), 0); del buf35  # reuse
            # Topologically Sorted Source Nodes: [matmul_3, transpose_9, y_1, linear_5], Original ATen: [aten.view, aten.transpose, aten.clone, aten._unsafe_view, aten.t, aten.addmm]
            extern_kernels.mm(reinterpret_tensor(buf36, (32, 64), (64, 1), 0), reinterpret_tensor(arg21_1, (64, 64), (1, 64), 0), out=buf37)
            del arg21_1
            buf38 = buf15; del buf15  # reuse
            buf42 = reinterpret_tensor(buf36, (2, 16, 64), (1024, 64, 1), 0); del buf36  # reuse
            # Topologically Sorted Source Nodes: [linear_3, x_2, linear_5, x_3, layer_norm_3], Original ATen: [aten.addmm, aten.view, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_per_fused_add_11_add_8_view_17_add_tensor_12_view_31_add_tensor_10_var_mean_3_add_13_mul_15_mul_14_sub_5_rsqrt_3_add_12_9.run(buf38, arg15_1, buf22, arg22_1, buf37, arg23_1, arg24_1, buf42, 32, 64, stream=stream0)
            del arg15_1
            del arg22_1
            del arg23_1
            del arg24_1
            buf43 = reinterpret_tensor(buf21, (32, 256), (256, 1), 0); del buf21  # reuse
            # Topologically Sorted Source Nodes: [layer_norm_3, linear_6], Original ATen: [aten.native_layer_norm, aten.view, aten.t, aten.addmm]
            extern_kernels.mm(reinterpret_tensor(buf42, (32, 64), (64, 1), 0), reinterpret_tensor(arg25_1, (64, 256), (1, 64), 0), out=buf43)
            del arg25_1
            buf44 = reinterpret_tensor(buf43, (2, 16, 256), (4096, 256, 1), 0); del buf43  # reuse
            # Topologically Sorted Source Nodes: [linear_6, gelu_1], Original ATen: [aten.addmm, aten.view, aten.gelu]
            stream0 = get_raw_stream(0)
            triton_poi_fused_mul_10_mul_9_view_15_add_tensor_13_add_7_tanh_mul_8_add_6_mul_7_mul_6_mul_5_7.run(buf44, arg26_1, 8192, stream=stream0)
            del arg26_1
            buf45 = reinterpret_tensor(buf42, (32, 64), (64, 1), 0); del buf42  # reuse
            # Topologically Sorted Source Nodes: [linear_6, gelu_1, linear_7], Original ATen: [aten.addmm, aten.view, aten.gelu, aten.t]
            extern_kernels.mm(reinterpret_tensor(buf44, (32, 256), (256, 1), 0), reinterpret_tensor(arg27_1, (256, 64), (1, 256), 0), out=buf45)
            del arg27_1
            buf49 = reinterpret_tensor(buf37, (2, 16, 64), (1024, 64, 1), 0); del buf37  # reuse
            # Topologically Sorted Source Nodes: [linear_7, x_4, layer_norm_4], Original ATen: [aten.addmm, aten.view, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_per_fused_var_mean_2_add_8_view_17_add_tensor_12_add_10_mul_12_mul_11_sub_3_rsqrt_2_add_9_8.run(buf38, arg28_1, buf45, arg29_1, arg30_1, buf49, 32, 64, stream=stream0)
            del arg29_1
            del arg30_1
            buf50 = buf27; del buf27  # reuse
            # Topologically Sorted Source Nodes: [linear_7, x_4, layer_norm_4, linear_8], Original ATen: [aten.addmm, aten.view, aten.add, aten.native_layer_norm, aten.t]
            extern_kernels.mm(reinterpret_tensor(buf49, (32, 64), (64, 1), 0), reinterpret_tensor(arg31_1, (64, 192), (1, 64), 0), out=buf50)
            del arg31_1
            buf51 = reinterpret_tensor(buf49, (2, 4, 16, 16), (1024, 256, 16, 1), 0); del buf49  # reuse
            # Topologically Sorted Source Nodes: [linear_8, split_2, view_6, q_5, matmul_4], Original ATen: [aten.addmm, aten.view, aten.split, aten.transpose, aten.clone]
            stream0 = get_raw_stream(0)
            triton_poi_fused_clone_permute_1_view_2_split_view_1_add_tensor_15_1.run(arg32_1, buf50, buf51, 2048, stream=stream0)
            buf52 = reinterpret_tensor(buf22, (2, 4, 16, 16), (1024, 256, 16, 1), 0); del buf22  # reuse
            # Topologically Sorted Source Nodes: [linear_8, split_2, view_7, k_5, transpose_13, matmul_4], Original ATen: [aten.addmm, aten.view, aten.split, aten.transpose, aten.clone]
            stream0 = get_raw_stream(0)
            triton_poi_fused_clone_1_permute_4_permute_2_view_3_split_view_1_add_tensor_15_2.run(arg32_1, buf50, buf52, 128, 16, stream=stream0)
            buf53 = reinterpret_tensor(buf33, (8, 16, 16), (256, 16, 1), 0); del buf33  # reuse
            # Topologically Sorted Source Nodes: [linear_8, split_2, view_6, q_5, matmul_4, view_7, k_5, transpose_13], Original ATen: [aten.addmm, aten.view, aten.split, aten.transpose, aten.clone, aten._unsafe_view, aten.bmm]
            extern_kernels.bmm(reinterpret_tensor(buf51, (8, 16, 16), (256, 16, 1), 0), reinterpret_tensor(buf52, (8, 16, 16), (256, 16, 1), 0), out=buf53)
            buf56 = reinterpret_tensor(buf53, (2, 4, 16, 16), (1024, 256, 16, 1), 0); del buf53  # reuse
            # Topologically Sorted Source Nodes: [getitem_11, masked_fill_2, matmul_4, scores_2, att_2], Original ATen: [aten.slice, aten.masked_fill, aten.view, aten.mul, prims.prepare_softmax_online, aten.sub, aten.exp, aten._softmax]
            stream0 = get_raw_stream(0)
            triton_per_fused_prepare_softmax_online_default_3_where_slice_2_slice_1_full_default_mul_2_view_7_div_exp_default_3_sub_tensor_3_3.run(buf56, arg33_1, 128, 16, stream=stream0)
            del arg33_1
            buf57 = buf52; del buf52  # reuse
            # Topologically Sorted Source Nodes: [linear_8, split_2, view_8, v_5, matmul_5], Original ATen: [aten.addmm, aten.view, aten.split, aten.transpose, aten.clone]
            stream0 = get_raw_stream(0)
            triton_poi_fused_clone_2_permute_3_view_4_split_view_1_add_tensor_15_4.run(arg32_1, buf50, buf57, 2048, stream=stream0)
            del arg32_1
            buf58 = reinterpret_tensor(buf51, (8, 16, 16), (256, 16, 1), 0); del buf51  # reuse
            # Topologically Sorted Source Nodes: [linear_8, split_2, getitem_11, masked_fill_2, matmul_4, scores_2, att_2, matmul_5, view_8, v_5], Original ATen: [aten.addmm, aten.view, aten.split, aten.slice, aten.masked_fill, aten.mul, aten.sub, aten.exp, aten._softmax, aten.transpose, aten.clone, aten._unsafe_view, aten.bmm]
            extern_kernels.bmm(reinterpret_tensor(buf56, (8, 16, 16), (256, 16, 1), 0), reinterpret_tensor(buf57, (8, 16, 16), (256, 16, 1), 0), out=buf58)
            buf59 = reinterpret_tensor(buf57, (2, 16, 4, 16), (1024, 64, 16, 1), 0); del buf57  # reuse
            # Topologically Sorted Source Nodes: [matmul_5, transpose_14, y_2], Original ATen: [aten.view, aten.transpose, aten.clone]
            stream0 = get_raw_stream(0)
            triton_poi_fused_clone_3_permute_5_view_10_5.run(buf58, buf59, 2048, stream=stream0)
            buf60 = reinterpret_tensor(buf58, (32, 64), (64, 1), 0); del buf58  # reuse
            # Topologically Sorted Source Nodes: [matmul_5, transpose_14, y_2, linear_9], Original ATen: [aten.view, aten.transpose, aten.clone, aten._unsafe_view, aten.t, aten.addmm]
            extern_kernels.mm(reinterpret_tensor(buf59, (32, 64), (64, 1), 0), reinterpret_tensor(arg34_1, (64, 64), (1, 64), 0), out=buf60)
            del arg34_1
            buf61 = buf38; del buf38  # reuse
            buf65 = reinterpret_tensor(buf59, (2, 16, 64), (1024, 64, 1), 0); del buf59  # reuse
            # Topologically Sorted Source Nodes: [linear_7, x_4, linear_9, x_5, layer_norm_5], Original ATen: [aten.addmm, aten.view, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_per_fused_add_11_add_8_view_17_add_tensor_12_view_31_add_tensor_10_var_mean_3_add_13_mul_15_mul_14_sub_5_rsqrt_3_add_12_9.run(buf61, arg28_1, buf45, arg35_1, buf60, arg36_1, arg37_1, buf65, 32, 64, stream=stream0)
            del arg28_1
            del arg35_1
            del arg36_1
            del arg37_1
            buf66 = reinterpret_tensor(buf44, (32, 256), (256, 1), 0); del buf44  # reuse
            # Topologically Sorted Source Nodes: [layer_norm_5, linear_10], Original ATen: [aten.native_layer_norm, aten.view, aten.t, aten.addmm]
            extern_kernels.mm(reinterpret_tensor(buf65, (32, 64), (64, 1), 0), reinterpret_tensor(arg38_1, (64, 256), (1, 64), 0), out=buf66)
            del arg38_1
            buf67 = reinterpret_tensor(buf66, (2, 16, 256), (4096, 256, 1), 0); del buf66  # reuse
            # Topologically Sorted Source Nodes: [linear_10, gelu_2], Original ATen: [aten.addmm, aten.view, aten.gelu]
            stream0 = get_raw_stream(0)
            triton_poi_fused_mul_10_mul_9_view_15_add_tensor_13_add_7_tanh_mul_8_add_6_mul_7_mul_6_mul_5_7.run(buf67, arg39_1, 8192, stream=stream0)
            del arg39_1
            buf68 = reinterpret_tensor(buf65, (32, 64), (64, 1), 0); del buf65  # reuse
            # Topologically Sorted Source Nodes: [linear_10, gelu_2, linear_11], Original ATen: [aten.addmm, aten.view, aten.gelu, aten.t]
            extern_kernels.mm(reinterpret_tensor(buf67, (32, 256), (256, 1), 0), reinterpret_tensor(arg40_1, (256, 64), (1, 256), 0), out=buf68)
            del arg40_1
            buf72 = reinterpret_tensor(buf60, (2, 16, 64), (1024, 64, 1), 0); del buf60  # reuse
            # Topologically Sorted Source Nodes: [linear_11, x_6, layer_norm_6], Original ATen: [aten.addmm, aten.view, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_per_fused_var_mean_2_add_8_view_17_add_tensor_12_add_10_mul_12_mul_11_sub_3_rsqrt_2_add_9_8.run(buf61, arg41_1, buf68, arg42_1, arg43_1, buf72, 32, 64, stream=stream0)
            del arg42_1
            del arg43_1
            buf73 = buf50; del buf50  # reuse
            # Topologically Sorted Source Nodes: [linear_11, x_6, layer_norm_6, linear_12], Original ATen: [aten.addmm, aten.view, aten.add, aten.native_layer_norm, aten.t]
            extern_kernels.mm(reinterpret_tensor(buf72, (32, 64), (64, 1), 0), reinterpret_tensor(arg44_1, (64, 192), (1, 64), 0), out=buf73)
            del arg44_1
            buf74 = reinterpret_tensor(buf72, (2, 4, 16, 16), (1024, 256, 16, 1), 0); del buf72  # reuse
            # Topologically Sorted Source Nodes: [linear_12, split_3, view_9, q_7, matmul_6], Original ATen: [aten.addmm, aten.view, aten.split, aten.transpose, aten.clone]
            stream0 = get_raw_stream(0)
            triton_poi_fused_clone_permute_1_view_2_split_view_1_add_tensor_15_1.run(arg45_1, buf73, buf74, 2048, stream=stream0)
            buf75 = reinterpret_tensor(buf45, (2, 4, 16, 16), (1024, 256, 16, 1), 0); del buf45  # reuse
            # Topologically Sorted Source Nodes: [linear_12, split_3, view_10, k_7, transpose_18, matmul_6], Original ATen: [aten.addmm, aten.view, aten.split, aten.transpose, aten.clone]
            stream0 = get_raw_stream(0)
            triton_poi_fused_clone_1_permute_4_permute_2_view_3_split_view_1_add_tensor_15_2.run(arg45_1, buf73, buf75, 128, 16, stream=stream0)
            buf76 = reinterpret_tensor(buf56, (8, 16, 16), (256, 16, 1), 0); del buf56  # reuse
            # Topologically Sorted Source Nodes: [linear_12, split_3, view_9, q_7, matmul_6, view_10, k_7, transpose_18], Original ATen: [aten.addmm, aten.view, aten.split, aten.transpose, aten.clone, aten._unsafe_view, aten.bmm]
            extern_kernels.bmm(reinterpret_tensor(buf74, (8, 16, 16), (256, 16, 1), 0), reinterpret_tensor(buf75, (8, 16, 16), (256, 16, 1), 0), out=buf76)
            buf79 = reinterpret_tensor(buf76, (2, 4, 16, 16), (1024, 256, 16, 1), 0); del buf76  # reuse
            # Topologically Sorted Source Nodes: [getitem_15, masked_fill_3, matmul_6, scores_3, att_3], Original ATen: [aten.slice, aten.masked_fill, aten.view, aten.mul, prims.prepare_softmax_online, aten.sub, aten.exp, aten._softmax]
            stream0 = get_raw_stream(0)
            triton_per_fused_prepare_softmax_online_default_3_where_slice_2_slice_1_full_default_mul_2_view_7_div_exp_default_3_sub_tensor_3_3.run(buf79, arg46_1, 128, 16, stream=stream0)
            del arg46_1
            buf80 = buf75; del buf75  # reuse
            # Topologically Sorted Source Nodes: [linear_12, split_3, view_11, v_7, matmul_7], Original ATen: [aten.addmm, aten.view, aten.split, aten.transpose, aten.clone]
            stream0 = get_raw_stream(0)
            triton_poi_fused_clone_2_permute_3_view_4_split_view_1_add_tensor_15_4.run(arg45_1, buf73, buf80, 2048, stream=stream0)
            del arg45_1
            del buf73
            buf81 = reinterpret_tensor(buf74, (8, 16, 16), (256, 16, 1), 0); del buf74  # reuse
            # Topologically Sorted Source Nodes: [linear_12, split_3, getitem_15, masked_fill_3, matmul_6, scores_3, att_3, matmul_7, view_11, v_7], Original ATen: [aten.addmm, aten.view, aten.split, aten.slice, aten.masked_fill, aten.mul, aten.sub, aten.exp, aten._softmax, aten.transpose, aten.clone, aten._unsafe_view, aten.bmm]
            extern_kernels.bmm(reinterpret_tensor(buf79, (8, 16, 16), (256, 16, 1), 0), reinterpret_tensor(buf80, (8, 16, 16), (256, 16, 1), 0), out=buf81)
            del buf79
            buf82 = reinterpret_tensor(buf80, (2, 16, 4, 16), (1024, 64, 16, 1), 0); del buf80  # reuse
            # Topologically Sorted Source Nodes: [matmul_7, transpose_19, y_3], Original ATen: [aten.view, aten.transpose, aten.clone]
            stream0 = get_raw_stream(0)
            triton_poi_fused_clone_3_permute_5_view_10_5.run(buf81, buf82, 2048, stream=stream0)
            buf83 = reinterpret_tensor(buf81, (32, 64), (64, 1), 0); del buf81  # reuse
            # Topologically Sorted Source Nodes: [matmul_7, transpose_19, y_3, linear_13], Original ATen: [aten.view, aten.transpose, aten.clone, aten._unsafe_view, aten.t, aten.addmm]
            extern_kernels.mm(reinterpret_tensor(buf82, (32, 64), (64, 1), 0), reinterpret_tensor(arg47_1, (64, 64), (1, 64), 0), out=buf83)
            del arg47_1
            buf84 = buf61; del buf61  # reuse
            buf88 = reinterpret_tensor(buf82, (2, 16, 64), (1024, 64, 1), 0); del buf82  # reuse
            # Topologically Sorted Source Nodes: [linear_11, x_6, linear_13, x_7, layer_norm_7], Original ATen: [aten.addmm, aten.view, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_per_fused_add_11_add_8_view_17_add_tensor_12_view_31_add_tensor_10_var_mean_3_add_13_mul_15_mul_14_sub_5_rsqrt_3_add_12_9.run(buf84, arg41_1, buf68, arg48_1, buf83, arg49_1, arg50_1, buf88, 32, 64, stream=stream0)
            del arg41_1
            del arg48_1
            del arg49_1
            del arg50_1
            del buf68
            del buf83
            buf89 = reinterpret_tensor(buf67, (32, 256), (256, 1), 0); del buf67  # reuse
            # Topologically Sorted Source Nodes: [layer_norm_7, linear_14], Original ATen: [aten.native_layer_norm, aten.view, aten.t, aten.addmm]
            extern_kernels.mm(reinterpret_tensor(buf88, (32, 64), (64, 1), 0), reinterpret_tensor(arg51_1, (64, 256), (1, 64), 0), out=buf89)
            del arg51_1
            buf90 = reinterpret_tensor(buf89, (2, 16, 256), (4096, 256, 1), 0); del buf89  # reuse
            # Topologically Sorted Source Nodes: [linear_14, gelu_3], Original ATen: [aten.addmm, aten.view, aten.gelu]
            stream0 = get_raw_stream(0)
            triton_poi_fused_mul_10_mul_9_view_15_add_tensor_13_add_7_tanh_mul_8_add_6_mul_7_mul_6_mul_5_7.run(buf90, arg52_1, 8192, stream=stream0)
            del arg52_1
            buf91 = reinterpret_tensor(buf88, (32, 64), (64, 1), 0); del buf88  # reuse
            # Topologically Sorted Source Nodes: [linear_14, gelu_3, linear_15], Original ATen: [aten.addmm, aten.view, aten.gelu, aten.t]
            extern_kernels.mm(reinterpret_tensor(buf90, (32, 256), (256, 1), 0), reinterpret_tensor(arg53_1, (256, 64), (1, 256), 0), out=buf91)
            del arg53_1
            del buf90
            buf95 = buf84; del buf84  # reuse
            # Topologically Sorted Source Nodes: [linear_15, x_8, layer_norm_8], Original ATen: [aten.addmm, aten.view, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_per_fused_var_mean_8_add_32_view_71_add_tensor_add_34_mul_45_mul_44_sub_12_rsqrt_8_add_33_10.run(buf95, arg54_1, buf91, arg55_1, arg56_1, 32, 64, stream=stream0)
            del arg54_1
            del arg55_1
            del arg56_1
            del buf91
            buf96 = empty_strided_cuda((32, 616), (616, 1), torch.float32)
            # Topologically Sorted Source Nodes: [linear_15, x_8, layer_norm_8, logits], Original ATen: [aten.addmm, aten.view, aten.add, aten.native_layer_norm, aten.t]
            extern_kernels.addmm(arg58_1, reinterpret_tensor(buf95, (32, 64), (64, 1), 0), reinterpret_tensor(arg57_1, (64, 616), (1, 64), 0), alpha=1, beta=1, out=buf96)
            del arg57_1
            del arg58_1
            del buf95
            # Topologically Sorted Source Nodes: [logits, softmax_default], Original ATen: [aten.view, kernels_triton.softmax]
            buf97 = torch.ops.kernels_triton.softmax.default(reinterpret_tensor(buf96, (2, 16, 616), (9856, 616, 1), 0), 2)
            del buf96
            buf98 = buf97
            assert_size_stride(buf98, (2, 16, 616), (9856, 616, 1), 'torch.ops.kernels_triton.softmax.default')
            assert_alignment(buf98, 16, 'torch.ops.kernels_triton.softmax.default')
            del buf97
        return (buf98, )

runner = Runner(partitions=[])
call = runner.call
recursively_apply_fns = runner.recursively_apply_fns


def get_args():
    from torch._dynamo.testing import rand_strided
    arg0_1 = rand_strided((2, 16), (16, 1), device='cuda:0', dtype=torch.int64)
    arg1_1 = rand_strided((616, 64), (64, 1), device='cuda:0', dtype=torch.float32)
    arg2_1 = rand_strided((32, 64), (64, 1), device='cuda:0', dtype=torch.float32)
    arg3_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg4_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg5_1 = rand_strided((192, 64), (64, 1), device='cuda:0', dtype=torch.float32)
    arg6_1 = rand_strided((192, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg7_1 = rand_strided((32, 32), (32, 1), device='cuda:0', dtype=torch.bool)
    arg8_1 = rand_strided((64, 64), (64, 1), device='cuda:0', dtype=torch.float32)
    arg9_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg10_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg11_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg12_1 = rand_strided((256, 64), (64, 1), device='cuda:0', dtype=torch.float32)
    arg13_1 = rand_strided((256, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg14_1 = rand_strided((64, 256), (256, 1), device='cuda:0', dtype=torch.float32)
    arg15_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg16_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg17_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg18_1 = rand_strided((192, 64), (64, 1), device='cuda:0', dtype=torch.float32)
    arg19_1 = rand_strided((192, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg20_1 = rand_strided((32, 32), (32, 1), device='cuda:0', dtype=torch.bool)
    arg21_1 = rand_strided((64, 64), (64, 1), device='cuda:0', dtype=torch.float32)
    arg22_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg23_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg24_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg25_1 = rand_strided((256, 64), (64, 1), device='cuda:0', dtype=torch.float32)
    arg26_1 = rand_strided((256, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg27_1 = rand_strided((64, 256), (256, 1), device='cuda:0', dtype=torch.float32)
    arg28_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg29_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg30_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg31_1 = rand_strided((192, 64), (64, 1), device='cuda:0', dtype=torch.float32)
    arg32_1 = rand_strided((192, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg33_1 = rand_strided((32, 32), (32, 1), device='cuda:0', dtype=torch.bool)
    arg34_1 = rand_strided((64, 64), (64, 1), device='cuda:0', dtype=torch.float32)
    arg35_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg36_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg37_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg38_1 = rand_strided((256, 64), (64, 1), device='cuda:0', dtype=torch.float32)
    arg39_1 = rand_strided((256, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg40_1 = rand_strided((64, 256), (256, 1), device='cuda:0', dtype=torch.float32)
    arg41_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg42_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg43_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg44_1 = rand_strided((192, 64), (64, 1), device='cuda:0', dtype=torch.float32)
    arg45_1 = rand_strided((192, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg46_1 = rand_strided((32, 32), (32, 1), device='cuda:0', dtype=torch.bool)
    arg47_1 = rand_strided((64, 64), (64, 1), device='cuda:0', dtype=torch.float32)
    arg48_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg49_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg50_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg51_1 = rand_strided((256, 64), (64, 1), device='cuda:0', dtype=torch.float32)
    arg52_1 = rand_strided((256, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg53_1 = rand_strided((64, 256), (256, 1), device='cuda:0', dtype=torch.float32)
    arg54_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg55_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg56_1 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    arg57_1 = rand_strided((616, 64), (64, 1), device='cuda:0', dtype=torch.float32)
    arg58_1 = rand_strided((616, ), (1, ), device='cuda:0', dtype=torch.float32)
    return [arg0_1, arg1_1, arg2_1, arg3_1, arg4_1, arg5_1, arg6_1, arg7_1, arg8_1, arg9_1, arg10_1, arg11_1, arg12_1, arg13_1, arg14_1, arg15_1, arg16_1, arg17_1, arg18_1, arg19_1, arg20_1, arg21_1, arg22_1, arg23_1, arg24_1, arg25_1, arg26_1, arg27_1, arg28_1, arg29_1, arg30_1, arg31_1, arg32_1, arg33_1, arg34_1, arg35_1, arg36_1, arg37_1, arg38_1, arg39_1, arg40_1, arg41_1, arg42_1, arg43_1, arg44_1, arg45_1, arg46_1, arg47_1, arg48_1, arg49_1, arg50_1, arg51_1, arg52_1, arg53_1, arg54_1, arg55_1, arg56_1, arg57_1, arg58_1]


def benchmark_compiled_module(args, times=10, repeat=10):
    from torch._inductor.utils import print_performance
    fn = lambda: call(list(args))
    return print_performance(fn, times=times, repeat=repeat)


if __name__ == "__main__":
    from torch._inductor.wrapper_benchmark import compiled_module_main
    args = get_args()
    compiled_module_main('None', lambda times, repeat: benchmark_compiled_module(args, times=times, repeat=repeat))
