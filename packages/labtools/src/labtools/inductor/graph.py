"""The parse of one Inductor output module, as data.

`CompiledGraph` holds the module's generated kernels (`Kernel`: its kind, the FX nodes and
ATen ops it fuses, its source read into a `kernels.Body`), the statements of call() that
run code (`Call`: a kernel launch or a library call, with the buffers it touches) and the
buffers call() allocates (`Allocation`). It answers what spans them: which calls read or
write a buffer's storage, which buffers reach memory without being returned. `to_dict` is
what a dump's parse.json holds. `parse.parse_module` fills it; nothing here reads text.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from labtools.inductor.kernels import Body

# Post-grad FX nodes that only reshape or reindex: they become index arithmetic, not code.
VIEW_OPS = set(
    "view _unsafe_view reshape permute transpose t expand unsqueeze squeeze slice select split split_with_sizes "
    "clone alias as_strided getitem unbind cat constant_pad_nd index iota embedding".split()
)
# The code ops (kernels.classify's names) an ATen op shows up as in a kernel, where they differ.
# fmt: off
CODE_OPS = {
    "amax": ("max",), "amin": ("min",), "prepare_softmax_online": ("online_softmax", "max", "sum"), "var_mean": ("welford", "sum"), "mean": ("sum",), "relu": ("maximum",),
    "convert_element_type": ("cast",), "full": ("constant",), "scalar_tensor": ("constant",),
    "masked_fill": ("where",), "pow": ("mul",), "reciprocal": ("div",),
}
# fmt: on


@dataclass
class Allocation:
    name: str
    shape: tuple
    stride: tuple
    dtype: str
    device: str
    line: int

    @property
    def nbytes(self) -> int | None:
        size = {
            "float32": 4,
            "float16": 2,
            "bfloat16": 2,
            "float64": 8,
            "int64": 8,
            "int32": 4,
            "bool": 1,
            "int8": 1,
        }
        if not all(isinstance(d, int) for d in self.shape) or self.dtype not in size:
            return None
        return math.prod(self.shape) * size[self.dtype]

    def describe(self) -> str:
        short = {
            "float32": "f32",
            "float16": "f16",
            "bfloat16": "bf16",
            "float64": "f64",
            "int64": "i64",
            "bool": "b8",
        }
        dims = ", ".join(str(d) for d in self.shape)
        return f"{short.get(self.dtype, self.dtype)}[{dims}]"


@dataclass
class Call:
    """One statement of call() that runs code: a generated kernel or a library one."""

    callee: str  # kernel name, or e.g. extern_kernels.addmm / torch.ops.aten._scaled_dot_product...
    kind: str  # kernel | extern
    args: list[str]
    buffers: list[str]  # buffer names among the arguments (through reinterpret_tensor views)
    bindings: dict[str, str]  # kernel launches: parameter -> buffer
    out: str | None  # extern calls: the out= buffer, or the name assigned
    source_nodes: list[str]
    original_aten: list[str]
    line: int
    text: str


@dataclass
class Kernel:
    name: str
    language: str  # triton | cpp
    kind: str  # pointwise | reduction | persistent_reduction | template | cpp | ...
    fused_nodes: list[str]  # post-grad FX node names: amax, sub, exp, sum_1, div
    fused_ops: list[str]  # their ATen ops: amax, sub, exp, sum, div
    node_targets: dict[str, str]  # node -> aten.sum.dim_IntList
    source_nodes: list[str]  # the user-level ops they came from: softmax
    original_aten: list[str]  # aten._softmax
    source: str
    body: Body
    calls: list[Call] = field(
        default_factory=list
    )  # a kernel reused by identical layers is launched once per layer

    @property
    def call(self) -> Call | None:
        return self.calls[0] if self.calls else None

    @property
    def compute_nodes(self) -> list[str]:
        """Fused nodes that compute something (views and copies become index arithmetic)."""
        return [n for n, op in zip(self.fused_nodes, self.fused_ops) if op not in VIEW_OPS]

    def code_ops(self, node: str) -> tuple[str, ...]:
        """How `node` can show up in the kernel: var_mean as a Welford reduction or as two sums."""
        op = self.fused_ops[self.fused_nodes.index(node)]
        return CODE_OPS.get(op, (op,))

    def to_dict(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if k not in ("source", "body", "calls")}
        b = asdict(self.body)
        d.update(
            language=self.language,
            params=b["params"],
            loads=b["loads"],
            stores=b["stores"],
            reductions=b["reductions"],
            steps=b["steps"],
            loops=b["loops"],
            local_buffers=b["local_buffers"],
            index_variables=b["setup"],
            size_hints=b["size_hints"],
            calls=[asdict(c) for c in self.calls],
            lines=len(self.source.splitlines()),
        )
        return d


@dataclass
class CompiledGraph:
    """One Inductor output module."""

    aot_id: str | None
    kernels: list[Kernel]
    calls: list[Call]
    allocations: dict[str, Allocation]
    aliases: dict[str, str]  # buf4 -> buf0: the same storage, reused
    returns: list[str]
    source: str = field(repr=False, default="")

    def kernel(self, name: str) -> Kernel:
        return next(k for k in self.kernels if k.name == name)

    def storage(self, buf: str) -> str:
        while buf in self.aliases:
            buf = self.aliases[buf]
        return buf

    def allocation(self, buf: str | None) -> Allocation | None:
        return self.allocations.get(self.storage(buf)) if buf else None

    def returned(self, buf: str) -> bool:
        return self.storage(buf) in {self.storage(r) for r in self.returns}

    def readers(self, buf: str, after_line: int) -> list[Call]:
        """Calls after `after_line` whose arguments touch `buf`'s storage."""
        root = self.storage(buf)
        return [
            c for c in self.calls if c.line > after_line and any(self.storage(b) == root for b in c.buffers)
        ]

    def writers(self, buf: str) -> list[Call]:
        root = self.storage(buf)
        out = []
        for c in self.calls:
            if c.kind == "extern" and c.out and self.storage(c.out) == root:
                out.append(c)
            elif c.kind == "kernel":
                roles = {p.name: p.role for p in self.kernel(c.callee).body.params}
                if any(
                    self.storage(b) == root and roles[p] in ("output", "in_out")
                    for p, b in c.bindings.items()
                ):
                    out.append(c)
        return out

    def materialized(self) -> list[Allocation]:
        """Buffers call() allocates that it does not return: the intermediates that reach memory."""
        return [a for name, a in self.allocations.items() if not self.returned(name)]

    def to_dict(self) -> dict:
        return {
            "aot_id": self.aot_id,
            "kernels": [k.to_dict() for k in self.kernels],
            "calls": [asdict(c) for c in self.calls],
            "allocations": {n: {**asdict(a), "bytes": a.nbytes} for n, a in self.allocations.items()},
            "aliases": self.aliases,
            "returns": self.returns,
            "materialized": [a.name for a in self.materialized()],
        }
