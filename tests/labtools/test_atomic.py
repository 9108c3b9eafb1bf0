"""labtools.atomic: the destination is either the old file or the new one, never a part."""

import pytest
from labtools.atomic import atomic_path, atomic_write_text, write_report


def test_write_replaces_whole(tmp_path):
    target = tmp_path / "report.md"
    atomic_write_text(target, "old")
    atomic_write_text(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_failed_write_keeps_old_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "manifest.json"
    atomic_write_text(target, "old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed mid-write")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_new_files_get_the_mode_open_gives(tmp_path):
    """Not mkstemp's 0600: a report or manifest is as readable as any file its writer makes."""
    import os

    old = os.umask(0o027)
    try:
        atomic_write_text(tmp_path / "report.md", "text")
        with open(tmp_path / "plain.md", "w") as f:
            f.write("text")
    finally:
        os.umask(old)
    mode = (tmp_path / "report.md").stat().st_mode & 0o777
    assert mode == (tmp_path / "plain.md").stat().st_mode & 0o777 == 0o640


def test_write_report_goes_to_the_path_or_to_stdout(tmp_path, capsys):
    write_report("to the file\n", tmp_path / "out.json")
    write_report("to stdout\n", None)
    assert (tmp_path / "out.json").read_text() == "to the file\n"
    assert capsys.readouterr().out == "to stdout\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


@pytest.mark.parametrize("module", ["labtools.atomic", "kernels_cuda._atomic", "minigpt_np._atomic"])
def test_an_interrupt_the_moment_the_temporary_exists_leaves_none(tmp_path, monkeypatch, module):
    """A signal's exception (SIGINT, or a CLI's SIGTERM handler) raised just after the temporary
    is made, before the write starts, still removes it: each distribution's copy of the helper."""
    import importlib
    import os

    atomic = importlib.import_module(module)
    target = tmp_path / "model.npz"
    atomic.atomic_write_text(target, "old")
    real_close = os.close

    def interrupted_close(fd):
        real_close(fd)
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "close", interrupted_close)
    with pytest.raises(KeyboardInterrupt), atomic.atomic_path(target):
        pass
    assert [p.name for p in tmp_path.iterdir()] == ["model.npz"] and target.read_text() == "old"
