"""An instance's environment: built once per (repository, version, Python, packages,
install) in the user's cache and reused, and the one way a benchmark's command (its
tests, its installs) runs: through the runner, contained or with approval.

An environment is a directory holding ``venv/`` (the interpreter the tests run with,
never tidegate's own) and ``testbed/`` (a local clone of the mirror, made once: hard links where the
filesystem allows; each grading resets it instead of copying the checkout). The checkout is installed into the venv
as the specs say (``python -m pip install -e .``, the default when the checkout has a
``setup.py`` or ``pyproject.toml``), so the code under test is the testbed's whatever
commit it is reset to. The venv is made with ``uv`` where it is found (the ``gym``
extra installs it; ``python -m pip`` in an install command becomes ``uv pip``), else with
``python -m venv`` and pip, which is slower; ``Environment.notes`` says which.

What an instance asks for is tidegate's extension of the format (the public files
carry only ``version``): ``environment: {"python": "3.11", "packages": [...],
"install": "..."}``, or the older ``requirements`` list for the packages.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
from msgspec.structs import replace

from tidegate.disk.linksafe import DIR_FLAGS, entry_mode, held_lock, opened_dir, replace_file
from tidegate.errors import CapabilityMismatch, UsageError
from tidegate.exec.containment import ContainmentPolicy, policy_for
from tidegate.exec.environment import command_environment
from tidegate.exec.guard import Clearance
from tidegate.exec.runner import CommandResult, run_command
from tidegate.git.command import Git
from tidegate.gym.swe_instances import Instance
from tidegate.gym.swe_specs import RunSpec, official_spec

READY_FILE = ".tidegate-ready"
_INSTALL_NAMES = ("PIP_", "UV_", "SSL_CERT_", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
                  "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")  # fmt: skip
"""What an install needs of tidegate's environment besides the allowlist: the package
index, its certificates, a proxy."""
TESTBED = "testbed"

GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_AUTHOR_NAME": "gym", "GIT_AUTHOR_EMAIL": "gym@tidegate.invalid",
           "GIT_COMMITTER_NAME": "gym", "GIT_COMMITTER_EMAIL": "gym@tidegate.invalid"}  # fmt: skip


def git(cwd: Path, *args: str, input: str | None = None) -> Any:
    """A git call through the one git wrapper (no hooks, no pager, no prompts), local
    transport only (the clone of the local mirror)."""
    data = input.encode("utf-8") if input is not None else None
    return Git(cwd, config=("protocol.file.allow=always",)).run(
        *args, env=GIT_ENV, input=data, check=False
    )


def venv_cache() -> Path:
    """Where environments are built and kept: the user's cache directory, not the state
    root, which contained commands never see (the key that signs run records is there)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("tidegate")) / "swe-venvs"


def benchmark_run(
    argv: list[str],
    cwd: Path,
    policy: ContainmentPolicy,
    clearance: Clearance,
    label: str,
    env: dict[str, str] | None = None,
) -> tuple[CommandResult, bytes]:
    """A benchmark's command (its tests, its installs) through the one runner: contained
    where bubblewrap works, else only with the user's approval. Returns its result and
    its whole output (stdout, then stderr); the files it was spilled to are removed."""
    spill = Path(tempfile.mkdtemp(prefix="tidegate-swe-out-"))
    try:
        res = run_command(
            argv, cwd, 1800, spill, env, label=label, clearance=clearance, containment=policy
        )
        return res, res.stdout_file.read_bytes() + res.stderr_file.read_bytes()
    except CapabilityMismatch as exc:
        raise UsageError(str(exc)) from exc
    finally:
        shutil.rmtree(spill, ignore_errors=True)


def find_uv() -> str | None:
    """The ``uv`` binary: the ``uv`` package's (the ``gym`` extra), else one on PATH
    that is a real program (a version manager's shim script would not run contained)."""
    import importlib

    try:
        return str(importlib.import_module("uv").find_uv_bin())
    except (ImportError, FileNotFoundError):
        pass
    found = shutil.which("uv")
    if found is None:
        return None
    with open(found, "rb") as head:
        return None if head.read(2) == b"#!" else os.path.realpath(found)


class EnvSpec(msgspec.Struct, frozen=True):
    python: str | None
    """A version (``3.11``) or an interpreter's path; None: the first Python uv finds."""
    packages: tuple[str, ...]
    install: str | None
    requirements: tuple[str, ...] = ()
    """The checkout's requirements files, the first that exists installed (``-r``)."""
    pre_install: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def key(self) -> list[Any]:
        return [self.python, list(self.packages), self.install, list(self.requirements),
                list(self.pre_install)]  # fmt: skip


_ROOT_ONLY = re.compile(r"apt-get|locale-gen|/etc/|\bconda\b")
"""Pre-install steps that need the harness's container (root, apt, conda): not run."""


def env_spec(instance: Instance, spec: RunSpec) -> EnvSpec:
    """What the environment holds: the instance's ``environment`` where it names a part,
    else swebench's spec for (repository, version), else pytest for a pytest run. The
    spec's conda ``packages`` are installed with pip; ``requirements.txt`` installs the
    checkout's requirements file; pre-install steps needing root or conda are not run."""
    raw = instance.extra.get("environment") or {}
    if not isinstance(raw, dict):
        raise UsageError(f"{instance.instance_id}: environment must be an object")
    official = official_spec(instance.repo, instance.extra.get("version"))
    named = str(official.get("packages") or "")
    listed = () if named.endswith((".txt", ".yml")) else tuple(named.split())
    default = [*listed, *official.get("pip_packages", [])] if official else None
    packages = raw.get("packages", instance.requirements)
    packages = default if packages is None else packages
    if packages is None:
        packages = ["pytest"] if spec.runs_pytest else []
    if not isinstance(packages, list | tuple) or not all(isinstance(p, str) for p in packages):
        raise UsageError(f"{instance.instance_id}: environment packages must be strings")
    requirements = tuple(official["requirements_paths"]) if named == "requirements.txt" else ()
    steps = [str(c) for c in official.get("pre_install", [])]
    notes = [f"{instance.repo} {instance.extra.get('version')}: not run (needs the harness's "
             f"container): pre-install {c!r}" for c in steps if _ROOT_ONLY.search(c)]  # fmt: skip
    if named.endswith(".yml"):
        notes.append(f"the spec's conda {named} is not followed")
    python, install = raw.get("python", official.get("python")), raw.get("install")
    return EnvSpec(
        None if python is None else str(python),
        tuple(packages),
        str(install) if install is not None else official.get("install"),
        requirements if "packages" not in raw else (),
        tuple(c for c in steps if not _ROOT_ONLY.search(c)),
        tuple(notes),
    )


class Environment(msgspec.Struct, frozen=True):
    root: Path
    python: str
    testbed: Path
    notes: tuple[str, ...]

    @property
    def bin_dir(self) -> str:
        return str(Path(self.python).parent)


@contextlib.contextmanager
def environment(
    instance: Instance,
    spec: EnvSpec,
    mirror: Path,
    envs: Path,
    clearance: Clearance,
    python_override: str | None = None,
) -> Iterator[Environment]:
    """The environment for ``instance``, built under ``envs`` once per key and reused,
    held (an exclusive lock: one grading at a time on its testbed) for the block, with
    ``base_commit`` fetched from ``mirror`` into the testbed when it lacks it. Since
    installs may write ``envs``, nothing there is followed if a link: ``envs`` itself
    is refused, a link at an environment's name is removed and it is built anew."""
    uv = find_uv()
    key = json.dumps([instance.repo, instance.extra.get("version"), *spec.key(), python_override])
    name = hashlib.sha256(key.encode()).hexdigest()[:16]
    root = envs / name
    python = python_override or str(root / "venv" / "bin" / "python")
    notes = (
        spec.notes
        if uv or python_override
        else (*spec.notes, "uv not found: the venv was made with venv and pip")
    )
    envs.parent.mkdir(parents=True, exist_ok=True)
    with (
        opened_dir(envs.parent, envs.name, create=True) as envs_fd,
        held_lock(envs_fd, f"{name}.lock", shown=envs / f"{name}.lock"),
    ):
        if not _ready(envs_fd, name):
            _remove_entry(envs_fd, name)
            with opened_dir(envs.parent, envs.name, name, create=True) as built:
                _clone(instance, mirror, root)
                if python_override is None:
                    _build_venv(instance, spec, root, uv, clearance)
                replace_file(built, READY_FILE, key.encode(), shown=root / READY_FILE)
        _fetch(instance, mirror, root / TESTBED)
        yield Environment(root, python, root / TESTBED, notes)


def _clone(instance: Instance, mirror: Path, root: Path) -> None:
    """The testbed: a local clone of the mirror (hard links where it can), checked out at
    the environment's setup commit for the install."""
    setup = instance.extra.get("environment_setup_commit") or instance.base_commit
    for step in (
        git(root, "clone", "-q", "--no-checkout", str(mirror), TESTBED),
        git(root / TESTBED, "checkout", "-q", "--detach", str(setup)),
    ):
        if step.returncode != 0:
            raise UsageError(f"{instance.instance_id}: testbed: {step.stderr.strip()[:300]}")


def _fetch(instance: Instance, mirror: Path, testbed: Path) -> None:
    if git(testbed, "cat-file", "-e", f"{instance.base_commit}^{{commit}}").returncode == 0:
        return
    refs = ("+refs/heads/*:refs/mirror/heads/*", "+refs/tags/*:refs/mirror/tags/*")
    res = git(testbed, "fetch", "-q", "--no-tags", str(mirror), *refs)
    if res.returncode != 0:
        raise UsageError(f"{instance.instance_id}: testbed fetch: {res.stderr.strip()[:300]}")


def _build_venv(
    instance: Instance, spec: EnvSpec, root: Path, uv: str | None, clearance: Clearance
) -> None:
    venv, testbed = root / "venv", root / TESTBED
    python = str(venv / "bin" / "python")
    base = base_python(spec.python)
    if base is None:
        raise UsageError(
            f"{instance.instance_id}: no Python {spec.python} found on this machine "
            "(name another in the instance's environment.python, or pass --python)"
        )
    steps = [[uv, "venv", "-q", "--python", base, str(venv)] if uv
             else [base, "-m", "venv", str(venv)]]  # fmt: skip
    if spec.packages:
        steps.append(_pip(uv, python, *spec.packages))
    reqs = next((r for r in spec.requirements if (testbed / r).is_file()), None)
    if reqs is not None:
        steps.append(_pip(uv, python, "-r", str(testbed / reqs)))
    steps += [["/bin/sh", "-c", step] for step in spec.pre_install]
    install = spec.install
    if install is None and any((testbed / f).is_file() for f in ("setup.py", "pyproject.toml")):
        install = "python -m pip install -e ."
    if install and uv:
        install = install.replace("python -m pip install", f"{uv} pip install --python {python}")
    if install:
        steps.append(["/bin/sh", "-c", install])
    uv_cache = Path(os.environ.get("UV_CACHE_DIR") or Path.home() / ".cache" / "uv")
    uv_cache.mkdir(parents=True, exist_ok=True)
    policy = policy_for("auto", network=True, writable=(root, uv_cache))
    assert policy is not None
    exes = tuple(e for e in (uv, base) if e)
    env = command_environment(passthrough=[n for n in os.environ if n.startswith(_INSTALL_NAMES)])
    env.update(PATH=f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin", UV_CACHE_DIR=str(uv_cache),
               VIRTUAL_ENV=str(venv), LANG="C.UTF-8")  # fmt: skip
    for argv in steps:
        cwd = testbed if argv[0] == "/bin/sh" else root
        # the venv once made is on PATH, which shows it read-only unless named writable
        writable = (root, uv_cache, venv) if venv.is_dir() else (root, uv_cache)
        step = replace(policy, executables=exes, writable=writable)
        res, _ = benchmark_run(argv, cwd, step, clearance, "venv", env)
        if not res.ok:
            tail = (res.stderr_tail or res.stdout_tail).strip()[-400:]
            raise UsageError(f"{instance.instance_id}: building its environment failed: {tail}")


def _pip(uv: str | None, python: str, *args: str) -> list[str]:
    return [uv, "pip", "install", "-q", "--python", python, *args] if uv else [
        python, "-m", "pip", "install", "-q", *args]  # fmt: skip


def base_python(request: str | None) -> str | None:
    """A real interpreter (not a version manager's shim script, which would not run
    contained) for ``request``: a path, a version such as ``3.11``, or None for any. The
    venv made from it is the tests' own: tidegate's environment is never used."""
    if request is not None and "/" in request:
        return request
    version = request or f"{sys.version_info.major}.{sys.version_info.minor}"
    ours = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    places = [ours] if request in (None, version) and ours.endswith(f"python{version}") else []
    for name in (f"python{version}", "python3"):
        for folder in [*os.environ.get("PATH", "").split(":"), "/usr/local/bin", "/usr/bin"]:
            places.append(os.path.join(folder or ".", name))
    for place in places:
        real = os.path.realpath(place)
        if real.endswith(f"python{version}") and os.access(real, os.X_OK) and _binary(real):
            return real
    return None


def _binary(path: str) -> bool:
    try:
        with open(path, "rb") as head:
            return head.read(4) == b"\x7fELF"
    except OSError:
        return False


def _ready(envs: int, name: str) -> bool:
    """The environment ``name`` was built to the end: a directory (not a link) holding
    the ready file."""
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=envs)
    except OSError:
        return False
    try:
        mode = entry_mode(fd, READY_FILE)
        return mode is not None and stat.S_ISREG(mode)
    finally:
        os.close(fd)


def _remove_entry(directory: int, name: str) -> None:
    """Whatever is at ``name`` removed: a directory's tree, or the link or file itself."""
    mode = entry_mode(directory, name)
    if mode is None:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(name, dir_fd=directory)
    else:
        os.unlink(name, dir_fd=directory)
