"""Attack: a link planted at the name of a command's output spill file.

The runner spills each stream to ``<spill dir>/<label>.stdout`` and ``.stderr``; a spill
directory is reused across attempts and calls, and a command (an earlier attempt's, or a
tool's) may have planted a link at the next spill's name. The runner must replace it,
never write through it: the file the link points at keeps its bytes, and the command's
output is still captured.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tidegate.exec.runner import run_command

VICTIM = b"a file outside the spill directory\n"


@pytest.mark.xfail(
    strict=True, reason="spill open follows links; fixed when exec adopts the primitive"
)
@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_link_at_a_spill_name_is_not_written_through(tmp_path: Path, stream: str) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(VICTIM)
    spill = tmp_path / "spill"
    spill.mkdir()
    (spill / f"check.{stream}").symlink_to(victim)

    result = run_command(
        ["/bin/sh", "-c", "echo out; echo err >&2"], tmp_path, 30, spill, label="check"
    )

    assert result.exit_code == 0
    assert victim.read_bytes() == VICTIM
    assert not (spill / f"check.{stream}").is_symlink()
    assert result.stdout_file.read_bytes() == b"out\n"
    assert result.stderr_file.read_bytes() == b"err\n"
