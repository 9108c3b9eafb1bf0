"""Reading one kernel that Inductor generated for the CPU: C++ over `at::vec::Vectorized`, one
`extern "C" void kernel(...)` per fused group, OpenMP loops around vector loops. The structure
and the operand grammar are kernels.py's, shared with the Triton reader."""

from __future__ import annotations

import re

from labtools.inductor.kernels import (
    TEMP,
    Access,
    Body,
    LocalBuffer,
    Loop,
    Param,
    Reduction,
    Step,
    call_args,
    classify,
    param_role,
    ptr_index,
    simplify_cpp,
    split_top,
    strip_parens,
)

_CPP_LOOP = re.compile(r"for\s*\(\s*int64_t (\w+)\s*=\s*(.+?);\s*\1\s*<\s*(.+?);\s*\1\s*\+=\s*(.+?)\)\s*$")


def read_cpp(src: str) -> Body:
    body = Body("cpp")
    m = re.search(r'extern "C"[^(]*\(([^)]*)\)', src, re.S)
    if m:
        for p in split_top(" ".join(m.group(1).split())):
            ctype, _, name = p.rpartition(" ")
            body.params.append(Param(name, param_role(name), ctype.strip()))
    prev = ""
    pending_red: dict[str, Reduction] = {}
    for lineno, raw in enumerate(src.splitlines(), 1):
        line, text = simplify_cpp(raw.strip()), raw.strip()
        if not line:
            continue
        if m := _CPP_LOOP.match(line):
            var, start, end, step = m.groups()
            body.loops.append(Loop(var, start, end, step, prev.startswith("#pragma omp for"), lineno))
        elif m := re.match(r"auto (\w+) = (\w+);$", line):
            body.aliases[m.group(1)] = m.group(2)
        elif m := re.match(
            r"std::unique_ptr<(\w+) \[\]> buf_(\w+) = std::make_unique<\w+ \[\]>\((.+)\);$", line
        ):
            body.local_buffers.append(LocalBuffer(m.group(2), m.group(1), m.group(3), lineno))
        elif m := re.match(r"(?:[\w:<>, ]+ )?(tmp_acc\d+(?:_vec)?) = (.+);$", line):
            _cpp_reduction_line(
                body,
                pending_red,
                m.group(1),
                m.group(2),
                lineno,
                text,
                declared=" " in line.split("=")[0].strip(),
            )
        elif m := re.match(r"auto (tmp\d+) = (.+);$", line):
            var, rhs = m.groups()
            op, _ = classify(rhs)
            if re.match(r"\w+\[.+\]$", rhs):  # scalar load: in_ptr0[x0]
                op = "load"
            body.steps.append(Step(var, op, False, TEMP.findall(rhs), lineno, text))
            if op == "load":
                body.loads.append(_cpp_load(rhs, var, lineno, text))
        elif m := re.match(r"(\w+)\.store\((.+)\);$", line):
            args = split_top(m.group(2))
            ptr, index = ptr_index(args[0])
            lanes = int(args[1]) if len(args) > 1 and args[1].isdigit() else None
            body.stores.append(Access("store", ptr, index, m.group(1), lineno, text, lanes=lanes))
        elif m := re.match(r"(\w+)\[(.+)\] = (.+);$", line):
            value = TEMP.findall(m.group(3))
            body.stores.append(
                Access(
                    "store",
                    m.group(1),
                    strip_parens(m.group(2)),
                    value[0] if value else m.group(3),
                    lineno,
                    text,
                )
            )
        prev = line
    return body


def _cpp_load(rhs: str, var: str, lineno: int, line: str) -> Access:
    if m := re.match(r"(\w+)\[(.+)\]$", rhs):
        return Access("load", m.group(1), strip_parens(m.group(2)), var, lineno, line)
    args, _ = call_args(rhs, rhs.index("("))
    ptr, index = ptr_index(args[0])
    lanes = int(args[1]) if len(args) > 1 and args[1].isdigit() else None
    return Access("load", ptr, index, var, lineno, line, lanes=lanes)


def _cpp_reduction_line(
    body: Body, pending: dict, acc: str, rhs: str, lineno: int, line: str, declared: bool
) -> None:
    """C++ reductions: `float tmp_acc0 = -inf;` opens one, `tmp_acc0_vec = maximum(tmp_acc0_vec, tmp0)`
    accumulates, `tmp_acc0 = max_propagate_nan(tmp_acc0, vec_reduce_all(...))` folds the lanes."""
    scalar = acc.removesuffix("_vec")
    if declared:
        if scalar not in pending or acc == scalar:
            pending[scalar] = Reduction("?", scalar, acc, [lineno], looped=True)
            body.reductions.append(pending[scalar])
        else:
            pending[scalar].lines.append(lineno)
        return
    red = pending.get(scalar)
    if red is None:
        return
    red.lines.append(lineno)
    if red.op == "?":
        op, _ = classify(rhs)
        red.op = {
            "maximum": "max",
            "max_propagate_nan": "max",
            "minimum": "min",
            "min_propagate_nan": "min",
            "add": "sum",
            "mul": "prod",
        }.get(op, op)
    uses = [u for u in TEMP.findall(rhs) if u.removesuffix("_vec") != scalar]
    body.steps.append(Step(acc, red.op, True, uses, lineno, line))
