"""The overlay helper's requests carry any path: a mount target whose name holds a space,
a newline or bytes that are not UTF-8 is mounted and unmounted where it is, not split into
other words (the paths travel hex-encoded; the helper parses nothing else)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tidegate.exec.overlay.host import Host, as_user
from tidegate.exec.overlay.probe import probe

NAMES = ["two words", "a\nnewline", "ends with space ", os.fsdecode(b"latin-\xe9")]


@pytest.mark.parametrize("name", NAMES, ids=["space", "newline", "trailing-space", "non-utf8"])
def test_a_mount_target_with_an_odd_name_is_mounted_where_it_is(tmp_path: Path, name: str) -> None:
    if not probe().available:
        pytest.skip("no overlayfs here")
    lower, upper, work = tmp_path / "lower", tmp_path / "upper", tmp_path / "work"
    target = tmp_path / name
    for d in (lower, upper, work, target):
        d.mkdir()
    (lower / "seen").write_text("from the lower layer\n")
    host = Host(as_user())
    try:
        host.request("mount", str(target), f"lowerdir={lower},upperdir={upper},workdir={work}")
        probe_path = f"/proc/{host.proc.pid}/root{target}/seen"
        assert Path(probe_path).read_text() == "from the lower layer\n"
        host.request("umount", str(target))
    finally:
        host.close()
    assert not (target / "seen").exists()  # unmounted: the real, empty directory again
