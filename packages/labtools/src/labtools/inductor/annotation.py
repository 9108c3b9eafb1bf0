"""A Markdown walkthrough of one generated kernel, written from its parse.

Five questions, in the order a reader asks them: which ops were fused, where the input
is read, where the output is written, how the reductions are expressed, and what is not
there (which fused results never reach a buffer). Every statement points at a line of
the kernel's source (`Kernel.source`, the file `lab inductor dump` writes), and every
buffer at the allocation in the wrapper's call() that backs it.
"""

from __future__ import annotations

import re

from labtools.inductor.graph import VIEW_OPS, CompiledGraph, Kernel
from labtools.inductor.kernels import Access, Step, split_top

REDUCTION_OPS = {
    "max",
    "min",
    "sum",
    "prod",
    "welford",
    "online_softmax",
    "argmax",
    "argmin",
    "any",
    "reduce",
}
SOFTMAX_OPS = ("amax", "sub", "exp", "sum", "div")
# On CUDA, Inductor rewrites softmax's two reductions into one node, prims.prepare_softmax_online,
# which returns the row max and the sum of exp(x - max) together (in a looped kernel as one
# online pass that rescales the running sum when the max grows; in a persistent one as a max
# and a sum over the row held in registers).
ONLINE_SOFTMAX_OPS = ("prepare_softmax_online", "sub", "exp", "div")
KIND_TEXT = {
    "cpp": "a C++ kernel (Inductor's CPU backend: loops over rows, `at::vec::Vectorized` lanes inside)",
    "pointwise": "a Triton pointwise kernel (one element per lane, no reduction)",
    "reduction": "a Triton reduction kernel that loops over the reduction axis in chunks of `R0_BLOCK`",
    "persistent_reduction": "a Triton persistent reduction: a whole row is held in one block, no loop",
    "template": "a Triton template (a hand-written Inductor template, e.g. a matmul, with fused epilogue)",
}


def _code(text: str) -> str:
    return f"`{text}`" if "`" not in text else f"``{text}``"


def _lines(nums: list[int]) -> str:
    nums = sorted(set(nums))
    return ("line " if len(nums) == 1 else "lines ") + ", ".join(str(n) for n in nums)


def _a(op: str) -> str:
    return f"an `{op}`" if op[0] in "aeiou" else f"a `{op}`"


def is_softmax(kernel: Kernel) -> bool:
    """Does the kernel fuse a whole softmax: max, subtract, exp, sum and divide (the max and
    the sum possibly as Inductor's one prepare_softmax_online node)?"""
    return any(all(op in kernel.fused_ops for op in ops) for ops in (SOFTMAX_OPS, ONLINE_SOFTMAX_OPS))


def _steps_for(kernel: Kernel, node: str) -> list[Step]:
    ops = kernel.code_ops(node)
    return [s for s in kernel.body.steps if s.op in ops and s.reduction == (s.op in REDUCTION_OPS)]


def _describe_index(index: str) -> str:
    """`r0_1 + 600*x0` -> how far one step of each index variable moves through memory."""
    parts = []
    for term in split_top(index, " + "):
        if m := re.fullmatch(r"(-?\d+)\*(\w+)", term):
            parts.append(f"`{m.group(2)}` has stride {m.group(1)}")
        elif re.fullmatch(r"[A-Za-z_]\w*", term):
            parts.append(f"`{term}` has stride 1 (contiguous)")
        elif re.fullmatch(r"-?\d+", term):
            parts.append(f"a fixed offset of {term} elements")
        else:
            return "a non-affine index: " + _code(index)
    return "; ".join(parts) if parts else "a single element"


def _buffer_text(graph: CompiledGraph | None, buf: str | None) -> str:
    if not buf:
        return "a scalar"
    if graph is None:
        return f"`{buf}`"
    alloc = graph.allocation(buf)
    root = graph.storage(buf)
    where = f"`{buf}`" + (f" (storage of `{root}`)" if root != buf else "")
    if alloc is None:
        return where + ": an input of the compiled graph"
    size = f"{alloc.nbytes:,} bytes" if alloc.nbytes is not None else "size known at run time"
    fate = (
        "returned by call()" if graph.returned(buf) else "an intermediate: allocated in call(), not returned"
    )
    return f"{where}: {alloc.describe()}, {size}, {fate}"


def _producer(graph: CompiledGraph | None, kernel: Kernel, buf: str | None) -> str:
    if graph is None or not buf or kernel.call is None:
        return ""
    before = [c for c in graph.writers(buf) if c.line < kernel.call.line]
    if not before:
        return ""
    c = before[-1]
    origin = f" ({', '.join(c.source_nodes)})" if c.source_nodes else ""
    return f"; written before by `{c.callee}`{origin}"


def _index_variables(kernel: Kernel) -> list[str]:
    b = kernel.body
    out = []
    if kernel.language == "triton":
        for name in ("xoffset", "xindex", "xmask", "r0_index", "r0_mask"):
            if name in b.setup:
                out.append(f"- `{name} = {b.setup[name]}`")
        derived = [f"`{k} = {v}`" for k, v in b.setup.items() if re.fullmatch(r"[xyr]\d+(_\d+)?", k)]
        if derived:
            out.append("- index variables: " + ", ".join(derived))
        for k, v in b.constants.items():
            out.append(f"- `{k} = {v}` (a compile-time block size)")
    else:
        for lp in b.loops:
            par = ", split across threads by `#pragma omp for`" if lp.parallel else ""
            vec = f", {lp.step} lanes per `Vectorized` step" if lp.step not in ("1",) else ""
            out.append(
                f"- `{lp.var}` runs over [{lp.start}, {lp.end}) (the loop at line {lp.line}){vec}{par}"
            )
    return out


def _access_line(a: Access) -> str:
    lanes = f"; {a.lanes} lanes per access" if a.lanes else ""
    mask = f"; masked by `{a.mask}`" if a.mask and a.mask != "None" else ""
    return f"  - line {a.line}: {_code(a.text)}. Index `{a.index}`: {_describe_index(a.index)}{lanes}{mask}."


def _stored_nodes(kernel: Kernel) -> dict[str, list[Access]]:
    """For each fused node, the stores that write its value (empty: it never leaves the kernel)."""
    body = kernel.body
    stores = [(a, *body.origin_op(a.var, a.line)) for a in body.stores]
    return {
        node: [a for a, op, red in stores if op in kernel.code_ops(node) and red == (op in REDUCTION_OPS)]
        for node in kernel.compute_nodes
    }


def annotate(kernel: Kernel, graph: CompiledGraph | None = None) -> str:
    """The walkthrough of `kernel` as Markdown; `graph` (its module) adds the wrapper's buffers.

    Long (the five sections in the order the reader meets them, module docstring) because
    each section's sentences refer to names the earlier ones introduced."""
    b = kernel.body
    local = {lb.name for lb in b.local_buffers}
    params = {p.name: p for p in b.params}
    md = [f"## `{kernel.name}`", ""]
    origin = ""
    if kernel.original_aten or kernel.source_nodes:
        origin = (
            f" They come from {', '.join(f'`{a}`' for a in kernel.original_aten)}"
            f" (source nodes: {', '.join(kernel.source_nodes)})."
        )
    kind = KIND_TEXT.get(kernel.kind, f"a {kernel.language} kernel ({kernel.kind})")
    md.append(
        f"{kind[0].upper()}{kind[1:]}, "
        f"{len(kernel.source.splitlines())} lines. It fuses {len(kernel.fused_nodes)} nodes of the "
        f"post-grad FX graph: {', '.join(f'`{n}`' for n in kernel.fused_nodes)}.{origin}"
    )
    if kernel.call is not None:
        again = (
            f" It is launched {len(kernel.calls)} times (identical layers share one kernel); below, the first "
            "launch's buffers."
            if len(kernel.calls) > 1
            else ""
        )
        md += ["", f"The wrapper's call() launches it as {_code(kernel.call.text)}.{again}"]

    md += [
        "",
        "### 1. Which ATen ops were fused",
        "",
        "| FX node | ATen op | in the kernel |",
        "|---|---|---|",
    ]
    for node, op in zip(kernel.fused_nodes, kernel.fused_ops):
        target = kernel.node_targets.get(node, f"aten.{op}")
        if op in VIEW_OPS:
            where = "no code of its own: a view, folded into the index expressions"
        else:
            steps = _steps_for(kernel, node)
            if not steps:
                where = "not found as its own line (folded into a neighbouring expression)"
            elif all(s.reduction for s in steps):
                where = f"{' and '.join(dict.fromkeys(s.op for s in steps))} reduction, {_lines([s.line for s in steps])}"
            else:
                texts = list(dict.fromkeys(s.text for s in steps))
                where = f"{_lines([s.line for s in steps])}: " + ", ".join(_code(t) for t in texts[:2])
                if len(texts) > 2:
                    where += f" and {len(texts) - 2} more"
                if len(texts) < len(steps):
                    where += (
                        " (the same code in several loop nests: recomputed there, not stored and reloaded)"
                    )
        md.append(f"| `{node}` | `{target}` | {where} |")
    if "prepare_softmax_online" in kernel.fused_ops:
        md += [
            "",
            "`prepare_softmax_online` is Inductor's single node for softmax's two reductions: it "
            "returns the row max and the sum of exp(x − max) together, so the max and the sum need no "
            "separate passes over memory (in a looped kernel it is one online pass that rescales the "
            "running sum whenever the running max grows).",
        ]

    md += ["", "### 2. Where the input is read", ""]
    reads = [a for a in b.loads if b.aliases.get(a.ptr, a.ptr) not in local]
    for ptr in dict.fromkeys(b.aliases.get(a.ptr, a.ptr) for a in reads):
        p = params.get(ptr)
        buf = p.buffer if p else None
        role = {
            "in_out": "read, then overwritten in place",
            "output": "an output this kernel reads back",
            "input": "input",
        }.get(p.role if p else "", "pointer")
        names = [f"`{alias}`" for alias, target in b.aliases.items() if target == ptr]
        also = (
            f" Also read under the name {', '.join(names)} (`auto {names[0][1:-1]} = {ptr};`)."
            if names
            else ""
        )
        md.append(
            f"- **`{ptr}`** ({role}) is {_buffer_text(graph, buf)}{_producer(graph, kernel, buf)}.{also}"
        )
        md += [_access_line(a) for a in reads if b.aliases.get(a.ptr, a.ptr) == ptr]
    idx = _index_variables(kernel)
    if idx:
        md += ["", "Where the index variables come from:", "", *idx]

    md += ["", "### 3. Where the output is written", ""]
    for a in b.stores:
        op, red = b.origin_op(a.var, a.line)
        what = (
            f"the {op} reduction's result"
            if red
            else f"`{a.var}`, a value loaded unchanged (a copy into a new layout)"
            if op == "load"
            else f"`{a.var}`, the result of {_a(op)}"
        )
        if a.ptr in local:
            md.append(
                f"- line {a.line}: {_code(a.text)} writes {what} to the kernel's own scratch buffer `{a.ptr}`, "
                f"index `{a.index}` (see 5)."
            )
            continue
        p = params.get(a.ptr)
        md.append(
            f"- line {a.line}: {_code(a.text)} writes {what} to **`{a.ptr}`**, "
            f"{_buffer_text(graph, p.buffer if p else None)}. Index `{a.index}`: {_describe_index(a.index)}."
        )

    md += ["", "### 4. The reductions", ""]
    if not b.reductions:
        md.append("None: every output element depends only on input elements at the same index.")
    for r in b.reductions:
        md.append(_reduction_text(kernel, r))

    md += ["", "### 5. What is not there", ""]
    md += _not_there(kernel, graph)
    return "\n".join(md) + "\n"


def _reduction_text(kernel: Kernel, r) -> str:
    b = kernel.body
    src = kernel.source.splitlines()
    quote = {n: _code(src[n - 1].strip()) for n in r.lines if 0 < n <= len(src)}
    if kernel.language == "cpp":
        init, update, fold = r.lines[0], r.lines[2] if len(r.lines) > 2 else r.lines[-1], r.lines[-1]
        return (
            f"- **{r.op}**: the scalar accumulator starts at the identity (line {init}: {quote[init]}) and so "
            f"does a `Vectorized` twin that holds one partial {r.op} per lane; each step of the inner loop folds "
            f"one vector in (line {update}: {quote[update]}); after the loop `vec_reduce_all` folds the lanes "
            f"into `{r.var}` (line {fold})."
        )
    last = max(r.lines)
    if r.looped:
        return (
            f"- **{r.op}** ({_lines(r.lines)}): a loop walks the row in chunks of `R0_BLOCK` lanes; the running "
            f"accumulator `{r.accumulator}` keeps one partial {r.op} per lane (`tl.where` leaves lanes past the "
            f"row's end unchanged), and after the loop line {last} folds the lanes along axis 1: {quote[last]}."
        )
    block = b.constants.get("R0_BLOCK") or "R0_BLOCK"
    numel = b.setup.get("r0_numel", "r0_numel")
    masked = [s for s in b.steps if s.op == "mask" and s.line < last]
    mask = f" Lanes past the row's end first get the identity ({_code(masked[-1].text)})." if masked else ""
    return (
        f"- **{r.op}** (line {last}: {quote[last]}): the whole row ({numel} elements) sits in one block of "
        f"`R0_BLOCK` = {block} lanes and one call reduces it along axis 1: no loop, no partial results in "
        f"memory.{mask}"
    )


def _not_there(kernel: Kernel, graph: CompiledGraph | None) -> list[str]:
    """The section on fused results that never reach a buffer (one case per kind of
    temporary, local buffer, stored node and wrapper buffer)."""
    b = kernel.body
    local = {lb.name: lb for lb in b.local_buffers}
    stored = _stored_nodes(kernel)
    out = []
    registers = [n for n, acc in stored.items() if not acc]
    scratch = {n: acc for n, acc in stored.items() if acc and all(a.ptr in local for a in acc)}
    memory = {n: acc for n, acc in stored.items() if any(a.ptr not in local for a in acc)}
    if registers:
        out.append(
            f"- Never written anywhere: {', '.join(f'`{n}`' for n in registers)}: values that exist only "
            "as temporaries (registers) between the line that computes them and the lines that use them."
        )
    for n, acc in scratch.items():
        lb = local[acc[0].ptr]
        out.append(
            f"- `{n}` is written only to `{lb.name}`, a {lb.size}-element `{lb.dtype}` scratch row the kernel "
            f"allocates itself (line {lb.line}), once per thread, reused for every row: not a tensor, "
            "never seen by call()."
        )
    for n, acc in memory.items():
        ptrs = sorted({a.ptr for a in acc if a.ptr not in local})
        where = ", ".join(f"`{p}`" for p in ptrs)
        out.append(f"- `{n}` does reach memory: stored to {where} ({_lines([a.line for a in acc])}).")
    if is_softmax(kernel):
        exp = next(n for n, op in zip(kernel.fused_nodes, kernel.fused_ops) if op == "exp")
        if exp in registers:
            out.append(
                "- So there is **no buffer for exp(x − max)**: the fusion's win. Unfused, softmax writes "
                "exp(x − max) to memory and reads it back for the sum and for the division."
            )
        elif exp in scratch:
            out.append(
                "- So there is **no tensor for exp(x − max)**: it goes to a per-thread scratch row that "
                "stays in cache, not to a buffer call() allocates."
            )
        else:
            out.append(
                "- exp(x − max) **is** written to memory in this kernel and read back for the division, "
                "into storage the kernel writes anyway (see 3): no buffer is allocated for it, but its bytes move."
            )
    if graph is not None and kernel.call is not None:
        written = []
        for p in b.params:
            if p.role in ("output", "in_out") and p.buffer and not graph.returned(p.buffer):
                later = list(dict.fromkeys(c.callee for c in graph.readers(p.buffer, kernel.call.line)))
                use = (
                    f"read later by {', '.join(f'`{c}`' for c in later)}"
                    if later
                    else "read by nothing after"
                )
                written.append(
                    f"`{p.buffer}` via `{p.name}` ({_buffer_text(graph, p.buffer).split(': ', 1)[-1]}; {use})"
                )
        if written:
            out.append(
                "- Buffers it writes that call() does not return (intermediates that reach memory): "
                + "; ".join(written)
                + "."
            )
    return out


def annotate_all(graphs: list[CompiledGraph], where: str) -> str:
    """Every generated kernel of a dump, softmax kernels first, under one summary table."""
    pairs = [(k, g) for g in graphs for k in g.kernels]
    pairs.sort(key=lambda kg: not is_softmax(kg[0]))
    md = [
        f"# Inductor's kernels ({where})",
        "",
        f"{len(graphs)} compiled graph(s), {len(pairs)} generated kernel(s); library calls "
        f"(matmuls, attention) are listed under each graph's buffers.",
        "",
        "| kernel | kind | fuses |",
        "|---|---|---|",
    ]
    md[-2:] = ["| kernel | kind | launches | fuses |", "|---|---|---|---|"]
    md += [f"| `{k.name}` | {k.kind} | {len(k.calls)} | {', '.join(k.fused_ops)} |" for k, _ in pairs]
    for i, g in enumerate(graphs):
        md += [
            "",
            f"Graph {i} ({g.aot_id}): call() allocates "
            + (", ".join(f"`{a.name}` {a.describe()}" for a in g.allocations.values()) or "nothing")
            + "; library calls: "
            + (", ".join(f"`{c.callee}`" for c in g.calls if c.kind == "extern") or "none")
            + ".",
        ]
    for k, g in pairs:
        md += ["", annotate(k, g)]
    return "\n".join(md)
