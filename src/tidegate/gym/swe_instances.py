"""SWE-bench's public instance format read strictly (see ``tidegate.gym.swe``), and the
local mirror an instance's repository is cloned from."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec

from tidegate.errors import UsageError
from tidegate.gym.places import check_plain_name
from tidegate.text.jsonparse import parse_json


class Instance(msgspec.Struct, frozen=True):
    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    patch: str
    test_patch: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    requirements: tuple[str, ...] | None = None
    """tidegate's extension: what the gym installs into the instance's own venv."""


_KEPT = ("version", "environment_setup_commit", "environment", "test_cmd", "log_parser")
"""Kept as read: the public format's ``version`` and ``environment_setup_commit``, and
tidegate's extensions (``environment``, ``test_cmd``, ``log_parser``: see ``swe_env`` and
``swe_specs``)."""


def _requirements(value: Any, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(r, str) and r.strip() for r in value):
        raise UsageError(f"{where}: requirements must be a list of requirement strings")
    return tuple(value)


def _tests(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            value = parse_json(value)
        except ValueError as exc:
            raise UsageError(f"{where}: not a JSON list of test ids") from exc
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise UsageError(f"{where}: not a list of test ids")
    return tuple(value)


def load_instances(path: Path) -> list[Instance]:
    instances = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot be read as UTF-8 text") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path.name}:{number}"
        try:
            raw = parse_json(line)
        except ValueError as exc:
            raise UsageError(f"{where}: invalid JSON") from exc
        missing = [
            k
            for k in (
                "instance_id",
                "repo",
                "base_commit",
                "patch",
                "test_patch",
                "FAIL_TO_PASS",
                "PASS_TO_PASS",
            )
            if k not in raw
        ]
        if missing:
            raise UsageError(f"{where}: missing {', '.join(missing)}")
        if not re.fullmatch(r"[0-9a-f]{7,40}", str(raw["base_commit"])):
            raise UsageError(f"{where}: base_commit is not a commit id")
        instances.append(Instance(
            instance_id=check_plain_name(str(raw["instance_id"]), f"{where}: instance_id"),
            repo=str(raw["repo"]),
            base_commit=str(raw["base_commit"]), problem_statement=str(raw.get("problem_statement", "")),
            patch=str(raw["patch"]), test_patch=str(raw["test_patch"]),
            fail_to_pass=_tests(raw["FAIL_TO_PASS"], f"{where}: FAIL_TO_PASS"),
            pass_to_pass=_tests(raw["PASS_TO_PASS"], f"{where}: PASS_TO_PASS"),
            extra={k: raw[k] for k in _KEPT if k in raw},
            requirements=_requirements(raw.get("requirements"), where),
        ))  # fmt: skip
    return instances


def mirror(repos: Path, repo: str) -> Path:
    owner, _, name = repo.partition("/")
    for candidate in (repos / f"{owner}__{name}", repos / f"{owner}+{name}" / "repo"):
        if (candidate / ".git").exists() or (candidate / "HEAD").is_file():
            return candidate
    raise UsageError(f"no local clone of {repo} under {repos} (expected {owner}__{name})")
