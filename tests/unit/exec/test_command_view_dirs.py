"""What of the host a contained command's view takes beyond the system, from its PATH and
command line (``tidegate.exec.view``): toolchains, never HOME or anything holding it,
never the state root or anything holding it, nothing inside HOME but venvs and the Python
installations they run on; and of ``/etc`` only the allowlisted entries (the resolver's
configuration only with the network). Real directories in a temporary tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import requires_containment
from tidegate.exec.view import command_executables, system_binds, toolchain_dirs


def _python_install(root: Path) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "lib" / "python3.11").mkdir(parents=True)
    (root / "bin" / "python").write_text("#!/bin/sh\n")
    (root / "bin" / "python").chmod(0o755)
    return root


def _venv(root: Path, base: Path) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "pyvenv.cfg").write_text(
        f"home = {base / 'bin'}\ninclude-system-site-packages = false\n"
    )
    return root


@pytest.fixture
def host(tmp_path: Path) -> dict[str, Path]:
    tmp = tmp_path.resolve()
    home = tmp / "home" / "dev"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "deploy-with-token").write_text("TOKEN=...\n")
    in_home_base = _python_install(home / ".pyenv" / "versions" / "3.11")
    outside_base = _python_install(tmp / "opt" / "python3.11")
    state = tmp / "srv" / "state"
    (state / "bin").mkdir(parents=True)
    (tmp / "srv" / "tools" / "bin").mkdir(parents=True)
    (tmp / "other-checkout").mkdir()
    return {
        "tmp": tmp,
        "home": home,
        "home_bin": home / "bin",
        "venv_in_home": _venv(home / ".venvs" / "tool", in_home_base),
        "in_home_base": in_home_base,
        "venv_outside": _venv(tmp / "srv" / "venv", outside_base),
        "outside_base": outside_base,
        "state": state,
        "tools": tmp / "srv" / "tools" / "bin",
    }


def chosen(host: dict[str, Path], entries: list[Path], executables: list[str] = ()) -> set[Path]:  # type: ignore[assignment]
    path = os.pathsep.join(str(e) for e in entries)
    found = toolchain_dirs(path, executables, home=str(host["home"]), hidden=[str(host["state"])])
    return {Path(d) for d in found if Path(d).is_relative_to(host["tmp"])}


def test_venvs_and_their_bases_are_taken_wherever_they_are(host: dict[str, Path]) -> None:
    got = chosen(host, [host["venv_in_home"] / "bin", host["venv_outside"] / "bin"])
    assert got == {
        host["venv_in_home"],
        host["in_home_base"],
        host["venv_outside"],
        host["outside_base"],
    }


def test_a_plain_directory_inside_home_is_not_taken(host: dict[str, Path]) -> None:
    assert chosen(host, [host["home_bin"], host["tools"]]) == {host["tools"]}


@pytest.mark.parametrize("entry", ["home", "home/..", "tmp", "/"])
def test_home_and_anything_holding_it_is_never_taken(host: dict[str, Path], entry: str) -> None:
    where = {"home": host["home"], "home/..": host["home"].parent, "tmp": host["tmp"]}
    target = where.get(entry, Path(entry))
    assert target not in chosen(host, [target])
    assert Path("/") not in {
        Path(d) for d in toolchain_dirs(str(target), (), home=str(host["home"]), hidden=())
    }


def test_the_root_is_never_taken_even_without_a_home() -> None:
    assert "/" not in toolchain_dirs("/", (), home=None, hidden=())


def test_the_state_root_and_anything_holding_it_is_never_taken(host: dict[str, Path]) -> None:
    holding = host["state"].parent  # holds the state root (and tools/)
    assert chosen(host, [host["state"] / "bin", host["state"], holding]) == set()


def test_a_sibling_whose_name_extends_a_hidden_one_is_still_taken(host: dict[str, Path]) -> None:
    """Containment is by path component: ``state-tools`` is not inside ``state``."""
    sibling = host["state"].with_name("state-tools")
    sibling.mkdir()
    assert chosen(host, [sibling]) == {sibling}


def test_an_executable_named_on_the_command_line_brings_its_installation(
    host: dict[str, Path],
) -> None:
    python = str(host["outside_base"] / "bin" / "python")
    assert python in command_executables(["/bin/sh", "-c", f"{python} -m pytest -q"])
    assert chosen(host, [], [python]) == {host["outside_base"]}


SECRET_ETC = ("shadow", "gshadow", "sudoers", "sudoers.d", "ssh", "machine-id", "krb5.keytab")


@pytest.mark.parametrize("network", [False, True])
def test_etc_is_the_allowlist_only(network: bool) -> None:
    binds = system_binds(network=network)
    etc = {target for flag, _, target in binds if target.startswith("/etc/")}
    for name in SECRET_ETC:
        assert f"/etc/{name}" not in etc
    assert all(flag in ("--ro-bind", "--symlink") for flag, _, _ in binds), "read-only"
    if os.path.exists("/etc/resolv.conf"):
        assert ("/etc/resolv.conf" in etc) is network
    if os.path.exists("/etc/passwd"):
        assert "/etc/passwd" in etc


@requires_containment
def test_the_hosts_private_tls_keys_are_not_in_the_view(tmp_path: Path) -> None:
    import os

    private = Path("/etc/ssl/private")
    if not private.is_dir():
        pytest.skip("no /etc/ssl/private here")
    marker = private / f"tidegate-test-{os.getpid()}.key"
    try:
        marker.write_text("host key\n")
    except OSError:
        pytest.skip("/etc/ssl/private is not writable here")
    try:
        from tidegate.exec.containment import ContainmentPolicy
        from tidegate.exec.guard import Clearance
        from tidegate.exec.runner import run_command

        policy = ContainmentPolicy(required=True, network=False, writable=(tmp_path,))
        res = run_command(
            ["/bin/sh", "-c", f"cat {marker}; ls /etc/ssl/certs | head -1"],
            tmp_path, 20, tmp_path / "spill", clearance=Clearance.user(), containment=policy,
        )  # fmt: skip
        assert "host key" not in res.stdout_tail
        assert res.stdout_tail.strip(), "the certificates must stay visible"
    finally:
        marker.unlink()


def test_etc_is_matched_again_only_when_its_stat_moves(monkeypatch: pytest.MonkeyPatch) -> None:
    """The allowlisted names of /etc are matched once per stat of /etc: a new entry there
    changes /etc's mtime, so the next call lists it again."""
    from tidegate.exec import view

    listed: list[str] = []
    real = os.listdir

    def counting(path: str) -> list[str]:
        listed.append(path)
        return real(path)

    monkeypatch.setattr(view, "_ETC_SEEN", {})
    monkeypatch.setattr(os, "listdir", counting)
    first = system_binds(network=False)
    assert system_binds(network=False) == first
    assert listed.count("/etc") <= 1  # 0 more when /etc changed within the last 2 s
    key, names = view._ETC_SEEN[False]
    view._ETC_SEEN[False] = ((key[0], key[1] - 1, key[2]), [*names, "passwd-planted"])
    assert system_binds(network=False) == first  # the stale key: listed and matched again
    assert listed.count("/etc") == 2


def test_each_command_gets_its_own_private_dir_in_the_process_own(tmp_path: Path) -> None:
    from tidegate.disk.owners import SANDBOX_PREFIX, owned_prefix
    from tidegate.exec.sandbox_dirs import private_dir

    one, two = private_dir(), private_dir()
    assert one != two and one.parent == two.parent
    assert one.parent.name.startswith(owned_prefix(SANDBOX_PREFIX))
    one.rmdir()
    two.rmdir()
