"""The house rules: a package source file stays under MAX_LINES (a file that needs more is split by
job), and the comments of packages and tests state reasons, not history: no run folder, run letter
or date (the numbers and their runs live in the results pages under measurements/)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 500
SOURCES = ("*.py", "*.cu", "*.cuh")
# in a comment: a path into measurements/, an ISO date, or a run named by its letter ("call h", "calls o, p")
HISTORY = re.compile(r"measurements/|\b20\d\d-\d\d-\d\d\b|\bcalls? [A-Za-z]\d?(?=[,.:;)']|\s+and\b|$)")
COMMENT = re.compile(r"(#|//)(?P<text>.*)$")


def sources(folder: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", *(f"{folder}/{p}" for p in SOURCES)], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    return [ROOT / line for line in out.split()]


def offences(path: str, text: str, max_lines: int | None = MAX_LINES) -> list[str]:
    """The rules `text`, the source of `path`, breaks, one line each (max_lines None: no length rule)."""
    lines = text.splitlines()
    found = [f"{path}: {len(lines)} lines (> {max_lines})"] if max_lines and len(lines) > max_lines else []
    for number, line in enumerate(lines, 1):
        comment = COMMENT.search(line)
        if comment and HISTORY.search(comment["text"]):
            found.append(f"{path}:{number}: history in a comment: {line.strip()}")
    return found


def test_packages_and_tests_keep_the_house_rules():
    packages = sources("packages")
    tests = [p for p in sources("tests") if p != Path(__file__).resolve()]  # this file quotes what it forbids
    assert len(packages) > 50 and len(tests) > 50  # the listings found the files
    found = [o for p in packages for o in offences(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8"))]
    found += [
        o for p in tests for o in offences(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8"), None)
    ]
    assert not found, "\n".join(found)


def test_the_rules_catch_what_they_name():
    # made-up samples of each thing the rules forbid (no such run or date exists): the rules' own test
    assert offences("a.py", "x = 1\n" * (MAX_LINES + 1))
    assert offences("a.py", "x = 1  # from measurements/some-run/\n")
    assert offences("a.cu", "int x;  // tuned on 2000-01-01\n")
    assert offences("a.py", "x = 1  # slower in call z\n")
    assert not offences("a.py", "x = 1  # rows past M: finite, never stored\n" * 10)
