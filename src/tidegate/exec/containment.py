"""Process containment for commands: bubblewrap when it demonstrably works, else none.

Containment is reported on its own, separately from the ``cwd`` check: a command whose
working directory is inside the workspace can still write anywhere its user can, unless a
backend confines it. Two backends exist:

``bubblewrap``
    The command sees an allowlisted view of the host (``tidegate.exec.view``), read-only:
    the system directories, a few files of ``/etc``, and the Python installations and
    toolchains it runs with; never HOME, ``/tmp`` or the state root. Into that view go the
    policy's writable paths and a private TMPDIR and HOME made for the call. A ``.git``
    inside a writable path is bound read-only again, and so is every read-only overlay (the
    main work tree when the command runs in a shadow). Shares make a directory visible
    read-only at another place (ignored dependencies of the main tree inside the shadow).
    The command gets its own pid namespace (bwrap is its init, so killing bwrap kills every
    process in it, even ones that called setsid), no network unless asked for, a minimal
    ``/dev``, its own ``/proc``, and no capabilities (as root it could otherwise remount
    ``/`` writable).
``none``
    Nothing is confined: the command can write wherever tidegate's user can and reach the
    network. It is never called sandboxed.

``probe()`` runs bubblewrap once with the same view and checks from inside that ``/`` is
read-only, that bwrap is pid 1, that only the loopback interface exists and that no
capability is effective. A policy with ``required=True`` raises CapabilityMismatch before
anything is spawned when that probe did not pass.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Literal

import msgspec

from tidegate.disk.state_dir import user_state_dir
from tidegate.errors import CapabilityMismatch
from tidegate.exec.guard import Clearance, admit, hidden_state_roots
from tidegate.exec.sandbox_dirs import private_dir
from tidegate.exec.trees import remove_later
from tidegate.exec.view import Bind, system_binds, toolchain_dirs

Backend = Literal["bubblewrap", "none"]
ContainmentMode = Literal["auto", "required", "none"]
STATE_ROOT_ENV = "TIDEGATE_STATE_ROOT"  # as tidegate.store.state_root, not imported here
BWRAP_ENV = "TIDEGATE_BWRAP"
"""Names the bubblewrap executable (default: ``bwrap`` on PATH)."""
PROBE_TIMEOUT_S = 15.0

# Runs inside the sandbox; every failed check has its own exit code (see _PROBE_FAILURES).
_PROBE_SCRIPT = r"""
test ! -w / || exit 10
read comm < /proc/1/comm
[ "$comm" = "$1" ] || exit 11
n=0
while read line; do
  n=$((n + 1))
  [ "$n" -le 2 ] && continue
  case "$line" in lo:*) ;; *) exit 12 ;; esac
done < /proc/net/dev
while read key value; do
  [ "$key" = CapEff: ] || continue
  case "$value" in *[!0]*) exit 13 ;; esac
done < /proc/self/status
exit 0
"""
_PROBE_FAILURES = {
    10: "/ is still writable inside the sandbox",
    11: "bwrap is not pid 1: no private pid namespace",
    12: "a network interface other than loopback is visible",
    13: "the command keeps effective capabilities",
}


class ContainmentPolicy(msgspec.Struct, frozen=True):
    """What a contained command may touch. ``required``: refuse to run uncontained."""

    required: bool
    network: bool
    writable: tuple[Path, ...]
    readonly_overlays: tuple[Path, ...] = ()
    """Paths bound read-only again on top of the writable ones (e.g. the main work tree)."""
    shares: tuple[tuple[Path, Path], ...] = ()
    """(source, target) pairs: ``source`` is made visible read-only at ``target``."""
    bwrap: str | None = None
    """The bubblewrap executable; None: ``$TIDEGATE_BWRAP`` or ``bwrap`` on PATH."""
    executables: tuple[str, ...] = ()
    """Programs the user's own command names by absolute path: their installations (a
    venv and its base Python) are made visible read-only. Never from a model's command."""
    hidden: tuple[Path, ...] = ()
    """Paths the command must not see, besides the state root (always hidden)."""
    masked: tuple[Path, ...] = ()
    """Files inside the writable paths that the command sees empty and read-only (the
    secret-shaped files of a workspace, for a model's command), and directories it sees
    as an empty read-only tmpfs (those the secret index could not list)."""


class ContainmentReport(msgspec.Struct, frozen=True):
    """The containment a command actually ran under (or, from ``probe``, can run under)."""

    backend: Backend
    verified: bool
    network: bool
    """Whether the command could reach the network (always true for ``none``)."""
    writable: tuple[str, ...]
    """Where it could write; ``("/",)`` stands for anywhere tidegate's user can."""
    reason: str
    readonly: tuple[str, ...] = ()
    """Read-only overlays inside or beside the writable paths (``.git``, the main tree)."""
    shared: tuple[str, ...] = ()
    """Read-only shares, as ``source -> target``."""
    private_dirs: tuple[str, ...] = ()
    """Environment variables pointed at directories private to the call (TMPDIR, HOME)."""
    visible: tuple[str, ...] = ()
    """Toolchain directories outside the system ones that the command could read."""
    masked: tuple[str, ...] = ()
    """Files the command saw empty (withheld secret-shaped files) and directories it saw
    empty (unlistable ones, which may hold secrets)."""

    def to_json(self) -> dict[str, object]:
        return {
            "backend": self.backend,
            "verified": self.verified,
            "network": self.network,
            "writable": list(self.writable),
            "readonly": list(self.readonly),
            "shared": list(self.shared),
            "private_dirs": list(self.private_dirs),
            "visible": list(self.visible),
            "masked": list(self.masked),
            "reason": self.reason,
        }


def uncontained(reason: str) -> ContainmentReport:
    return ContainmentReport(
        backend="none", verified=False, network=True, writable=("/",), reason=reason
    )


def policy_for(
    mode: ContainmentMode,
    *,
    network: bool,
    writable: tuple[Path, ...],
    readonly_overlays: tuple[Path, ...] = (),
    shares: tuple[tuple[Path, Path], ...] = (),
) -> ContainmentPolicy | None:
    """The policy for a configured mode; None for ``none`` (run uncontained)."""
    if mode == "none":
        return None
    return ContainmentPolicy(
        required=mode == "required",
        network=network,
        writable=writable,
        readonly_overlays=readonly_overlays,
        shares=shares,
    )


def bwrap_executable(explicit: str | None = None) -> str | None:
    """The bubblewrap to use: ``explicit``, else ``$TIDEGATE_BWRAP``, else PATH."""
    name = explicit or os.environ.get(BWRAP_ENV) or "bwrap"
    if os.sep in name:
        return name if os.access(name, os.X_OK) and os.path.isfile(name) else None
    return shutil.which(name)


def probe(bwrap: str | None = None) -> ContainmentReport:
    """Whether bubblewrap works here, established by running it (once per executable)."""
    exe = bwrap_executable(bwrap)
    if exe is None:
        wanted = bwrap or os.environ.get(BWRAP_ENV) or "bwrap"
        return uncontained(f"bubblewrap unavailable: {wanted} is not an executable")
    with _probe_lock:  # a caller arriving while another thread probes waits for its answer
        return _probe_executable(os.path.realpath(exe))


_probe_lock = threading.Lock()


@lru_cache(maxsize=8)
def _probe_executable(exe: str) -> ContainmentReport:
    comm = os.path.basename(exe)[:15]  # what /proc/1/comm shows for bwrap as pid 1
    view = _flags(system_binds(network=False))
    argv = [exe, *_base_flags(network=False), *view, "/bin/sh", "-c", _PROBE_SCRIPT, "probe", comm]
    try:
        res = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
            start_new_session=True,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return uncontained(f"bubblewrap probe of {exe} failed: {exc}")
    if res.returncode != 0:
        why = _PROBE_FAILURES.get(res.returncode) or (
            res.stderr.decode("utf-8", "replace").strip()[:300] or f"exit {res.returncode}"
        )
        return uncontained(f"bubblewrap probe of {exe} failed: {why}")
    return ContainmentReport(
        backend="bubblewrap",
        verified=True,
        network=False,
        writable=(),
        reason=f"{exe} {_version(exe)}: read-only allowlisted view of /, private pid and "
        "network namespaces, no capabilities (probed)",
    )


def _version(exe: str) -> str:
    try:
        res = subprocess.run([exe, "--version"], capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "(version unknown)"
    return res.stdout.decode("utf-8", "replace").strip() or "(version unknown)"


def _base_flags(*, network: bool) -> list[str]:
    flags = ["--die-with-parent", "--unshare-pid", "--cap-drop", "ALL"]
    if not network:
        flags.append("--unshare-net")
    return [*flags, "--dev", "/dev", "--proc", "/proc"]


def _flags(binds: list[Bind]) -> list[str]:
    """Mount flags for ``binds``, then the root made read-only (after the last mount point
    was created in it)."""
    out: list[str] = []
    for flag, src, dest in binds:
        out += [flag, dest] if flag in ("--tmpfs", "--remount-ro") else [flag, src, dest]
    return [*out, "--remount-ro", "/"]


def hidden_paths(extra: tuple[Path, ...] = ()) -> list[str]:
    """What no command may see: the state roots (``$TIDEGATE_STATE_ROOT``, the default
    location, and every root this process resolved, ``--state-root`` included), where the
    run records and the key that signs them live, and ``extra``."""
    found = [os.environ.get(STATE_ROOT_ENV), user_state_dir()]
    found += sorted(hidden_state_roots())
    return list(dict.fromkeys(os.path.realpath(p) for p in (*found, *extra) if p))


class Launch(msgspec.Struct):
    """How to start one command: the argv prefix, extra environment, and the report."""

    prefix: list[str]
    env: dict[str, str]
    report: ContainmentReport


@contextmanager
def launch(
    policy: ContainmentPolicy | None,
    cwd: Path,
    *,
    clearance: Clearance,
    path: str | None = None,
) -> Iterator[Launch]:
    """Prepare containment for one command in ``cwd``; clean its private dirs afterwards.
    ``path``: the command's PATH, whose toolchains outside HOME it may read.

    This is the one gate every process started on someone's behalf passes: when the
    command would run uncontained (``policy`` None, or bubblewrap unusable), the guard
    (``tidegate.exec.guard.admit``) decides from ``clearance`` whether it may. Raises,
    with nothing spawned and nothing created: CapabilityMismatch when the policy requires
    containment and bubblewrap is missing or failed its probe; GuardRefused when a
    command that is not the user's would run uncontained without approval.
    """
    if policy is None:
        yield host_launch(clearance)
        return
    found = probe(policy.bwrap)
    if not found.verified:
        if policy.required:
            raise CapabilityMismatch(f"containment is required but {found.reason}")
        why = admit(clearance, found.reason)
        yield Launch([], {}, uncontained(f"{why}; ran uncontained"))
        return
    exe = bwrap_executable(policy.bwrap)
    assert exe is not None  # the probe just found it
    private = private_dir()
    try:
        yield _bubblewrap(exe, policy, cwd, private, found.reason, path)
    finally:
        remove_later(private)


def host_launch(clearance: Clearance) -> Launch:
    """The launch of a command that runs uncontained by design (containment off): the
    guard's answer first, so only the user's own command, or an approved one, gets it."""
    return Launch([], {}, uncontained(admit(clearance, "containment not requested")))


def uncontained_reason(policy: ContainmentPolicy | None) -> str | None:
    """Why a command under ``policy`` would run uncontained (None: it would be contained,
    or refused because containment is required): what ``launch`` hands the guard, for a
    caller that must know before it prepares anything."""
    if policy is None:
        return "containment not requested"
    found = probe(policy.bwrap)
    if found.verified or policy.required:
        return None
    return found.reason


def _bubblewrap(
    exe: str, policy: ContainmentPolicy, cwd: Path, private: Path, probed: str, path: str | None
) -> Launch:
    tmp, home = private / "tmp", private / "home"
    tmp.mkdir()
    home.mkdir()
    writable = [_real(p) for p in policy.writable]
    for place in writable:
        if not os.path.isdir(place):
            raise ValueError(f"writable path {place} is not a directory")
    readonly = [_real(p) for p in policy.readonly_overlays if os.path.lexists(p)]
    readonly += [
        os.path.join(w, ".git") for w in writable if os.path.lexists(os.path.join(w, ".git"))
    ]
    hidden = hidden_paths(policy.hidden)
    tools = toolchain_dirs(path, policy.executables, home=os.environ.get("HOME"), hidden=hidden)
    binds = system_binds(network=policy.network)
    binds += [("--ro-bind", p, p) for p in tools]
    binds += [("--bind", p, p) for p in writable]
    binds.append(("--bind", str(private), str(private)))  # one mount for TMPDIR and HOME
    binds += [("--ro-bind", p, p) for p in dict.fromkeys(readonly)]
    shared = []
    for source, target in policy.shares:
        binds.append(("--ro-bind", _real(source), _real(target)))
        shared.append(f"{source} -> {target}")
    # A hidden path inside something bound (the state root in a writable tree) is covered
    # by an empty read-only tmpfs.
    sources = [src for flag, src, _ in binds if flag != "--symlink"]
    masked = _masks(policy.masked)
    covered = [p for p in masked if os.path.isdir(p)]  # no mount point inside these
    for secret in hidden:
        if any(_within(secret, c) for c in covered):
            continue
        if any(_within(secret, src) for src in sources) and os.path.isdir(secret):
            binds += [("--tmpfs", "", secret), ("--remount-ro", "", secret)]
    for place in masked:
        if place in covered:
            binds += [("--tmpfs", "", place), ("--remount-ro", "", place)]
        else:
            binds.append(("--ro-bind", "/dev/null", place))
    # Deeper mount points go later so that they win over the trees that contain them.
    binds.sort(key=lambda b: len(Path(b[2]).parts))
    argv = [exe, *_base_flags(network=policy.network), *_flags(binds)]
    argv += ["--chdir", _real(cwd), "--"]
    env = {"TMPDIR": str(tmp), "TMP": str(tmp), "TEMP": str(tmp), "HOME": str(home)}
    report = ContainmentReport(
        backend="bubblewrap",
        verified=True,
        network=policy.network,
        writable=tuple(writable),
        readonly=tuple(dict.fromkeys(readonly)),
        shared=tuple(shared),
        masked=tuple(masked),
        private_dirs=("TMPDIR", "HOME"),
        visible=tuple(tools),
        reason=probed,
    )
    return Launch(argv, env, report)


def _masks(paths: tuple[Path, ...]) -> list[str]:
    """The masked files and directories that are there (resolved), minus any inside a masked directory: its tmpfs already hides them, and a mount point cannot be
    made inside a read-only tmpfs."""
    places = []
    for p in paths:
        if os.path.isfile(p) or os.path.isdir(p):
            places.append(_real(p))
    dirs = [p for p in places if os.path.isdir(p)]
    return [p for p in dict.fromkeys(places) if not any(d != p and _within(p, d) for d in dirs)]


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _real(path: Path | str) -> str:
    return os.path.realpath(path)
