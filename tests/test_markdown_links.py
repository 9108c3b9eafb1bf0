"""Every relative link in every tracked Markdown file points at something that exists.

Checked: inline links and images ``[text](target)``, ``![alt](target)`` and reference
definitions ``[name]: target``, outside fenced code blocks and inline code. Skipped:
URLs with a scheme (https:, mailto:, ...) and links to an anchor on the same page. A
target's ``#anchor`` and ``?query`` are dropped, percent-escapes decoded, and the rest
resolved against the file's folder; it must exist and lie inside the repository.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP_DIRS = {".git", ".venv", "out", "node_modules", ".scratch", "__pycache__"}

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def markdown_files() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "*.md"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        files = [ROOT / p for p in out.split("\0") if p]
    except (OSError, subprocess.CalledProcessError):  # a copy without git: walk the tree
        files = [p for p in ROOT.rglob("*.md") if not SKIP_DIRS & set(p.relative_to(ROOT).parts)]
    return sorted(p for p in files if p.is_file())


def links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every link outside code."""
    found, fenced = [], None
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if fence:
            fenced = None if fenced == fence.group(1) else fenced or fence.group(1)
            continue
        if fenced:
            continue
        line = INLINE_CODE.sub("", line)
        found += [(number, m.group(1)) for m in INLINE_LINK.finditer(line)]
        ref = REFERENCE.match(line)
        if ref:
            found.append((number, ref.group(1)))
    return found


def broken_links(path: Path) -> list[str]:
    out = []
    for number, target in links(path.read_text(encoding="utf-8")):
        if SCHEME.match(target) or target.startswith("#"):
            continue
        rel = unquote(target.split("#", 1)[0].split("?", 1)[0])
        if not rel:
            continue
        resolved = (ROOT / rel.lstrip("/")) if rel.startswith("/") else (path.parent / rel)
        resolved = resolved.resolve()
        where = f"{path.relative_to(ROOT)}:{number}: {target}"
        if not resolved.is_relative_to(ROOT):
            out.append(f"{where} (outside the repository)")
        elif not resolved.exists():
            out.append(f"{where} (no such file)")
    return out


FILES = markdown_files()


def test_there_are_markdown_files_to_check():
    assert any(p.name == "README.md" for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path):
    assert broken_links(path) == []


def test_the_checker_finds_broken_links(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    (tmp_path / "there.md").write_text("x")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "[ok](there.md) [ok too](there.md#part) [web](https://example.com) [anchor](#top)\n"
        "[gone](missing.md) ![img](img/none.png)\n"
        "`[in code](nowhere.md)`\n"
        "```\n[fenced](nowhere.md)\n```\n"
        "[ref]: also-missing.md\n"
        "[up](../../outside.md)\n"
    )
    assert broken_links(doc) == [
        "doc.md:2: missing.md (no such file)",
        "doc.md:2: img/none.png (no such file)",
        "doc.md:7: also-missing.md (no such file)",
        "doc.md:8: ../../outside.md (outside the repository)",
    ]
