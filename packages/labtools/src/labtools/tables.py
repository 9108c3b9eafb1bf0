"""The one table renderer of the `lab` commands.

`render(headers, rows)` returns the table as text in one of three styles:

- ``"rich"``: a `rich` table, when rich is installed (plain text otherwise);
- ``"plain"``: aligned columns under a rule, for logs and pipes (and without rich);
- ``"markdown"``: a pipe table, for REPORT.md files.

``"auto"`` (the default) picks rich for a terminal and plain otherwise. A row that is
``None`` is a group break (a blank line in plain text, a section line in rich, dropped
in Markdown). Cells are strings or numbers; None prints as "-". A column is right-aligned
when every cell in it is a number, unless `align` says otherwise ("l" or "r" per column).
"""

from __future__ import annotations

import importlib.util
import io
import sys
from collections.abc import Sequence
from numbers import Number

Cell = str | int | float | None
STYLES = ("auto", "rich", "plain", "markdown")


def cell_text(value: Cell) -> str:
    if value is None:
        return "-"
    return str(value)


def _alignments(headers: Sequence[str], rows: list[Sequence[Cell]], align: str | None) -> str:
    if align is not None:
        if len(align) != len(headers):
            raise ValueError(f"align has {len(align)} letters for {len(headers)} columns")
        return align
    out = []
    for j in range(len(headers)):
        column = [r[j] for r in rows if r[j] is not None]
        numeric = bool(column) and all(isinstance(v, Number) for v in column)
        out.append("r" if numeric else "l")
    return "".join(out)


def _rich_available(stream) -> bool:
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return hasattr(stream, "isatty") and stream.isatty()


def render(
    headers: Sequence[str],
    rows: Sequence[Sequence[Cell] | None],
    *,
    style: str = "auto",
    align: str | None = None,
    title: str | None = None,
    stream=None,
) -> str:
    """The table as text (see the module docstring); `stream` decides "auto" (stdout)."""
    if style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}, got {style!r}")
    body = [r for r in rows if r is not None]
    for r in body:
        if len(r) != len(headers):
            raise ValueError(f"row {list(r)!r} has {len(r)} cells for {len(headers)} columns")
    aligns = _alignments(headers, body, align)
    if style == "auto":
        style = "rich" if _rich_available(stream or sys.stdout) else "plain"
    if style == "rich" and importlib.util.find_spec("rich") is None:
        style = "plain"  # rich is optional: the same table without its frame
    if style == "markdown":
        return _markdown(headers, body, aligns, title)
    if style == "rich":
        return _rich(headers, rows, aligns, title)
    return _plain(headers, rows, aligns, title)


def _plain(headers, rows, aligns, title) -> str:
    text_rows = [None if r is None else [cell_text(v) for v in r] for r in rows]
    widths = [len(h) for h in headers]
    for r in text_rows:
        if r is not None:
            widths = [max(w, len(c)) for w, c in zip(widths, r, strict=True)]

    def line(cells) -> str:
        parts = [
            c.rjust(w) if a == "r" else c.ljust(w) for c, w, a in zip(cells, widths, aligns, strict=True)
        ]
        return "  ".join(parts).rstrip()

    head = line(list(headers))
    out = [title] if title else []
    out += [head, "-" * len(head)]
    out += ["" if r is None else line(r) for r in text_rows]
    return "\n".join(out)


def _markdown(headers, rows, aligns, title) -> str:
    def esc(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    out = [f"**{title}**", ""] if title else []
    out.append("| " + " | ".join(esc(h) for h in headers) + " |")
    out.append("|" + "|".join("---:" if a == "r" else "---" for a in aligns) + "|")
    out += ["| " + " | ".join(esc(cell_text(v)) for v in r) + " |" for r in rows]
    return "\n".join(out)


def _rich(headers, rows, aligns, title) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, box=box.SIMPLE_HEAD)
    for h, a in zip(headers, aligns, strict=True):
        table.add_column(h, justify="right" if a == "r" else "left")
    for r in rows:
        if r is None:
            table.add_section()
        else:
            table.add_row(*(cell_text(v) for v in r))
    buf = io.StringIO()
    Console(file=buf, force_terminal=True, width=200).print(table)
    return buf.getvalue().rstrip("\n")


def key_values(pairs: Sequence[tuple[str, Cell]], *, style: str = "auto", stream=None) -> str:
    """Two columns, name and value, with no header row in plain text."""
    if style in ("plain", "auto") and not (style == "auto" and _rich_available(stream or sys.stdout)):
        width = max((len(k) for k, _ in pairs), default=0)
        return "\n".join(f"{k:<{width}}  {cell_text(v)}".rstrip() for k, v in pairs)
    return render(("", ""), [(k, cell_text(v)) for k, v in pairs], style=style, stream=stream)
