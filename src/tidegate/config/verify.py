"""The verify command a run uses when the command line gives none, who chose it, and the
note that says so.

In order: ``--verify none`` (no command, on purpose); the user's ``[run] verify`` in
``.tidegate/config.toml`` (the user's own command); the one a repository's table names
(``[tool.tidegate.run]``); one detected from the repository's manifests (pytest,
``npm test``, ``go test ./...``, ``cargo test``). The last two are commands the repository
chose: the request's ``origin`` is ``repository``, so they run contained, or uncontained
only with the user's approval (``tidegate.exec.guard``). Anything but the user's own
command is shown as a note, never silent.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any, Literal

import msgspec

from tidegate.config.records import CONFIG_LOCAL, LoadedConfig

NONE = "none"
"""``--verify none``: run without a verify command, on purpose."""
MAX_MANIFEST = 1024 * 1024
_NPM_PLACEHOLDER = "no test specified"
PYTEST = "python -m pytest -q" if shutil.which("python") else "python3 -m pytest -q"
"""pytest, through the interpreter on PATH (``python3`` where there is no ``python``)."""


class VerifyChoice(msgspec.Struct, frozen=True):
    command: str | None
    origin: Literal["user", "repository"]
    note: str | None
    """What the report and stderr say about the choice (None: the user typed it)."""


def choose_verify(given: str | None, root: Path, loaded: LoadedConfig) -> VerifyChoice:
    """The verify command for a run whose command line gave ``given``."""
    if given is not None and given.strip() == NONE:
        return VerifyChoice(None, "user", "--verify none: no verify command runs")
    if given is not None:
        return VerifyChoice(given, "user", None)
    tail = "; --verify none to run without one"
    theirs = f"{tail}, `tidegate init` to make it your own"
    mine = loaded.config.run.verify
    if mine is not None and mine.strip():
        return VerifyChoice(mine, "user", f"no --verify: using `{mine}` from {CONFIG_LOCAL}{tail}")
    if loaded.repository_verify is not None:
        command, source = loaded.repository_verify
        return VerifyChoice(
            command,
            "repository",
            f"no --verify: using `{command}` named by {source}, a command the repository "
            f"chose (it runs contained, or uncontained only with your approval){tail}",
        )
    found = detect_verify(root)
    if found is not None:
        command, why = found
        return VerifyChoice(
            command,
            "repository",
            f"no --verify: using `{command}` detected from {why}, a command the repository "
            f"chose (it runs contained, or uncontained only with your approval){theirs}",
        )
    return VerifyChoice(
        None,
        "user",
        f"no --verify, none in {CONFIG_LOCAL} and none detected: no verify command runs",
    )


def detect_verify(root: Path) -> tuple[str, str] | None:
    """A test command the repository's top-level manifests configure, and which file says
    so; None when none does. Links are not followed; an unreadable manifest is no evidence."""
    pyproject = _toml(root, "pyproject.toml")
    if pyproject is not None:
        tool = pyproject.get("tool")
        if isinstance(tool, dict) and isinstance(tool.get("pytest"), dict):
            return PYTEST, "pyproject.toml"
    if _is_file(root, "pytest.ini") or _is_file(root, "conftest.py"):
        return PYTEST, "pytest.ini" if _is_file(root, "pytest.ini") else "conftest.py"
    setup_cfg = _read(root, "setup.cfg")
    if setup_cfg is not None and b"[tool:pytest]" in setup_cfg:
        return PYTEST, "setup.cfg"
    package = _read(root, "package.json")
    if package is not None:
        try:
            scripts = json.loads(package).get("scripts", {})
        except (ValueError, AttributeError, RecursionError):
            scripts = {}
        test = scripts.get("test") if isinstance(scripts, dict) else None
        if isinstance(test, str) and test.strip() and _NPM_PLACEHOLDER not in test:
            return "npm test", "package.json's test script"
    if _is_file(root, "go.mod"):
        return "go test ./...", "go.mod"
    if _is_file(root, "Cargo.toml"):
        return "cargo test", "Cargo.toml"
    if (pyproject is not None or _is_file(root, "setup.py")) and _is_dir(root, "tests"):
        return PYTEST, "tests/"
    return None


def _lstat(root: Path, name: str) -> os.stat_result | None:
    try:
        return os.lstat(root / name)
    except OSError:
        return None


def _is_file(root: Path, name: str) -> bool:
    st = _lstat(root, name)
    return st is not None and stat.S_ISREG(st.st_mode)


def _is_dir(root: Path, name: str) -> bool:
    st = _lstat(root, name)
    return st is not None and stat.S_ISDIR(st.st_mode)


def _read(root: Path, name: str) -> bytes | None:
    st = _lstat(root, name)
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_size > MAX_MANIFEST:
        return None
    try:
        fd = os.open(root / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as file:
            return file.read(MAX_MANIFEST)
    except OSError:
        return None


def _toml(root: Path, name: str) -> dict[str, Any] | None:
    data = _read(root, name)
    if data is None:
        return None
    import tomllib  # only when a file is there to parse

    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError):
        return None
