"""The interpreter for an instance that lists ``requirements``: a venv built once per
repository and requirements in the user's cache, and the one way a benchmark's command
(its tests, its installs) runs: through the runner, contained or with approval."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from dataclasses import replace
from pathlib import Path

from tidegate.disk.linksafe import DIR_FLAGS, entry_mode, opened_dir, replace_file
from tidegate.errors import CapabilityMismatch, UsageError
from tidegate.exec.containment import ContainmentPolicy, policy_for
from tidegate.exec.guard import Clearance
from tidegate.exec.runner import CommandResult, run_command
from tidegate.gym.swe_instances import Instance

READY_FILE = ".tidegate-ready"


def venv_cache() -> Path:
    """Where instance venvs are built and kept: the user's cache directory, not the state
    root, which contained commands never see (the key that signs run records is there)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("tidegate")) / "swe-venvs"


def benchmark_run(
    argv: list[str], cwd: Path, policy: ContainmentPolicy, clearance: Clearance, label: str
) -> CommandResult:
    """A benchmark's command (its tests, its requirements' installs) through the one
    runner: contained where bubblewrap works, else only with the user's approval."""
    spill = Path(tempfile.mkdtemp(prefix="tidegate-swe-out-"))
    try:
        return run_command(
            argv, cwd, 1800, spill, label=label, clearance=clearance, containment=policy
        )
    except CapabilityMismatch as exc:
        raise UsageError(str(exc)) from exc


def instance_python(instance: Instance, venvs: Path, base: str, clearance: Clearance) -> str:
    """The interpreter for an instance that lists ``requirements``: a venv the gym builds
    once per (repository, requirements) under ``venvs`` (``venv_cache()``) with ``base``,
    and reuses. The
    installs run the benchmark's packages' code: contained (network on, only the venv
    writable) or as ``clearance`` allows. Since they may write ``venvs``, nothing there is
    followed if a link: ``venvs`` itself is refused, a link at a venv's name is removed
    and the venv built anew."""
    import hashlib

    assert instance.requirements is not None
    key = hashlib.sha256(json.dumps([instance.repo, base, *instance.requirements]).encode())
    name = key.hexdigest()[:16]
    venv = venvs / name
    python = venv / "bin" / "python"
    venvs.parent.mkdir(parents=True, exist_ok=True)
    with opened_dir(venvs.parent, venvs.name, create=True) as venvs_fd:
        if _venv_ready(venvs_fd, name):
            return str(python)
        _remove_entry(venvs_fd, name)
        steps = [[base, "-m", "venv", str(venv)]]
        if instance.requirements:
            steps.append([str(python), "-m", "pip", "install", "--quiet", *instance.requirements])
        policy = policy_for("auto", network=True, writable=(venvs,))
        assert policy is not None
        policy = replace(policy, executables=(base,))
        for argv in steps:
            res = benchmark_run(argv, venvs, policy, clearance, "venv")
            if not res.ok:
                raise UsageError(
                    f"{instance.instance_id}: building its venv failed: {res.stderr_tail.strip()[-300:]}"
                )
    with opened_dir(venvs.parent, venvs.name, name) as built:
        ready = ("\n".join(instance.requirements) + "\n").encode()
        replace_file(built, READY_FILE, ready, shown=venv / READY_FILE)
    return str(python)


def _venv_ready(venvs: int, name: str) -> bool:
    """The venv ``name`` was built to the end: a directory (not a link) holding the
    ready file."""
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=venvs)
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
