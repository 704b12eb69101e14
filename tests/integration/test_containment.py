"""Commands under bubblewrap, with real processes: what they can and cannot touch, the
pid namespace that dies with the call, the network switch, the honest fallback, and
VERIFY's containment and shared dependencies in real runs."""

from __future__ import annotations

import http.server
import json
import os
import shlex
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Repo, requires_containment, tidegate_cli
from tidegate.exec.containment import ContainmentPolicy, probe
from tidegate.exec.guard import Clearance
from tidegate.exec.runner import CommandResult, run_command, shell_argv
from tidegate.exec.trees import removed_so_far


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return root


def contained(ws: Path, command: str, network: bool = False, **kwargs: Any) -> CommandResult:
    policy = kwargs.pop("policy", None) or ContainmentPolicy(
        required=True, network=network, writable=(ws,)
    )
    kwargs.setdefault("timeout_s", 20)
    return run_command(
        shell_argv(command),
        ws,
        spill_dir=ws.parent / "spill",
        containment=policy,
        **kwargs,
        clearance=Clearance.user(),
    )


@requires_containment
def test_only_the_writable_tree_and_private_dirs_can_be_written(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    res = contained(
        ws,
        f"echo a > inside && echo b > $TMPDIR/t && echo c > $HOME/h && echo $TMPDIR $HOME; "
        f"echo x > {outside}/no; echo y > .git/HEAD; echo z > /tmp/no-{os.getpid()}; exit 0",
    )
    assert res.exit_code == 0, res.stderr_tail
    assert (ws / "inside").read_text() == "a\n"
    # outside/ is not even in the command's view; .git and / are read-only
    assert res.stderr_tail.count("cannot create") == 3
    assert res.stderr_tail.count("Read-only file system") == 2
    assert not (outside / "no").exists() and not Path(f"/tmp/no-{os.getpid()}").exists()
    assert (ws / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    tmpdir, home = res.stdout_tail.split()
    assert removed_so_far()  # removed after the call, off its path, by a worker
    assert tmpdir != home and not Path(tmpdir).exists()  # private, and gone after the call
    assert res.containment.backend == "bubblewrap" and res.containment.verified
    assert res.containment.writable == (str(ws.resolve()),)
    assert str(ws.resolve() / ".git") in res.containment.readonly


@requires_containment
def test_readonly_overlays_and_shares(ws: Path, tmp_path: Path) -> None:
    main = tmp_path / "main"
    (main / "deps").mkdir(parents=True)
    (main / "deps" / "tool").write_text("#!/bin/sh\necho tool ran\n")
    (main / "deps" / "tool").chmod(0o755)
    policy = ContainmentPolicy(
        required=True,
        network=False,
        writable=(ws,),
        readonly_overlays=(main,),
        shares=((main / "deps", ws / "deps"),),
    )
    res = contained(
        ws, "deps/tool; touch deps/new; touch " + shlex.quote(str(main / "x")), policy=policy
    )
    assert res.stdout_tail == "tool ran\n"
    assert res.stderr_tail.count("Read-only file system") == 2
    assert sorted(os.listdir(main)) == ["deps"] and sorted(os.listdir(main / "deps")) == ["tool"]
    assert res.containment.shared == (f"{main / 'deps'} -> {ws / 'deps'}",)


@requires_containment
@pytest.mark.parametrize("how", ["exit", "timeout", "cancel"])
def test_a_setsid_grandchild_dies_with_the_namespace(ws: Path, how: str) -> None:
    """Unlike the uncontained runner, bubblewrap's pid namespace takes every process with
    it, including one that left the process group."""
    marker = ws / "escaped"
    escape = f"setsid sh -c 'sleep 0.6; touch {marker}' & echo started; "
    cancel = threading.Event()
    if how == "exit":
        res = contained(ws, escape + "sleep 0.2")
        assert res.exit_code == 0
    elif how == "timeout":
        res = contained(ws, escape + "sleep 30", timeout_s=0.3)
        assert res.stop_reason == "timeout"
    else:
        threading.Timer(0.3, cancel.set).start()
        res = contained(ws, escape + "sleep 30", cancel=cancel)
        assert res.cancelled and res.exit_code is None
    assert res.stdout_tail == "started\n" and not res.stray_output
    time.sleep(1.0)
    assert not marker.exists()


@pytest.fixture
def http_server() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"reached")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@requires_containment
def test_network_is_off_unless_asked_for(ws: Path, http_server: str) -> None:
    fetch = (
        f"{sys.executable} -c "
        f"\"import urllib.request; print(urllib.request.urlopen('{http_server}', timeout=3).read())\""
    )
    off = contained(ws, fetch)
    assert off.exit_code != 0 and "reached" not in off.stdout_tail
    assert not off.containment.network
    on = contained(ws, fetch, network=True)
    assert on.exit_code == 0 and "reached" in on.stdout_tail
    assert on.containment.network


def test_auto_falls_back_to_none_and_says_so(ws: Path, tmp_path: Path) -> None:
    policy = ContainmentPolicy(
        required=False, network=False, writable=(ws,), bwrap=str(tmp_path / "no-bwrap")
    )
    marker = tmp_path / "reached-outside"
    res = contained(ws, f"touch {marker}", policy=policy)
    assert res.exit_code == 0 and marker.exists()  # really uncontained
    report = res.containment
    assert (report.backend, report.verified, report.network) == ("none", False, True)
    assert report.writable == ("/",)
    assert "unavailable" in report.reason and "ran uncontained" in report.reason
    assert "sandbox" not in json.dumps(report.to_json())


@requires_containment
def test_the_probe_runs_once_per_executable() -> None:
    assert probe() is probe()
    assert probe().backend == "bubblewrap" and "probed" in probe().reason


# --------------------------------------------------------------------------- VERIFY


def _venv_like(repo: Repo) -> None:
    """An ignored dependency dir with a tool the verify command runs by relative path."""
    repo.write(".gitignore", ".venv/\n")
    repo.write("calc.py", "def add(a, b):\n    return a - b\n")
    repo.commit_all()
    repo.write(".venv/bin/check", "#!/bin/sh\ngrep -q 'a + b' calc.py\n", mode=0o755)


EDIT = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
SHARED_VERIFY = ".venv/bin/check && ! touch .venv/written 2>/dev/null"


@requires_containment
def test_verify_is_contained_and_shares_ignored_dependencies_read_only(repo: Repo) -> None:
    _venv_like(repo)
    report = repo.run(EDIT, verify=SHARED_VERIFY)
    assert report.status == "succeeded", (report.message, report.feedback)
    assert not (repo.root / ".venv" / "written").exists()
    c = report.containment
    assert c is not None and c.backend == "bubblewrap" and c.verified and not c.network
    assert str(repo.root) in c.readonly
    assert [(s.path, s.how) for s in c.shared] == [(".venv", "ro-bind")]
    assert any("VERIFY ran under bubblewrap" in n and ".venv" in n for n in report.notes)


def test_uncontained_verify_shares_by_symlink_and_leaves_the_main_copy_alone(
    repo: Repo,
) -> None:
    _venv_like(repo)
    # The first attempt fails (ROLLBACK cleans the shadow, symlink included); the second
    # passes. The main tree's .venv must survive both and the shadow's removal.
    fail_then_fix = "edit-file: calc.py\nreplace: return a - b\nwith: return a * b\n"
    verify = ".venv/bin/check && test -L .venv"
    report = repo.run(fail_then_fix, verify=verify, containment="none", max_attempts=1)
    assert report.status == "failed"
    report = repo.run(EDIT, verify=verify, containment="none")
    assert report.status == "succeeded", (report.message, report.feedback)
    assert (repo.root / ".venv" / "bin" / "check").is_file()
    c = report.containment
    assert c is not None and c.backend == "none" and not c.verified and c.network
    assert [(s.path, s.how) for s in c.shared] == [(".venv", "symlink")]
    assert any("uncontained" in n and "not enforced" in n for n in report.notes)


@requires_containment
def test_tracked_or_unignored_directories_are_not_shared(repo: Repo) -> None:
    repo.write("calc.py", "def add(a, b):\n    return a - b\n")
    repo.write("node_modules/tracked.js", "1\n")  # tracked: the shadow has its own copy
    repo.commit_all()
    repo.write(".venv/bin/x", "")  # not ignored: part of T0, so the shadow has it
    verify = "test -f .venv/bin/x && test ! -L .venv && test -f node_modules/tracked.js"
    report = repo.run(EDIT, verify=verify)
    assert report.status == "succeeded", (report.message, report.feedback)
    assert report.containment is not None and report.containment.shared == []


@requires_containment
def test_cli_network_and_containment_flags_reach_the_report(repo: Repo) -> None:
    repo.write("calc.py", "def add(a, b):\n    return a - b\n")
    repo.commit_all()
    base = ["run", "--repo", str(repo.root), "--objective", EDIT, "--verify", "true", "--json"]
    res = tidegate_cli(*base, "--network")
    assert res.returncode == 0, res.stderr
    c = json.loads(res.stdout)["containment"]
    assert (c["backend"], c["network"]) == ("bubblewrap", True)
    repo.git("checkout", "--", "calc.py")
    res = tidegate_cli(*base, "--containment", "none")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["containment"]["backend"] == "none"
    res = tidegate_cli(*base, "--containment", "sandboxed")
    assert res.returncode == 2


def test_an_ignored_submodule_path_is_not_shared(repo: Repo) -> None:
    """A gitlink the user also ignores: the shadow has its empty directory, git counts the
    path as tracked, so the user's checkout of it is not shared in (the one case where
    the sharing check must read the index)."""
    repo.write("calc.py", "def add(a, b):\n    return a - b\n")
    repo.write(".gitignore", "vendor/\n.venv/\n")
    repo.commit_all()
    commit = repo.git("rev-parse", "HEAD").strip()
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{commit},vendor")
    repo.git("commit", "-qm", "a submodule")
    repo.write("vendor/lib.js", "1\n")  # the user's checkout of it, ignored
    repo.write(".venv/bin/tool", "")  # absent from the shadow, ignored: shared
    repo.write(".tidegate/config.toml", '[containment]\nshare = ["vendor", ".venv"]\n')
    verify = "test -f .venv/bin/tool && test ! -e vendor/lib.js"
    report = repo.run(EDIT, verify=verify, containment="none")
    assert report.status == "succeeded", (report.message, report.feedback)
    assert report.containment is not None
    assert [s.path for s in report.containment.shared] == [".venv"]
