"""The twelve Triton Puzzles against their torch specs: at the seed's sizes (through the
`python -m kernels_triton.puzzles` entry point) and at Hypothesis-drawn sizes and block
sizes, non-multiples included. Outputs are NaN-poisoned by the harness. On a machine
without a GPU this runs under Triton's interpreter; with one, on the GPU (where the `gpu`
tests add larger sizes).
"""

import os

import pytest
import torch
import triton
import triton.language as tl
from hypothesis import given
from hypothesis import strategies as st
from kernels_triton.puzzles import PUZZLES, Puzzle, run
from kernels_triton.puzzles.__main__ import main

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

BY_NUMBER = {p.number: p for p in PUZZLES}

# The seed's kernel names and signatures, exactly.
SEED_SIGNATURES = {
    1: ("add_kernel", "x_ptr z_ptr N0 B0"),
    2: ("add_mask2_kernel", "x_ptr z_ptr N0 B0"),
    3: ("add_vec_kernel", "x_ptr y_ptr z_ptr N0 N1 B0 B1"),
    4: ("add_vec_block_kernel", "x_ptr y_ptr z_ptr N0 N1 B0 B1"),
    5: ("mul_relu_block_kernel", "x_ptr y_ptr z_ptr N0 N1 B0 B1"),
    6: ("mul_relu_block_back_kernel", "x_ptr y_ptr dz_ptr dx_ptr N0 N1 B0 B1"),
    7: ("sum_kernel", "x_ptr z_ptr N0 N1 T B0 B1"),
    8: ("softmax_kernel", "x_ptr z_ptr N0 N1 T B0 B1"),
    9: ("flashatt_kernel", "q_ptr k_ptr v_ptr z_ptr N0 T B0"),
    10: ("conv2d_kernel", "x_ptr k_ptr z_ptr N0 H W KH KW B0"),
    11: ("dot_kernel", "x_ptr y_ptr z_ptr N0 N1 N2 MID B0 B1 B2 B_MID"),
    12: ("quant_dot_kernel", "scale_ptr offset_ptr weight_ptr activation_ptr z_ptr N0 N1 MID B0 B1 B_MID"),
}


def test_names_and_signatures_are_the_seeds():
    assert sorted(BY_NUMBER) == list(range(1, 13))
    for number, (name, args) in SEED_SIGNATURES.items():
        puzzle = BY_NUMBER[number]
        assert puzzle.name == name
        assert " ".join(puzzle.kernel.arg_names) == args
        assert puzzle.idea and puzzle.spec.__doc__


def test_help_prints_help_and_runs_nothing(capsys, monkeypatch):
    import kernels_triton.puzzles as puzzles

    monkeypatch.setattr(puzzles, "run", lambda puzzle: pytest.fail("a puzzle ran"))
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0 and "usage: python -m kernels_triton.puzzles" in capsys.readouterr().out


def test_command_line_checks_all_twelve_at_the_seeds_sizes(capsys):
    assert main([]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "12/12 puzzles match their specs"
    assert sum(" ok " in line for line in lines) == 12


def test_command_line_fails_on_a_wrong_kernel(monkeypatch, capsys):
    import kernels_triton.puzzles as puzzles

    monkeypatch.setattr(puzzles, "PUZZLES", [BROKEN])
    assert main([]) == 1
    assert "0/1 puzzles match" in capsys.readouterr().out


@pytest.mark.skipif(torch.cuda.is_available(), reason="with a GPU the command line runs the puzzles there")
def test_command_line_restarts_under_the_interpreter(monkeypatch):
    """Without a GPU and without TRITON_INTERPRET, it re-executes itself with it set."""
    calls = []
    monkeypatch.delenv("TRITON_INTERPRET")
    monkeypatch.setattr(os, "execve", lambda exe, argv, env: calls.append((argv, env)) or _stop())
    with pytest.raises(_Stopped):
        main([])
    ((argv, env),) = calls
    assert argv[1:3] == ["-m", "kernels_triton.puzzles"] and env["TRITON_INTERPRET"] == "1"


class _Stopped(Exception):
    pass


def _stop():
    raise _Stopped


# A wrong solution of puzzle 2 (it skips the last block): the harness must catch it.
@triton.jit
def _skips_last_block(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask = offs < (N0 // B0) * B0
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 10.0, mask=mask)


BROKEN = Puzzle(
    2,
    _skips_last_block,
    BY_NUMBER[2].spec,
    BY_NUMBER[2].inputs,
    BY_NUMBER[2].output,
    sizes={"N0": 200},
    blocks={"B0": 32},
    idea="a wrong solution",
)


def test_harness_catches_unwritten_outputs():
    result = run(BROKEN)
    assert not result.ok and result.unwritten == 200 % 32


# --- Hypothesis: sizes and block sizes, non-multiples included ------------------------------

pow2 = lambda lo, hi: st.sampled_from([2**k for k in range(lo, hi + 1)])  # noqa: E731


@st.composite
def sizes_and_blocks(draw, number: int, big: bool = False):
    """(sizes, blocks) for puzzle `number`, within what it allows; `big` for the GPU."""
    k = 8 if big else 1  # size multiplier on the GPU
    n = lambda hi: draw(st.integers(1, hi * k))  # noqa: E731
    if number in (1, 3):  # one program covers everything: blocks at least the sizes
        sizes = {"N0": n(40)} if number == 1 else {"N0": n(40), "N1": n(40)}
        return sizes, {f"B{i}": triton.next_power_of_2(sizes[f"N{i}"]) for i in range(len(sizes))}
    if number == 2:
        return {"N0": n(300)}, {"B0": draw(pow2(2, 6))}
    if number in (4, 5, 6):
        return {"N0": n(70), "N1": n(70)}, {"B0": draw(pow2(3, 5)), "B1": draw(pow2(3, 5))}
    if number in (7, 8):
        b1 = draw(pow2(3, 6))
        return {"N0": n(8), "N1": b1, "T": n(300)}, {"B0": draw(pow2(0, 2)), "B1": b1}
    if number == 9:
        return {"N0": n(100), "T": n(150)}, {"B0": draw(pow2(3, 6))}
    if number == 10:
        sizes = {"N0": n(5), "H": n(5), "W": n(5), "KH": draw(pow2(0, 2)), "KW": draw(pow2(0, 2))}
        return sizes, {"B0": draw(pow2(1, 3))}
    if number == 11:
        sizes = {"N0": n(40), "N1": n(40), "N2": draw(st.integers(1, 3)), "MID": n(40)}
        return sizes, {
            "B0": draw(pow2(4, 5)),
            "B1": draw(pow2(4, 5)),
            "B2": draw(pow2(0, 1)),
            "B_MID": draw(pow2(4, 5)),
        }
    if number == 12:
        sizes = {"N0": n(40), "N1": n(40), "MID": 64 * draw(st.integers(1, 2 * k))}
        return sizes, {"B0": draw(pow2(4, 5)), "B1": draw(pow2(4, 5)), "B_MID": draw(pow2(4, 6))}
    raise AssertionError(number)


@pytest.mark.parametrize("number", range(1, 13), ids=[SEED_SIGNATURES[i][0] for i in range(1, 13)])
@given(data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_puzzle_at_drawn_sizes(number, data, seed):
    sizes, blocks = data.draw(sizes_and_blocks(number), label="sizes, blocks")
    result = run(BY_NUMBER[number], sizes, blocks, seed=seed)
    assert result.unwritten == 0, result.line()
    assert result.ok, result.line()


@pytest.mark.gpu
def test_gpu_puzzles_at_the_seeds_sizes(capsys):
    assert main([]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"Triton Puzzles on {torch.cuda.get_device_name()}"
    assert lines[-1] == "12/12 puzzles match their specs"


@pytest.mark.gpu
@pytest.mark.parametrize("number", range(1, 13), ids=[SEED_SIGNATURES[i][0] for i in range(1, 13)])
@given(data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_gpu_puzzle_at_larger_sizes(number, data, seed):
    sizes, blocks = data.draw(sizes_and_blocks(number, big=True), label="sizes, blocks")
    result = run(BY_NUMBER[number], sizes, blocks, seed=seed, device="cuda")
    assert result.unwritten == 0 and result.ok, result.line()
