"""Conformance 28: when containment is required and bubblewrap is missing, or present but
failing its probe (here: a stand-in that runs the command without confining it), the
command is refused before anything is spawned - directly, through VERIFY, and through the
CLI - and a best-effort fallback is never labelled sandboxed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Repo, tidegate_cli
from tidegate.errors import CapabilityMismatch
from tidegate.exec.containment import ContainmentPolicy, probe
from tidegate.exec.guard import Clearance
from tidegate.exec.runner import run_command, shell_argv

# Skips its flags and runs the command unconfined: exists, executes, and lies.
LYING_BWRAP = '#!/bin/sh\nwhile [ $# -gt 0 ] && [ "$1" != /bin/sh ]; do shift; done\nexec "$@"\n'


@pytest.fixture
def lying_bwrap(tmp_path: Path) -> Path:
    path = tmp_path / "fake-bin" / "bwrap"
    path.parent.mkdir()
    path.write_text(LYING_BWRAP)
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("kind", ["missing", "lying"])
def test_required_containment_refuses_before_spawning(
    kind: str, tmp_path: Path, lying_bwrap: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    bwrap = str(tmp_path / "missing" / "bwrap") if kind == "missing" else str(lying_bwrap)
    report = probe(bwrap)
    assert not report.verified and report.backend == "none"
    policy = ContainmentPolicy(required=True, network=False, writable=(ws,), bwrap=bwrap)
    marker = tmp_path / "spawned"
    with pytest.raises(CapabilityMismatch, match="containment is required"):
        run_command(
            shell_argv(f"touch {marker}"),
            ws,
            10,
            tmp_path / "spill",
            containment=policy,
            clearance=Clearance.user(),
        )
    assert not marker.exists()
    assert not (tmp_path / "spill").exists()


def test_the_probe_sees_through_the_stand_in(lying_bwrap: Path) -> None:
    report = probe(str(lying_bwrap))
    assert "/ is still writable" in report.reason


def test_auto_runs_uncontained_and_labels_it_so(tmp_path: Path, lying_bwrap: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = ContainmentPolicy(
        required=False, network=False, writable=(ws,), bwrap=str(lying_bwrap)
    )
    res = run_command(
        shell_argv("echo ran"),
        ws,
        10,
        tmp_path / "spill",
        containment=policy,
        clearance=Clearance.user(),
    )
    assert res.exit_code == 0 and res.stdout_tail == "ran\n"
    assert (res.containment.backend, res.containment.verified) == ("none", False)
    assert res.containment.writable == ("/",) and res.containment.network
    assert res.launcher == ()


@pytest.mark.parametrize("how", ["flag", "config"])
def test_cli_required_containment_fails_the_run_unspawned(
    how: str, committed_repo: Repo, tmp_path: Path
) -> None:
    marker = tmp_path / "verify-ran"
    args = [
        "run", "--repo", str(committed_repo.root), "--json",
        "--objective", "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n",
        "--verify", f"touch {marker}",
    ]  # fmt: skip
    if how == "flag":
        args += ["--containment", "required"]
    else:
        (committed_repo.root / ".tidegate").mkdir()
        (committed_repo.root / ".tidegate" / "config.toml").write_text(
            '[containment]\nmode = "required"\n'
        )
    state = committed_repo.tree_state()
    res = tidegate_cli(*args, env={"TIDEGATE_BWRAP": str(tmp_path / "no-such-bwrap")})
    assert res.returncode == 1, res.stderr
    report = json.loads(res.stdout)
    assert report["error_class"] == "CAPABILITY_MISMATCH"
    # Refused at bootstrap: before the snapshot, planning, or any attempt.
    assert report["failure_phase"] == "BOOTSTRAP" and report["attempts"] == 0
    assert "containment is required" in report["message"]
    assert not marker.exists()
    after = committed_repo.tree_state()
    after.pop("dir:.tidegate", None)
    after.pop(".tidegate/config.toml", None)
    assert after == {k: v for k, v in state.items() if ".tidegate" not in k}
