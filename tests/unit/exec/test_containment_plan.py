"""How a containment policy becomes a bubblewrap command line and a report.

These tests only build the launch (the probe really runs bwrap); running commands under
it is covered by tests/integration/test_containment.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import requires_containment
from tidegate.config import load_config
from tidegate.errors import UsageError
from tidegate.exec.containment import ContainmentPolicy, launch, policy_for
from tidegate.exec.guard import Clearance
from tidegate.exec.trees import removed_so_far


def _binds(prefix: list[str]) -> list[tuple[str, str, str]]:
    out = []
    for i, arg in enumerate(prefix):
        if arg in ("--bind", "--ro-bind"):
            out.append((arg, prefix[i + 1], prefix[i + 2]))
    return out


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    main = tmp_path / "main"
    (main / ".venv").mkdir(parents=True)
    return {"work": work, "main": main}


@requires_containment
def test_bubblewrap_launch_binds_in_order(tree: dict[str, Path]) -> None:
    work, main = tree["work"], tree["main"]
    policy = ContainmentPolicy(
        required=True,
        network=False,
        writable=(work,),
        readonly_overlays=(main,),
        shares=((main / ".venv", work / ".venv"),),
    )
    with launch(policy, work, clearance=Clearance.user()) as sandbox:
        prefix = sandbox.prefix
        private = Path(sandbox.env["TMPDIR"]).parent
        assert Path(sandbox.env["TMPDIR"]).is_dir() and Path(sandbox.env["HOME"]).is_dir()
    assert removed_so_far()  # removed after the call, off its path, by a worker
    assert not private.exists()
    assert os.path.basename(prefix[0]) == "bwrap"
    for flag in ("--die-with-parent", "--unshare-pid", "--unshare-net", "--dev", "--proc"):
        assert flag in prefix
    assert prefix[prefix.index("--cap-drop") + 1] == "ALL"
    assert prefix[-3:] == ["--chdir", str(work), "--"]
    binds = _binds(prefix)
    # An allowlisted view, never the whole host: no bind of / (nor of HOME), / read-only.
    assert ("--ro-bind", "/", "/") not in binds and ("--ro-bind", "/usr", "/usr") in binds
    assert not any(src == os.path.realpath(os.path.expanduser("~")) for _, src, _ in binds)
    assert prefix[prefix.index("--remount-ro") + 1] == "/"
    order = [target for _, _, target in binds]
    # The work tree is writable, its .git read-only on top, the share read-only inside it.
    assert ("--bind", str(work), str(work)) in binds
    assert ("--ro-bind", str(work / ".git"), str(work / ".git")) in binds
    assert ("--ro-bind", str(main / ".venv"), str(work / ".venv")) in binds
    assert ("--ro-bind", str(main), str(main)) in binds
    assert order.index(str(work)) < order.index(str(work / ".git"))
    assert order.index(str(work)) < order.index(str(work / ".venv"))
    report = sandbox.report
    assert report.backend == "bubblewrap" and report.verified and not report.network
    assert report.writable == (str(work),)
    assert set(report.readonly) == {str(main), str(work / ".git")}
    assert report.shared == (f"{main / '.venv'} -> {work / '.venv'}",)
    assert report.private_dirs == ("TMPDIR", "HOME")
    assert report.to_json()["backend"] == "bubblewrap"


@requires_containment
def test_network_flag_drops_the_network_namespace(tree: dict[str, Path]) -> None:
    policy = ContainmentPolicy(required=True, network=True, writable=(tree["work"],))
    with launch(policy, tree["work"], clearance=Clearance.user()) as sandbox:
        assert "--unshare-net" not in sandbox.prefix
        assert sandbox.report.network


@requires_containment
def test_private_dirs_are_removed_even_when_left_read_only(tree: dict[str, Path]) -> None:
    policy = ContainmentPolicy(required=True, network=False, writable=(tree["work"],))
    with launch(policy, tree["work"], clearance=Clearance.user()) as sandbox:
        locked = Path(sandbox.env["HOME"]) / "cache" / "mod"
        locked.mkdir(parents=True)
        (locked / "f").write_text("x")
        locked.chmod(0o500)
        locked.parent.chmod(0o500)
        private = Path(sandbox.env["HOME"]).parent
    assert removed_so_far()
    assert not private.exists()


def test_no_policy_is_reported_as_uncontained(tmp_path: Path) -> None:
    with launch(None, tmp_path, clearance=Clearance.user()) as sandbox:
        assert sandbox.prefix == [] and sandbox.env == {}
    report = sandbox.report
    assert (report.backend, report.verified, report.network) == ("none", False, True)
    assert report.writable == ("/",)
    assert "sandbox" not in report.reason


@requires_containment
def test_a_missing_writable_path_is_a_caller_error(tmp_path: Path) -> None:
    policy = ContainmentPolicy(required=True, network=False, writable=(tmp_path / "nope",))
    with (
        pytest.raises(ValueError, match="not a directory"),
        launch(policy, tmp_path, clearance=Clearance.user()),
    ):
        pass


def test_policy_for_maps_the_configured_modes(tmp_path: Path) -> None:
    assert policy_for("none", network=False, writable=(tmp_path,)) is None
    auto = policy_for("auto", network=False, writable=(tmp_path,))
    required = policy_for("required", network=True, writable=(tmp_path,))
    assert auto is not None and not auto.required and not auto.network
    assert required is not None and required.required and required.network


def test_config_defaults_and_validation(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert config.containment.mode == "auto"
    assert config.containment.share == (".venv", "node_modules")
    (tmp_path / ".tidegate").mkdir()
    local = tmp_path / ".tidegate" / "config.toml"
    local.write_text('[containment]\nmode = "required"\nshare = ["web/node_modules"]\n')
    config = load_config(tmp_path)
    assert config.containment.mode == "required"
    assert config.containment.share == ("web/node_modules",)
    for bad in (
        'mode = "sandbox"',
        'share = ["../outside"]',
        'share = ["/abs"]',
        'share = [".git"]',
    ):
        local.write_text(f"[containment]\n{bad}\n")
        with pytest.raises(UsageError, match="containment"):
            load_config(tmp_path)


@requires_containment
def test_a_masked_directory_is_an_empty_read_only_tmpfs_covering_what_is_in_it(
    tree: dict[str, Path],
) -> None:
    work = tree["work"]
    (work / "private/inner").mkdir(parents=True)
    (work / "private/.env").write_text("x")
    (work / ".env").write_text("x")
    masked = (work / ".env", work / "private", work / "private/.env", work / "private/inner")
    policy = ContainmentPolicy(
        required=True,
        network=False,
        writable=(work,),
        hidden=(work / "private/inner",),  # hidden, but already under the masked tmpfs
        masked=masked,
    )
    with launch(policy, work, clearance=Clearance.user()) as sandbox:
        prefix = sandbox.prefix
    private = str(work / "private")
    tmpfs = [prefix[i + 1] for i, arg in enumerate(prefix) if arg == "--tmpfs"]
    assert private in tmpfs and prefix[prefix.index(private) - 1] == "--tmpfs"
    assert prefix[prefix.index(private) + 1 :][:2] == ["--remount-ro", private]
    # What the directory's tmpfs hides gets no mount of its own (none could be made in it).
    assert str(work / "private/inner") not in tmpfs
    assert ("--ro-bind", "/dev/null", str(work / "private/.env")) not in _binds(prefix)
    assert ("--ro-bind", "/dev/null", str(work / ".env")) in _binds(prefix)
    assert sandbox.report.masked == (str(work / ".env"), private)
