"""What a contained command sees of the host's filesystem: an allowlist, not ``/``.

The command's root is bubblewrap's own (read-only) tmpfs with these bound into it,
read-only:

* the system: ``/usr`` and its merged-usr links (``/bin``, ``/lib``...), ``/opt``, and
  the few files of ``/etc`` that programs need to start (the loader cache, users and
  groups, certificates, locale and time zone, ``alternatives``);
* the interpreters and toolchains the command uses: tidegate's own Python (its venv and
  that venv's base installation), every venv the command's PATH or command line names
  together with its base Python, and the PATH entries outside HOME.

The writable workspace, its read-only overlays and the call's private HOME and TMPDIR
are added by ``containment``. Never bound: HOME itself (``~/.ssh``, other checkouts,
dotfiles), ``/root``, ``/home``, ``/tmp`` (other runs' shadows), and any path that
contains or lies in the state root, whose ``checkpoint.key`` signs the run records.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import shutil
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
PRIVATE_KEY_DIRS = ("/etc/ssl/private", "/etc/pki/tls/private")
"""Inside allowlisted ``/etc`` entries: never in the view."""
ETC_ENTRIES = (
    "alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ssl", "ca-certificates",
    "ca-certificates.conf", "pki", "passwd", "group", "nsswitch.conf", "hosts", "host.conf",
    "gai.conf", "localtime", "timezone", "locale.alias", "locale.conf", "mime.types",
    "os-release", "protocols", "services", "gitconfig", "inputrc", "terminfo", "magic",
    "python3*", "perl", "java*", "fonts", "debian_version", "lsb-release",
)  # fmt: skip
"""What of ``/etc`` a command sees (globs): enough to start programs, no host secrets."""
NETWORK_ETC = ("resolv.conf",)
"""Added when the command has the network."""

Bind = tuple[str, str, str]
"""(bubblewrap flag, source, target)."""


def system_binds(*, network: bool) -> list[Bind]:
    """The system part of the view: real directories bound read-only, merged-usr links
    recreated as links, the allowlisted entries of ``/etc``."""
    binds: list[Bind] = []
    for top in SYSTEM_DIRS:
        if os.path.islink(top):
            binds.append(("--symlink", os.readlink(top), top))
        elif os.path.isdir(top):
            binds.append(("--ro-bind", top, top))
    for name in _etc_names(network):
        binds += _etc_binds(f"/etc/{name}")
    return binds


_ETC_SEEN: dict[bool, tuple[tuple[int, int, int], list[str]]] = {}
RACY_NS = 2_000_000_000
"""A listing of ``/etc`` taken within this of its last change is not reused."""


def _etc_names(network: bool) -> list[str]:
    """The allowlisted names in ``/etc``: listed and matched once, and again whenever
    ``/etc``'s own stat moves (an entry created, removed or renamed) or was too recent to
    trust (the same clock tick as the listing). What each name is now is read per call."""
    wanted = ETC_ENTRIES + (NETWORK_ETC if network else ())
    try:
        st = os.stat("/etc")  # before the listing: a change after it moves the key
        key = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        seen = _ETC_SEEN.get(network)
        if seen is not None and seen[0] == key:
            return seen[1]
        listed = sorted(os.listdir("/etc"))
    except OSError:
        return []
    # One pattern for the allowlist (what fnmatchcase does per glob, once for all names)
    allowed = re.compile("|".join(fnmatch.translate(p) for p in wanted)).match
    names = [n for n in listed if allowed(n)]
    if max(st.st_mtime_ns, st.st_ctime_ns) < time.time_ns() - RACY_NS:
        _ETC_SEEN[network] = (key, names)
    return names


def _etc_binds(path: str) -> list[Bind]:
    """``path`` bound read-only; a directory that holds the host's private TLS keys
    (``/etc/ssl/private``, ``/etc/pki/tls/private``) is bound entry by entry, without them."""
    if not os.path.exists(path) or path in PRIVATE_KEY_DIRS:  # a dangling link: unbindable
        return []
    holds_keys = any(p.startswith(path + "/") and os.path.lexists(p) for p in PRIVATE_KEY_DIRS)
    if holds_keys and os.path.isdir(path) and not os.path.islink(path):
        try:
            names = sorted(os.listdir(path))
        except OSError:
            return []
        return [b for n in names for b in _etc_binds(os.path.join(path, n))]
    return [("--ro-bind", path, path)]


def toolchain_dirs(
    path: str | None,
    executables: Iterable[str] = (),
    *,
    home: str | None,
    hidden: Iterable[str],
) -> list[str]:
    """The directories, outside the system ones, that a command needs to run: tidegate's
    own Python, the installations of the PATH entries and of ``executables`` (absolute
    paths the user's command names), and the base Python of every venv among them.

    Inside HOME only venvs and the Python installations they (or tidegate) run on are
    taken. ``hidden`` (the state root), HOME and its ancestors, and anything containing
    or inside a hidden path are never returned."""
    home_real = os.path.realpath(home) if home else None
    hidden_real = [os.path.realpath(h) for h in hidden]
    trusted = {
        os.path.realpath(p)
        for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, _prefix_of(sys.executable))
    }
    found: set[str] = set()
    for entry in (path or "").split(os.pathsep):
        if os.path.isabs(entry) and os.path.isdir(entry):
            found.add(_prefix_of(os.path.join(entry, "x")))
    for exe in executables:
        if os.path.isabs(exe) and os.path.isfile(exe) and os.access(exe, os.X_OK):
            # a named program's installation, and its script's interpreter's, are what it
            # needs to start, wherever they live (an npm or nvm install in HOME included)
            # (as named, and resolved: a venv's python links to its base's, an npm bin
            # entry to the package's launcher in node_modules)
            named = [exe, *_interpreter(exe, path)]
            trusted.update(_prefix_of(p) for p in named)
            trusted.update(_prefix_of(os.path.realpath(p)) for p in named)
    for venv in [c for c in found | trusted if _is_venv(c)]:
        trusted.update(_venv_bases(venv))
    chosen = [
        c
        for c in found | trusted
        if _allowed(c, home_real, hidden_real)
        and not _is_system(c)
        and (c in trusted or _is_venv(c) or not _inside(c, home_real))
    ]
    # Drop what another chosen directory already contains.
    return sorted(c for c in chosen if not any(o != c and _inside(c, o) for o in chosen))


def command_executables(argv: Sequence[str]) -> list[str]:
    """Absolute paths of programs named by a command the user wrote: the words of a
    ``sh -c`` string (or the argv) that are executable files in a ``bin`` directory."""
    words = list(argv)
    if len(argv) >= 3 and argv[1] == "-c":
        try:
            words += shlex.split(argv[2])
        except ValueError:
            words += argv[2].split()
    return [w for w in words if w.startswith("/") and os.path.basename(os.path.dirname(w)) == "bin"]


def _interpreter(executable: str, path: str | None) -> list[str]:
    """The interpreter a script names on its ``#!`` line (``/usr/bin/env node`` looked up
    on ``path``), as an absolute path; nothing for a binary or an unreadable file."""
    try:
        with open(executable, "rb") as fh:
            first = fh.readline(256)
    except OSError:
        return []
    if not first.startswith(b"#!"):
        return []
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return []
    program = words[0]
    if os.path.basename(program) == "env":
        rest = [w for w in words[1:] if not w.startswith("-")]
        found = shutil.which(rest[0], path=path) if rest else None
        return [found] if found else []
    return [program] if os.path.isabs(program) else []


def _prefix_of(executable: str) -> str:
    """The installation an executable belongs to: the ``node_modules`` tree of an npm
    package (its launcher loads sibling packages from there), the parent of its ``bin``
    directory when that is a Python installation (a venv, or ``lib/python3*``), else its
    directory."""
    real = os.path.abspath(executable)
    parts = real.split(os.sep)
    if "node_modules" in parts[:-1]:
        return os.sep.join(parts[: parts.index("node_modules") + 1]) or os.sep
    directory = os.path.dirname(real)
    parent = os.path.dirname(directory)
    if os.path.basename(directory) == "bin" and (_is_venv(parent) or _has_python_lib(parent)):
        return os.path.realpath(parent)
    return os.path.realpath(directory)


def _is_venv(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


def _has_python_lib(path: str) -> bool:
    try:
        return any(n.startswith("python3") for n in os.listdir(os.path.join(path, "lib")))
    except OSError:
        return False


def _venv_bases(venv: str) -> list[str]:
    """The base installation named by a venv's ``pyvenv.cfg`` (``home = .../bin``)."""
    try:
        text = Path(venv, "pyvenv.cfg").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            out.append(_prefix_of(os.path.join(value.strip(), "python")))
    return out


def _inside(path: str, root: str | None) -> bool:
    return root is not None and (path == root or path.startswith(root.rstrip("/") + "/"))


def _is_system(path: str) -> bool:
    return any(_inside(path, os.path.realpath(top)) for top in SYSTEM_DIRS)


def _allowed(path: str, home: str | None, hidden: list[str]) -> bool:
    if path == "/" or not os.path.isdir(path):
        return False
    if home is not None and _inside(home, path):  # HOME or an ancestor of it
        return False
    return not any(_inside(h, path) or _inside(path, h) for h in hidden)
