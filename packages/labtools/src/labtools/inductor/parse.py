"""Inductor's output code, read into structure.

One compiled graph is one Python module (Inductor's "output code"). It holds

- each generated kernel as a string handed to `async_compile`: `async_compile.triton(
  'name', '''<Triton source>''')` on CUDA, `async_compile.cpp_pybinding([...], r'''<C++
  source>''')` on the CPU; Triton kernels come with comments naming the post-grad FX
  nodes they fuse (`# Source node to ATen node mapping:  softmax => amax, div, ...`);
- a `call(args)` function (a method of `Runner` in recent versions) that allocates the
  buffers (`buf1 = empty_strided_cpu((2, 1), (1, 2), torch.float32)`), calls library
  kernels (`extern_kernels.addmm(...)`) and launches the generated ones in order.

`parse_module` reads both. A buffer allocated in call() is a tensor that reaches memory;
an op fused into a kernel whose result is never stored is one that does not.

Which FX nodes a kernel fuses is read from Triton's mapping comment, else from the
kernel's name: `dump` compiles with Inductor's `descriptive_names = "inductor_node"`, so
a C++ kernel is named after its nodes (`cpp_fused_amax_exp_sub_sum_1_div_0`), which the
post-grad graph's node names split unambiguously (`sum_1` is one node, `full_default`
another). Nothing here imports torch.

The module grammar (kernel strings, mapping comments, call()'s allocations and launches)
is read in one pass over one text.

The structure it fills (`CompiledGraph`, `Kernel`, `Call`, `Allocation`) is defined in
`labtools.inductor.graph`.
"""

from __future__ import annotations

import re

from labtools.inductor.graph import Allocation, Call, CompiledGraph, Kernel
from labtools.inductor.kernels import Body, call_args, read_triton, split_top
from labtools.inductor.kernels_cpp import read_cpp

# --- post-grad graph: node name -> ATen target --------------------------------------

_GRAPH_NODE = re.compile(r'^\s*(\w+)(?:: "[^"]*")? = torch\.ops\.(\w+)\.(\w+)\.(\w+)\(', re.M)
_FRAGMENT_NODE = re.compile(r"^#\s+%(\w+) : .*?call_function\[target=torch\.ops\.(\w+)\.(\w+)\.(\w+)\]", re.M)


def graph_nodes(text: str) -> dict[str, str]:
    """`amax: "f32[2, 1]..." = torch.ops.aten.amax.default(...)` -> {"amax": "aten.amax.default"}.

    Reads the post-grad graph Inductor logs (`post_grad_graphs`) and the `# Graph fragment:`
    comments above Triton kernels."""
    nodes = {m.group(1): f"{m.group(2)}.{m.group(3)}.{m.group(4)}" for m in _GRAPH_NODE.finditer(text)}
    nodes.update(
        {m.group(1): f"{m.group(2)}.{m.group(3)}.{m.group(4)}" for m in _FRAGMENT_NODE.finditer(text)}
    )
    return nodes


def split_fused_name(fused: str, vocabulary: set[str]) -> list[str] | None:
    """Split `amax_exp_sub_sum_1_div` into node names from `vocabulary`, or None if it can't."""
    cuts = [i for i, c in enumerate(fused) if c == "_"] + [len(fused)]
    best: dict[int, list[str]] = {-1: []}  # end of a prefix (a '_' index) -> its split
    for end in cuts:
        for start in sorted(best):
            piece = fused[start + 1 : end]
            if piece in vocabulary and end not in best:
                best[end] = best[start] + [piece]
    return best.get(len(fused))


def _op_of(node: str, targets: dict[str, str]) -> str:
    if node in targets:
        return targets[node].split(".")[1]
    return re.sub(r"_\d+$", "", node)


# --- the module ---------------------------------------------------------------------

_KERNEL_DEF = re.compile(r"^(\w+) = async_compile\.(triton|cpp_pybinding|cpp)\(", re.M)
_ALLOC = re.compile(r"^(\w+) = empty_strided(?:_(\w+))?\(\((.*?)\), \((.*?)\), torch\.(\w+)")
_SOURCE_NODES = re.compile(
    r"# (?:Topologically Sorted|Unsorted) Source Nodes: \[(.*?)\], Original ATen: \[(.*?)\]"
)


def _ints(text: str) -> tuple:
    return tuple(int(t) if t.lstrip("-").isdigit() else t for t in split_top(text))


# Inductor's own kernels are named <backend>_fused_<nodes>_<n>; anything else is a user's Triton kernel.
_INDUCTOR_NAME = re.compile(r"^(cpp|triton_(?:poi|red|per|tem|for|spl|coo|mix))_(?:fused_)?(.*?)_\d+$")


_TRITON_KINDS = {"poi": "pointwise", "red": "reduction", "per": "persistent_reduction", "tem": "template"}


def _kernel_kind(name: str, language: str, body: Body) -> str:
    if language == "cpp":
        return "cpp"
    if not _INDUCTOR_NAME.match(name):
        return "user_triton"
    return body.heuristic or _TRITON_KINDS.get(name[7:10], "triton")


def _metadata(comments: list[str]) -> tuple[list[str], list[str], list[str]]:
    """Triton's header comments -> (source nodes, original ATen ops, fused nodes)."""
    text = "\n".join(comments)
    sources, aten, nodes = [], [], []
    if m := _SOURCE_NODES.search(text):
        sources, aten = split_top(m.group(1)), split_top(m.group(2))
    mapping = text.split("Source node to ATen node mapping:", 1)
    if len(mapping) == 2:
        for line in mapping[1].splitlines()[1:]:
            m = re.match(r"#\s+(\S+) => (.+)$", line)
            if not m:
                break
            nodes += [n for n in split_top(m.group(2)) if n not in nodes]
    return sources, aten, nodes


def _read_kernels(source: str, targets: dict[str, str]) -> list[Kernel]:
    kernels = []
    lines = source.splitlines()
    for m in _KERNEL_DEF.finditer(source):
        name, how = m.groups()
        start = source.index("'''", m.end()) + 3
        end = source.index("'''", start)
        src = source[start:end].strip("\n") + "\n"
        lineno = source.count("\n", 0, m.start())
        comments = []
        for prev in reversed(lines[:lineno]):
            if not prev.startswith("#"):
                break
            comments.insert(0, prev)
        language = "triton" if how == "triton" else "cpp"
        body = read_triton(src) if language == "triton" else read_cpp(src)
        sources, aten, mapped = _metadata(comments)
        node_targets = {**graph_nodes("\n".join(comments)), **targets}
        named = _INDUCTOR_NAME.match(name)
        fused = named.group(2) if named else ""
        nodes = (split_fused_name(fused, set(node_targets) | set(mapped)) or []) if fused else []
        nodes += [n for n in mapped if n not in nodes]
        if not nodes and fused:  # no graph to split against: numbered suffixes stay with their node
            for tok in fused.split("_"):
                if tok.isdigit() and nodes:
                    nodes[-1] += "_" + tok
                elif tok:
                    nodes.append(tok)
        order = list(node_targets)
        if all(n in order for n in nodes):  # topological, as the graph lists them
            nodes.sort(key=order.index)
        kernels.append(
            Kernel(
                name=name,
                language=language,
                kind=_kernel_kind(name, language, body),
                fused_nodes=nodes,
                fused_ops=[_op_of(n, node_targets) for n in nodes],
                node_targets={n: node_targets[n] for n in nodes if n in node_targets},
                source_nodes=sources,
                original_aten=aten,
                source=src,
                body=body,
            )
        )
    return kernels


def _call_body(source: str) -> list[tuple[int, str]]:
    """The statements of call(), with 1-based line numbers in the module."""
    lines = source.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"\s*def call\((self, )?args\):", line):
            indent = len(line) - len(line.lstrip()) + 4
            out = []
            for j in range(i + 1, len(lines)):
                text = lines[j]
                if text.strip() and len(text) - len(text.lstrip()) < indent:
                    break
                out.append((j + 1, text.strip()))
            return out
    return []


def _buffers_in(args: list[str]) -> list[str]:
    names = []
    for a in args:
        m = re.match(r"(?:reinterpret_tensor\()?(\w+)", a)
        if m and not re.fullmatch(r"-?\d+|True|False|None", m.group(1)) and "=" not in a.split("(")[0]:
            names.append(m.group(1))
    return names


def parse_module(source: str, post_grad_graph: str = "") -> CompiledGraph:
    """Parse one Inductor output module (and, optionally, the post-grad graph it came from)."""
    targets = graph_nodes(post_grad_graph)
    kernels = _read_kernels(source, targets)
    by_name = {k.name: k for k in kernels}
    m = re.search(r"^# AOT ID: \['?(.*?)'?\]", source, re.M)
    graph = CompiledGraph(m.group(1) if m else None, kernels, [], {}, {}, [], source)
    pending: tuple[list[str], list[str]] = ([], [])
    for lineno, text in _call_body(source):
        if m := _SOURCE_NODES.search(text):
            pending = (split_top(m.group(1)), split_top(m.group(2)))
            continue
        if m := _ALLOC.match(text):
            graph.allocations[m.group(1)] = Allocation(
                m.group(1), _ints(m.group(3)), _ints(m.group(4)), m.group(5), m.group(2) or "", lineno
            )
            continue
        if m := re.match(r"(\w+) = (?:reinterpret_tensor\()?(\w+)\b.*; del \2\s+# reuse", text):
            graph.aliases[m.group(1)] = m.group(2)
            continue
        if m := re.match(r"(\w+) = (?:reinterpret_tensor\((\w+),|(\w+)\[\d+\]$)", text):
            graph.aliases[m.group(1)] = m.group(2) or m.group(3)  # a view, or one output of a tuple
            continue
        if m := re.match(r"return \((.*)\)", text):
            graph.returns = [r for r in split_top(m.group(1)) if re.fullmatch(r"\w+", r)]
            continue
        m = re.match(r"(?:(\w+) = )?([\w.]+?)(\.run)?\(", text)
        if not m or text.startswith(("assert_", "del ", "args.clear")):
            continue
        assigned, callee, _ = m.groups()
        args, _ = call_args(text, m.end() - 1)
        positional = [a for a in args if not re.match(r"\w+=", a)]
        if callee in by_name:
            kernel = by_name[callee]
            params = [p for p in kernel.body.params if p.role != "block"]
            bound = {p.name: _buffers_in([a])[0] for p, a in zip(params, positional) if _buffers_in([a])}
            call = Call(
                callee, "kernel", positional, _buffers_in(positional), bound, None, *pending, lineno, text
            )
            kernel.calls.append(call)
            if len(kernel.calls) == 1:  # the parameters are described as bound by the first launch
                if not kernel.source_nodes:
                    kernel.source_nodes, kernel.original_aten = pending
                for p, a in zip(params, positional):
                    p.binding, p.buffer = a, bound.get(p.name)
        elif callee.startswith(("extern_kernels.", "torch.ops.", "aten.")):
            out = next((a.split("=", 1)[1] for a in args if a.startswith("out=")), assigned)
            if assigned:  # the library allocated its result itself
                graph.allocations[assigned] = Allocation(assigned, ("?",), ("?",), "?", "", lineno)
            call = Call(
                callee, "extern", positional, _buffers_in(positional), {}, out, *pending, lineno, text
            )
        else:
            continue
        graph.calls.append(call)
        pending = ([], [])
    return graph
