"""Reading one generated kernel: its parameters, loads, stores, arithmetic and reductions.

Inductor writes two languages. On the CPU a kernel is C++ over `at::vec::Vectorized`
(one `extern "C" void kernel(...)` per fused group, OpenMP loops around vector loops);
on CUDA it is a Triton function (`@triton.jit def triton_<kind>_fused_<nodes>_<n>(...)`,
one program per block of rows). Both are straight-line code over numbered temporaries
(`tmp0`, `tmp1`, ...), one operation per line, which is what makes them readable: this
module turns each line into a `Step` (which op it is and which temporaries it uses) and
each memory access into an `Access` (which pointer, which index expression).

Nothing here imports torch: it reads text.

The Triton reader is here; the C++ one, in kernels_cpp.py, shares `Step`, `Access` and the
operand grammar (split_top, call_args, classify).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# --- small text helpers ------------------------------------------------------------


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split at `sep` where no bracket or quote is open: `f(a, b), c` -> [`f(a, b)`, `c`]."""
    parts, depth, quote, start = [], 0, None, 0
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i].strip())
            start = i + len(sep)
            i += len(sep)
            continue
        i += 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def call_args(text: str, open_paren: int) -> tuple[list[str], int]:
    """The arguments of the call whose '(' is at `open_paren`, and the index of its ')'."""
    depth = 0
    for i in range(open_paren, len(text)):
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
            if depth == 0:
                return split_top(text[open_paren + 1 : i]), i
    return split_top(text[open_paren + 1 :]), len(text)


def strip_parens(text: str) -> str:
    """`(a + b)` -> `a + b`, but `(a) + (b)` stays."""
    text = text.strip()
    while text.startswith("(") and text.endswith(")"):
        _, close = call_args(text, 0)
        if close != len(text) - 1:
            break
        text = text[1:-1].strip()
    return text


def simplify_cpp(text: str) -> str:
    """Drop C++'s casting noise: `static_cast<int64_t>(x1 + 600L*x0)` -> `(x1 + 600*x0)`."""
    prev = None
    while prev != text:
        prev = text
        text = re.sub(r"static_cast<int64_t>\(([^()]*(?:\([^()]*\)[^()]*)*)\)", r"(\1)", text)
        text = re.sub(r"(?<![\w>\]])\((\w+)\)", r"\1", text)
    return re.sub(r"\b(\d+)L\b", r"\1", text)


TEMP = re.compile(r"\b_?tmp(?:_acc)?\d+(?:_[a-z0-9]+)?\b")  # tmp3, _tmp2, tmp_acc0_vec, tmp3_mean

# fmt: off
# Function names that reduce along an axis (Triton) -> the reduction they compute.
TRITON_REDUCTIONS = {
    "max2": "max", "min2": "min", "sum": "sum", "max": "max", "min": "min", "prod": "prod",
    "argmax": "argmax", "argmin": "argmin", "any": "any", "reduce": "reduce",
}
# Calls that only move, widen or cast a value: not arithmetic of their own.
PLUMBING = {
    "broadcast_to": "broadcast", "Vectorized": "broadcast", "VectorizedN": "broadcast",
    "static_cast": "cast", "to": "cast", "convert": "cast", "full": "constant",
    "load": "load", "loadu": "load", "where": "where", "blendv": "where",
    "maximum": "maximum", "minimum": "minimum",
}
BINARY = [  # lowest precedence first
    ("==", "eq"), ("!=", "ne"), ("<=", "le"), (">=", "ge"), ("<", "lt"), (">", "gt"),
    ("|", "or"), ("&", "and"),
    ("+", "add"), ("-", "sub"),
    ("*", "mul"), ("//", "floordiv"), ("/", "div"), ("%", "mod"),
]
# fmt: on


def _last_name(dotted: str) -> str:
    return re.split(r"\.|::", dotted)[-1]


def classify(rhs: str) -> tuple[str, bool]:
    """What one right-hand side computes: (op, is_reduction), ops named like ATen's."""
    e = strip_parens(rhs.rstrip(";"))
    e = re.sub(r"(\[:, None\]|\[None, :\])", "", e)
    e = re.sub(r"\.to\([\w.]+\)$", "", e)
    e = re.sub(r"decltype\(\w+\)::", "", e)
    e = re.sub(r"^static_cast<\w+>\(([^()]+)\)$", r"\1", e)
    if re.fullmatch(
        r"-?[\d.]+(e-?\d+)?|float\(\"-?inf\"\)|-?std::numeric_limits<\w+>::\w+\(\)|True|False", e
    ):
        return "constant", False
    if TEMP.fullmatch(e) or re.fullmatch(r"\w+", e):
        return "copy", False
    if re.fullmatch(r"-\s*\w+", e):
        return "neg", False
    for token, op in BINARY:  # a top-level binary operator, written with spaces
        if len(split_top(e, f" {token} ")) > 1:
            return op, False
    m = re.match(r"([A-Za-z_][\w.:]*(?:<[^()]*>)?(?:::\w+)*)\s*\(", e)
    if m:
        name = _last_name(re.sub(r"<[^()]*>", "", m.group(1)))
        if name == "VecMask":  # at::vec::VecMask<float,1>(tmp0 == tmp2): the comparison inside
            inner, _ = call_args(e, m.end() - 1)
            return classify(inner[0]) if inner else ("mask", False)
        if "welford" in name:
            return "welford", True
        if "online_softmax" in name:
            return "online_softmax", True
        if name in TRITON_REDUCTIONS and not m.group(1).startswith("libdevice"):
            return TRITON_REDUCTIONS[name], True
        return PLUMBING.get(name, name.removesuffix("_u20")), False  # tmp3.exp_u20(): exp
    return "expr", False


# --- the structure -----------------------------------------------------------------


@dataclass
class Param:
    name: str
    role: str  # input | output | in_out | size | block
    ctype: str = ""
    binding: str | None = None  # the argument call() passes, set by the wrapper parser
    buffer: str | None = None  # the wrapper buffer that argument refers to


@dataclass
class Step:
    """One `tmpN = ...` line."""

    var: str
    op: str
    reduction: bool
    uses: list[str]
    line: int  # 1-based, within the kernel's source
    text: str


@dataclass
class Access:
    kind: str  # load | store
    ptr: str
    index: str
    var: str  # the temporary loaded into / stored from
    line: int
    text: str
    mask: str | None = None
    lanes: int | None = None  # C++ vector width


@dataclass
class Reduction:
    op: str  # max | sum | min | welford | online_softmax | ...
    var: str  # where the reduced value ends up
    accumulator: str | None
    lines: list[int]
    looped: bool  # accumulated over a loop (vs. one block held whole)


@dataclass
class Loop:
    var: str
    start: str
    end: str
    step: str
    parallel: bool
    line: int


@dataclass
class LocalBuffer:
    name: str
    dtype: str
    size: str
    line: int


@dataclass
class Body:
    language: str  # triton | cpp
    heuristic: str | None = None  # Triton: the @triton_heuristics decorator
    size_hints: dict[str, int] = field(default_factory=dict)
    params: list[Param] = field(default_factory=list)
    setup: dict[str, str] = field(default_factory=dict)  # Triton index variables: x0 = xindex, ...
    constants: dict[str, str] = field(default_factory=dict)  # R0_BLOCK: tl.constexpr = 1024
    steps: list[Step] = field(default_factory=list)
    loads: list[Access] = field(default_factory=list)
    stores: list[Access] = field(default_factory=list)
    reductions: list[Reduction] = field(default_factory=list)
    loops: list[Loop] = field(default_factory=list)
    local_buffers: list[LocalBuffer] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # C++: auto in_ptr1 = in_out_ptr0;

    def step_of(self, var: str, before_line: int) -> Step | None:
        """The step that last defined `var` before `before_line` (C++ reuses names per loop)."""
        found = None
        for s in self.steps:
            if s.var == var and s.line <= before_line:
                found = s
        return found

    def origin_op(self, var: str, line: int, hops: int = 4) -> tuple[str, bool]:
        """The arithmetic behind `var`, looking through copies, casts and broadcasts."""
        latest = None
        for r in self.reductions:
            if var in (r.var, r.accumulator) and min(r.lines) <= line:
                latest = r
        if latest is not None:
            return latest.op, True
        s = self.step_of(var, line)
        while s is not None and hops and s.op in ("copy", "cast", "broadcast") and s.uses:
            s, hops = self.step_of(s.uses[0], s.line - 1), hops - 1
        return (s.op, s.reduction) if s else ("load", False)


def param_role(name: str) -> str:
    if name.startswith("in_out_ptr"):
        return "in_out"
    if name.startswith("out_ptr"):
        return "output"
    if name.startswith(("in_ptr", "arg_")):
        return "input"
    if name.endswith("numel") or name.startswith("ks") or re.fullmatch(r"s\d+", name):
        return "size"
    return "block"


# --- Triton ------------------------------------------------------------------------


def read_triton(src: str) -> Body:
    """A Triton kernel's body, line by line (one long loop: each branch is one line form
    Inductor emits, and they share the loop's state: the current loop and its masks)."""
    body = Body("triton")
    m = re.search(r"@triton_heuristics\.(\w+)\(", src)
    body.heuristic = m.group(1) if m else None
    m = re.search(r"size_hints=\{([^}]*)\}", src)
    if m:
        body.size_hints = {k: int(v) for k, v in re.findall(r"'(\w+)':\s*(\d+)", m.group(1))}
    m = re.search(r"^def \w+\(([^)]*)\):", src, re.M)
    if m:
        for p in split_top(m.group(1)):
            name, _, ann = p.partition(":")
            name = name.strip()
            body.params.append(Param(name, "block" if "constexpr" in ann else param_role(name), ann.strip()))
    for lineno, raw in enumerate(src.splitlines(), 1):
        line = raw.strip()
        if re.match(r"for r\w*_offset in ", line):
            body.loops.append(
                Loop(re.match(r"for (\w+)", line).group(1), "0", "r0_numel", "R0_BLOCK", False, lineno)
            )
            continue
        if m := re.match(r"(\w+)\s*:\s*tl\.constexpr\s*=\s*(.+)$", line):
            body.constants[m.group(1)] = m.group(2)
            continue
        if line.startswith(("tl.store(", "tl.atomic_add(")):
            args, _ = call_args(line, line.index("("))
            ptr, index = ptr_index(args[0])
            mask = args[2] if len(args) > 2 and "=" not in args[2] else None
            body.stores.append(Access("store", ptr, index, args[1], lineno, line, mask))
            continue
        if m := re.match(r"(\w+(?:, \w+)+) = (.+)$", line):  # welford / online softmax return several values
            op, is_red = classify(m.group(2))
            for var in split_top(m.group(1)):
                body.steps.append(Step(var, op, is_red, TEMP.findall(m.group(2)), lineno, line))
            if is_red:
                acc = next((u for u in TEMP.findall(m.group(2)) if u.startswith("_tmp")), None)
                body.reductions.append(
                    Reduction(op, split_top(m.group(1))[0], acc, [lineno], acc is not None)
                )
            continue
        m = re.match(r"(\w+) = (.+)$", line)
        if not m:
            continue
        var, rhs = m.groups()
        if not TEMP.fullmatch(var):
            body.setup[var] = rhs
            continue
        op, is_red = classify(rhs)
        if op == "where" and "mask" in call_args(rhs, rhs.index("("))[0][0]:
            op = "mask"  # tl.where(r0_mask & xmask, v, identity): lanes past the row's end
        uses = TEMP.findall(rhs)
        body.steps.append(Step(var, op, is_red, uses, lineno, line))
        if op == "load":
            args, _ = call_args(rhs, rhs.index("("))
            ptr, index = ptr_index(args[0])
            mask = args[1] if len(args) > 1 and "=" not in args[1] else None
            body.loads.append(Access("load", ptr, index, var, lineno, line, mask))
        if is_red:
            acc = next((u for u in uses if u.startswith("_tmp")), None)
            looped = acc is not None
            lines = [lineno]
            if looped:  # the accumulator's updates inside the loop belong to this reduction
                lines = [s.line for s in body.steps if s.var == acc or acc in s.uses] + lines
            body.reductions.append(Reduction(op, var, acc, sorted(set(lines)), looped))
    # a looped reduction's running update (`_tmp2 = tl.where(mask, tmp3, _tmp2)`, with tmp3 the
    # maximum/sum of _tmp2 and the new value) is what the loop accumulates: name it
    for r in body.reductions:
        for s in body.steps:
            if (
                r.accumulator
                and r.accumulator in s.uses
                and s.var != r.var
                and s.op in ("maximum", "minimum", "add")
            ):
                s.reduction = True
    return body


def ptr_index(arg: str) -> tuple[str, str]:
    """`in_ptr0 + (r0_1 + 600*x0)` -> (`in_ptr0`, `r0_1 + 600*x0`)."""
    ptr, sep, index = arg.partition(" + ")
    return ptr.strip(), strip_parens(index) if sep else "0"
