"""The same suite on the local process pool and on a real local Ray instance gives the same
scorecards (timing aside)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tidegate.gym.suite import comparable, run_suite

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ray>=2.40')")


@pytest.fixture
def short_temp_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Ray's sockets live under the temp dir, and a socket's path has at most 107 bytes:
    the suite's own temp dir (deeper under a parallel worker's) can be too long for it."""
    temp = tempfile.mkdtemp(prefix="tg-ray-", dir="/tmp")
    monkeypatch.setenv("TMPDIR", temp)
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    yield
    shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.usefixtures("short_temp_dir")
def test_local_and_ray_executors_give_identical_scorecards(tmp_path: Path) -> None:
    local = run_suite("smoke", tmp_path / "a", contestant=None, workers=2, executor="local")
    finished: list[str] = []
    on_ray = run_suite(
        "smoke",
        tmp_path / "b",
        contestant=None,
        workers=2,
        executor="ray",
        on_result=lambda run: finished.append(run["scenario"]),
    )
    assert [comparable(r) for r in local["runs"]] == [comparable(r) for r in on_ray["runs"]]
    # each run was told as it finished; the runs keep the suite's order
    assert sorted(finished) == sorted(r["scenario"] for r in on_ray["runs"])
    assert all("error" not in r for r in on_ray["runs"])
    assert on_ray["executor_startup_s"] > 0
