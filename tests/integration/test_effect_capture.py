"""command.run's host-attested effects are exact, through the overlay fast path and the
exact-inventory fallback alike: every created, modified, deleted, chmod-ed or type-changed
path, ignored or not, inside nested ``.git`` directories too, typed, hashed and moded.

Each case runs under both methods (``overlay`` required, ``inventory`` forced) and compares
the reported writes with an independent oracle (the test's own walk, before and after);
the workspace itself must end exactly as the command left it, checked against the same
command run directly in a copy.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.integration._effects import (
    METHODS,
    checked,
    effects,
    host,
    oracle,
    run,
    snapshot,
    state,
    use_method,
)
from tests.integration.tools.support import call
from tidegate.exec.containment import probe as containment_probe
from tidegate.workspace.states import sha256_bytes


@pytest.fixture(params=METHODS)
def method(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    use_method(monkeypatch, request.param)
    return str(request.param)


@pytest.fixture
def project(committed_repo: Repo) -> Repo:
    committed_repo.write("pkg/__init__.py", "")
    committed_repo.write("pkg/util.py", "U = 1\n")
    committed_repo.write("pkg/deep/leaf.py", "L = 1\n")
    # ignored (not a secret-shaped name: contained commands see .env files empty, read-only)
    committed_repo.write(".gitignore", committed_repo.read(".gitignore") + "settings.ignored\n")
    committed_repo.write("settings.ignored", "TOKEN=old\n")
    committed_repo.write("build/out.txt", "built\n")  # a derived name, ignored
    committed_repo.git("add", "pkg", ".gitignore")
    committed_repo.git("commit", "-qm", "pkg")
    return committed_repo


def _capture_method(ex: object) -> str:
    return str(ex.last_capture.method)  # type: ignore[attr-defined]


def expected(method: str, hard_link: bool = False) -> str:
    if method == "inventory":
        return "inventory"
    return "overlay+inventory" if hard_link else "overlay"


def test_ignored_paths_are_reported(project: Repo, method: str) -> None:
    with host(project.root) as ex:
        got = checked(
            ex,
            project.root,
            "echo TOKEN=new > settings.ignored && mkdir -p .cache && echo c > .cache/x",
        )
        assert _capture_method(ex) == expected(method)
    assert got["settings.ignored"][1] == ("file", sha256_bytes(b"TOKEN=new\n"), "0644")
    assert got[".cache/x"][0][0] == "missing" and got[".cache"][1][0] == "dir"


def test_a_gitignore_written_by_the_same_command_hides_nothing(project: Repo, method: str) -> None:
    command = "echo s > secret.txt && echo edited > pkg/util.py && printf 'secret.txt\\npkg/\\n' >> .gitignore"
    with host(project.root) as ex:
        got = checked(ex, project.root, command)
        assert _capture_method(ex) == expected(method)
    assert {"secret.txt", "pkg/util.py", ".gitignore"} <= set(got)


def test_writes_inside_a_nested_repository_git_dir(project: Repo, method: str) -> None:
    nested = project.root / "vendor" / "lib"
    nested.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(nested)], check=True)
    hook = "vendor/lib/.git/hooks/post-checkout"
    with host(project.root) as ex:
        got = checked(
            ex, project.root, f"printf '#!/bin/sh\\necho owned\\n' > {hook} && chmod 755 {hook}"
        )
        assert _capture_method(ex) == expected(method)
    assert got[hook] == (
        ("missing", None, None),
        ("file", sha256_bytes(b"#!/bin/sh\necho owned\n"), "0755"),
    )


@pytest.mark.parametrize(
    "command",
    [
        "rm pkg/util.py && mkdir pkg/util.py && echo x > pkg/util.py/inner",  # file -> dir
        "rm -rf pkg/deep && ln -s ../README.md pkg/deep",  # dir -> symlink
        "ln -s calc.py alias && rm alias && mkdir alias",  # new, replaced in one command
        "ln -s calc.py pkg/link && rm pkg/link && echo f > pkg/link",  # symlink -> file
        "rm -rf pkg && mkdir pkg && echo new > pkg/new.py",  # a directory replaced (opaque)
        "rm -rf pkg",  # a whole tree deleted
    ],
)
def test_type_changes(project: Repo, method: str, command: str, tmp_path: Path) -> None:
    twin = _twin(project.root, tmp_path, command)
    with host(project.root) as ex:
        checked(ex, project.root, command)
        assert _capture_method(ex) == expected(method)
    assert snapshot(project.root) == snapshot(twin)


def _twin(root: Path, tmp_path: Path, command: str) -> Path:
    """A copy of ``root`` with ``command`` run in it directly: what the workspace must
    look like after the captured run."""
    twin = tmp_path / "twin"
    shutil.copytree(root, twin, symlinks=True)
    subprocess.run(["/bin/sh", "-c", command], cwd=twin, check=True)
    return twin


def test_chmod_of_files_and_directories(project: Repo, method: str) -> None:
    with host(project.root) as ex:
        got = checked(ex, project.root, "chmod 755 calc.py && chmod 700 pkg/deep")
        assert _capture_method(ex) == expected(method)
    digest = got["calc.py"][0][1]
    assert got["calc.py"] == (("file", digest, "0644"), ("file", digest, "0755"))
    assert got["pkg/deep"] == (("dir", None, "0755"), ("dir", None, "0700"))


def test_deleted_and_recreated_with_the_same_bytes_is_no_change(project: Repo, method: str) -> None:
    with host(project.root) as ex:
        result = run(ex, "cp calc.py .keep && rm calc.py && cat .keep > calc.py && rm .keep")
        assert _capture_method(ex) == expected(method)
    assert effects(result) == {}
    assert result.effects.state_version is None


def test_a_write_through_a_hard_link_changes_both_names(project: Repo, method: str) -> None:
    os.link(project.root / "calc.py", project.root / "calc_link.py")
    with host(project.root) as ex:
        got = checked(ex, project.root, "echo '# more' >> calc_link.py")
        assert _capture_method(ex) == expected(method, hard_link=True)
    assert set(got) == {"calc.py", "calc_link.py"}
    assert (
        os.lstat(project.root / "calc.py").st_ino == os.lstat(project.root / "calc_link.py").st_ino
    )


def test_derived_directories_are_summarised(project: Repo, method: str) -> None:
    with host(project.root) as ex:
        result = run(
            ex,
            "mkdir -p node_modules/dep && echo '{}' > node_modules/dep/p.json && echo b >> build/out.txt",
        )
        assert _capture_method(ex) == expected(method)
    assert effects(result) == {}
    assert sorted(d.path for d in result.effects.derived) == ["build", "node_modules"]
    (nm,) = (d for d in result.effects.derived if d.path == "node_modules")
    assert nm.before is None and nm.after is not None and nm.after.startswith("meta-sha256:")


def test_an_unchanged_workspace_reports_nothing(project: Repo, method: str) -> None:
    with host(project.root) as ex:
        result = run(ex, "cat calc.py > /dev/null && ls -R > /dev/null")
        assert _capture_method(ex) == expected(method)
    assert result.effects.present() == ["approval"]


MIXED = (
    "echo a >> calc.py && rm README.md && mkdir -p new/dir && echo n > new/dir/f && "
    "chmod 600 pkg/util.py && ln -s calc.py new/link && rm -rf pkg/deep && "
    "mkfifo new/pipe && echo TOKEN=x > settings.ignored && mv pkg/__init__.py pkg/init.py"
)


@pytest.mark.parametrize("containment", ["none", "auto"])
def test_the_workspace_ends_as_the_command_left_it(
    project: Repo, method: str, containment: str, tmp_path: Path
) -> None:
    """The merge reproduces what running the command directly does, byte for byte and
    mode for mode (the fast path's merge back, and the fallback's direct run)."""
    twin = _twin(project.root, tmp_path, MIXED)
    with host(project.root, containment) as ex:
        checked(ex, project.root, MIXED)
        assert _capture_method(ex) == expected(method)
    assert snapshot(project.root) == snapshot(twin)


def test_contained_effects_match_the_oracle(project: Repo, method: str) -> None:
    with host(project.root, "auto") as ex:
        got = checked(ex, project.root, "echo z > zed && chmod 711 pkg && rm settings.ignored")
        assert _capture_method(ex) == expected(method)
    assert got["pkg"][1] == ("dir", None, "0711")
    assert state(project.root / "zed")[0] == "file"


# -- falling back ---------------------------------------------------------------------------


def test_a_failed_mount_falls_back_to_the_inventory(
    project: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The overlay cannot be mounted for this command (an injected EIO in the child):
    nothing ran, the command runs again directly and the inventory attests it."""
    use_method(monkeypatch, "overlay")
    monkeypatch.setenv("TIDEGATE_EFFECT_CAPTURE", "auto")
    monkeypatch.setenv("TIDEGATE_FAULT", "overlay.mount")
    with host(project.root) as ex:
        got = checked(ex, project.root, "echo once >> counter.txt && echo x > settings.ignored")
        assert _capture_method(ex) == "inventory"
        assert "could not be mounted" in ex.last_capture.reason
    assert (project.root / "counter.txt").read_text() == "once\n"  # it ran exactly once
    assert {"counter.txt", "settings.ignored"} == set(got)


def test_required_overlay_that_cannot_mount_refuses(
    project: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_method(monkeypatch, "overlay")
    monkeypatch.setenv("TIDEGATE_FAULT", "overlay.mount")
    before = snapshot(project.root)
    with host(project.root) as ex:
        result = ex.execute(call("command_run", command="echo x > made.txt"))
    assert result.error is not None and result.error.code == "capture_unavailable"
    assert "could not be mounted" in result.error.message
    assert snapshot(project.root) == before


def test_a_command_in_a_subdirectory_writes_through_the_overlay(project: Repo, method: str) -> None:
    """The working directory is entered through the overlay, not the real directory
    under it: a relative write is captured like any other."""
    with host(project.root) as ex:
        before = snapshot(project.root)
        result = ex.execute(call("command_run", command="echo r > rel.txt && pwd", cwd="pkg"))
        assert result.ok and result.output is not None
        assert result.output["stdout"].strip() == str(project.root.resolve() / "pkg")
        assert _capture_method(ex) == expected(method)
    got = effects(result)
    assert set(got) == {"pkg/rel.txt"} == set(oracle(before, snapshot(project.root)))


def test_the_namespace_helper_killed_mid_command(
    project: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The helper holding the overlays' namespace dies while a command runs: the command's
    writes are still in the upper layer and attested exactly; the next command gets a new
    helper. Never silence, never a traceback."""
    from tidegate.exec.overlay import host as overlay

    use_method(monkeypatch, "overlay")
    with host(project.root) as ex:
        run(ex, "true")  # the helper exists now
        helper = overlay._hosts[os.geteuid() != 0].proc.pid
        got = checked(ex, project.root, f"kill -9 {helper}; sleep 0.2; echo after > after.txt")
        assert set(got) == {"after.txt"} and _capture_method(ex) == "overlay"
        again = checked(ex, project.root, "echo next > next.txt")
        assert set(again) == {"next.txt"} and _capture_method(ex) == "overlay"
    assert overlay._hosts[os.geteuid() != 0].proc.pid != helper


@pytest.mark.skipif(
    not containment_probe().verified, reason="command.run asks for approval without containment"
)
def test_a_killed_host_applies_nothing_of_the_running_command(
    committed_repo: Repo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """tidegate is killed while the command runs: what the command wrote stays in the
    overlay's upper layer and never reaches the workspace unattested."""
    use_method(monkeypatch, "overlay")
    root = committed_repo.root
    before = snapshot(root)
    args = {"command": "echo go >> started.txt; sleep 30"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tidegate", "tools", "call", "command_run",
         "--args", json.dumps(args), "--approval", "trusted-workspace"],
        cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True, env={**os.environ, "TMPDIR": str(tmp_path)},
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not list(tmp_path.glob("tidegate-overlays-*/o-*/upper/started.txt")):
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.stderr is not None
    proc.stderr.close()
    assert snapshot(root) == before
