"""Attacks on the warm server: a confined process of the same user asking it for a run
outside its confinement, a hijacked socket directory, and garbage on the socket.

A refused client runs the command itself, where it is: so the proof of a refusal is the
server's count of runs served, unchanged, with the run still done."""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
from pathlib import Path

import pytest

from tests._warm import EDIT, TIDEGATE, cli, served, warm_server
from tests.conftest import Repo, requires_containment

__all__ = ["warm_server"]


def _run_args(repo: Repo) -> list[str]:
    return [*TIDEGATE, "run", "--repo", str(repo.root), "--objective", EDIT, "--json"]


def _wrapped(prefix: list[str], repo: Repo) -> dict[str, object]:
    import subprocess

    res = subprocess.run(
        [*prefix, *_run_args(repo)], capture_output=True, text=True, check=False, timeout=120
    )
    assert res.returncode == 0, res.stderr
    report: dict[str, object] = json.loads(res.stdout)
    return report


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)")
def test_a_client_without_new_privileges_is_refused(committed_repo: Repo, warm_server: int) -> None:
    """no_new_privs is what sandboxes set first; the server's child would not have it."""
    report = _wrapped(["setpriv", "--no-new-privs", "--"], committed_repo)
    assert report["status"] == "succeeded"
    assert served() == 0


@requires_containment
def test_a_client_in_other_namespaces_is_refused(committed_repo: Repo, warm_server: int) -> None:
    """A command confined by bubblewrap that can still reach the socket (here: the whole
    file system bound in) must not get a run outside its namespaces."""
    bwrap = ["bwrap", "--dev-bind", "/", "/", "--proc", "/proc", "--unshare-pid", "--"]
    report = _wrapped(bwrap, committed_repo)
    assert report["status"] == "succeeded"
    assert served() == 0


def _unshare_works() -> bool:
    import subprocess

    probe = subprocess.run(
        ["unshare", "--mount", "--user", "--map-current-user", "--", "true"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


@pytest.mark.skipif(
    shutil.which("unshare") is None or not _unshare_works(),
    reason="needs unshare with user namespaces",
)
def test_a_client_in_other_namespaces_alone_is_refused(
    committed_repo: Repo, warm_server: int
) -> None:
    """Namespaces only (no no_new_privs, as bubblewrap also sets): the same uid seen from
    the server, another mount and user namespace."""
    report = _wrapped(["unshare", "--mount", "--user", "--map-current-user", "--"], committed_repo)
    assert report["status"] == "succeeded"
    assert served() == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="a mount namespace alone needs root")
def test_a_client_in_another_mount_namespace_alone_is_refused(
    committed_repo: Repo, warm_server: int
) -> None:
    """Only the mount namespace differs (same capabilities, no user namespace): the check
    of the namespaces alone refuses it."""
    report = _wrapped(["unshare", "--mount", "--"], committed_repo)
    assert report["status"] == "succeeded"
    assert served() == 0


def test_a_client_in_the_servers_context_is_served(committed_repo: Repo, warm_server: int) -> None:
    """The refusals above are for their reasons: the same command, unwrapped, is served."""
    report = _wrapped([], committed_repo)
    assert report["status"] == "succeeded"
    assert served() == 1


def _runtime() -> Path:
    return Path(os.environ["XDG_RUNTIME_DIR"]) / "tidegate"


@pytest.mark.parametrize("shape", ["symlink", "open to others"])
def test_a_hijacked_directory_is_neither_served_nor_used(committed_repo: Repo, shape: str) -> None:
    """Someone else's (or a too open) directory where the socket would be: no server
    starts there and no client connects to a socket in it."""
    elsewhere = _runtime().with_name("elsewhere")
    elsewhere.mkdir(mode=0o700)
    if shape == "symlink":
        _runtime().symlink_to(elsewhere)
    else:
        _runtime().mkdir(mode=0o755)
        _runtime().chmod(0o755)
    started = cli("warm", "start")
    assert started.returncode == 1
    assert "not a private directory" in started.stderr
    assert len(started.stderr.strip().splitlines()) == 1
    # A listener planted in it: the client does not talk to it.
    planted = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    planted.bind(str(_runtime() / "warm.sock"))
    planted.listen(1)
    planted.setblocking(False)
    try:
        report = _wrapped([], committed_repo)
        assert report["status"] == "succeeded"
        with pytest.raises(BlockingIOError):
            planted.accept()
    finally:
        planted.close()


def _connect() -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(str(_runtime() / "warm.sock"))
    return sock


def _answer(sock: socket.socket) -> bytes:
    data = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            return data
        data += chunk


@pytest.mark.parametrize(
    "payload",
    [
        b"GET / HTTP/1.0\r\n\r\n",
        b"TGW1" + (1 << 31).to_bytes(4, "big"),  # a length it must not try to read
        b"TGW1" + (12).to_bytes(4, "big") + (100).to_bytes(4, "big") + b"run",  # short field
        b"TGW1" + (7).to_bytes(4, "big") + (3).to_bytes(4, "big") + b"run",  # run without fds
    ],
    ids=["not the protocol", "too long", "a field past the end", "a run without descriptors"],
)
def test_garbage_is_refused_and_the_server_goes_on(
    committed_repo: Repo, warm_server: int, payload: bytes
) -> None:
    with _connect() as sock:
        sock.sendall(payload)
        sock.shutdown(socket.SHUT_WR)
        answer = _answer(sock)
    assert answer == b"" or answer.startswith(b"R"), answer
    report = _wrapped([], committed_repo)
    assert report["status"] == "succeeded"
    assert served() == 1


def test_the_server_is_checked_to_be_this_users(warm_server: int) -> None:
    """What the client checks of the server (``SO_PEERCRED``): its uid."""
    with _connect() as sock:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", creds)
    assert (pid, uid) == (warm_server, os.getuid())
    mode = os.stat(_runtime()).st_mode & 0o777
    assert mode == 0o700
