"""Every command in the README runs as written (issue 44), so the README cannot drift.

The README's bash blocks are read line by line; a line whose comment starts with `# GPU`
(or every line of a block that opens with such a comment) needs a CUDA device and is left
out here. The others run in README order, in one temporary folder, as a user would type
them (`uv run` dropped: this test already runs in the workspace's environment), in a quick
form where the full one takes minutes:

- QUICK_FLAGS: flags appended that shorten the same job (fewer shapes, less timing);
- ARGUMENTS_ONLY: the arguments are checked but not run (`--help` appended: argparse checks
  everything before it, then prints help and exits 0); with README_COMMANDS_FULL=1 these run
  in full too (minutes: an NVRTC build of every CUDA specialization, torch.compile on CPU,
  the twelve puzzles under the interpreter).

A command that runs must exit 0 with no warning on stderr. The README's Python blocks, and
the Python API block of each package README this repository owns, run as well.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PACKAGE_READMES = ("minigpt-np", "minigpt-torch", "labtools")

NOT_RUN = {"uv run pytest": "the test suite itself"}
QUICK_FLAGS = {
    "uv run lab run": "--quick --no-checks --time-cap 0.02",
    "uv run lab bench softmax --quick": "--time-cap 0.02 --rounds 1",
}
ARGUMENTS_ONLY = (
    "uv run lab inductor dump",
    "uv run python -m kernels_cuda.codegen",
    "uv run python -m kernels_triton.puzzles",
)
FULL = os.environ.get("README_COMMANDS_FULL", "") not in ("", "0")
WARNING = re.compile(r"\b\w*Warning\b|\bwarning:", re.IGNORECASE)


def code_blocks(text: str) -> list[tuple[str, list[str]]]:
    """(language, lines) of every fenced block."""
    return [(m[1], m[2].splitlines()) for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.M | re.S)]


def split_comment(line: str) -> tuple[str, str]:
    """`cmd  # comment` -> (cmd, comment): a comment starts at a # after two spaces or at
    the line's start, so a # inside an argument stays."""
    if line.lstrip().startswith("#"):
        return "", line.lstrip()[1:].strip()
    parts = re.split(r"\s{2,}#\s?", line, maxsplit=1)
    return parts[0].strip(), (parts[1].strip() if len(parts) > 1 else "")


def readme_commands(text: str) -> list[tuple[str, bool]]:
    """(command, needs a GPU) for every command line of the bash blocks, in order."""
    out = []
    for lang, lines in code_blocks(text):
        if lang != "bash":
            continue
        first = next((line for line in lines if line.strip()), "")
        block_gpu = first.lstrip().startswith("#") and split_comment(first)[1].startswith("GPU")
        for line in lines:
            cmd, comment = split_comment(line)
            if cmd:
                out.append((cmd, block_gpu or comment.startswith("GPU")))
    return out


def quick_form(cmd: str) -> str:
    for prefix in ARGUMENTS_ONLY:
        if cmd.startswith(prefix) and not FULL:
            return f"{cmd} --help"
    flags = QUICK_FLAGS.get(cmd) or next((f for p, f in QUICK_FLAGS.items() if cmd.startswith(p + " ")), "")
    return f"{cmd} {flags}".strip()


def user_env() -> dict:
    """This environment's tools first on PATH, and no test-session setting a user lacks."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for name in ("TRITON_INTERPRET", "LAB_DEBUG", "PYTEST_CURRENT_TEST"):
        env.pop(name, None)
    return env


def test_the_parser_finds_the_commands_and_the_gpu_marks():
    text = README.read_text()
    found = readme_commands(text)
    cmds = [c for c, _ in found]
    assert "uv run lab run" in cmds and "uv run pytest" in cmds
    assert ("uv run lab roofline out/quick/sweep_softmax.json", False) in found
    gpu = [c for c, g in found if g]
    assert any(c.startswith("uv run lab ncu") for c in gpu)
    assert any("--impls fused,Triton" in c for c in gpu)
    assert "scripts/gpu-check all" in gpu  # the "GPU machine" block
    assert split_comment('uv run minigpt-np topk "a # b" -k 5  # GPU: x') == (
        'uv run minigpt-np topk "a # b" -k 5',
        "GPU: x",
    )


CPU_COMMANDS = [c for c, gpu in readme_commands(README.read_text()) if not gpu]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("readme")


@pytest.mark.parametrize("cmd", CPU_COMMANDS)
def test_readme_command_runs_as_written(cmd, workdir):
    if cmd in NOT_RUN:
        pytest.skip(f"not run here: {NOT_RUN[cmd]}")
    assert cmd.startswith("uv run "), f"README commands start with `uv run`: {cmd}"
    line = quick_form(cmd).removeprefix("uv run ")
    proc = subprocess.run(
        line, shell=True, cwd=workdir, env=user_env(), capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"{line}\nexit {proc.returncode}\n{proc.stderr[-3000:]}"
    assert not WARNING.search(proc.stderr), f"{line} warned:\n{proc.stderr[-3000:]}"


def python_blocks(path: Path) -> list[str]:
    blocks = []
    for lang, lines in code_blocks(path.read_text()):
        if lang == "python" and not (lines and lines[0].lstrip().startswith("# GPU")):
            blocks.append("\n".join(lines))
    return blocks


PYTHON_BLOCKS = [(README.name, code) for code in python_blocks(README)] + [
    (f"packages/{pkg}/README.md", code)
    for pkg in PACKAGE_READMES
    for code in python_blocks(ROOT / "packages" / pkg / "README.md")
]


@pytest.mark.parametrize(("readme", "code"), PYTHON_BLOCKS, ids=[r for r, _ in PYTHON_BLOCKS])
def test_readme_python_block_runs(readme, code, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"{readme}:\n{code}\n{proc.stderr[-3000:]}"
    assert not WARNING.search(proc.stderr), proc.stderr[-3000:]


GPU_API_READMES = ("kernels-cuda", "kernels-triton")  # their examples need a CUDA device: counted, not run


@pytest.mark.parametrize("pkg", PACKAGE_READMES + GPU_API_READMES)
def test_each_package_readme_shows_its_python_api_in_five_lines(pkg):
    text = (ROOT / "packages" / pkg / "README.md").read_text()
    blocks = ["\n".join(lines) for lang, lines in code_blocks(text) if lang == "python"]
    assert blocks, f"packages/{pkg}/README.md has no Python example"
    code = [line for line in blocks[0].splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert len(code) <= 5, code


def test_each_package_exports_its_public_names():
    """`import pkg` is enough: every name of its __all__ is reachable from the package (one
    process for the five: torch is imported once)."""
    code = (
        "import importlib\n"
        "for name in ('labtools', 'minigpt_np', 'minigpt_torch', 'kernels_triton', 'kernels_cuda'):\n"
        "    m = importlib.import_module(name)\n"
        "    assert m.__all__, name\n"
        "    for n in m.__all__:\n"
        "        getattr(m, n)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=user_env(), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
