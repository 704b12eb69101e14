"""Gym scenarios and suites, shipped as package data and validated when loaded.

A scenario names its seed repository (files committed at T0, then the user's staged,
unstaged and untracked work), the objective, the verify command, its correctness checks,
the paths it asks to change (everything else is the user's and must come out byte for
byte), the identity, base type and mode, its default contestant, and the outcome it
expects. A crowd scenario lists lanes instead: one run each, all on the seed at once. ``{python}`` in commands is the interpreter running tidegate.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tidegate.errors import UsageError

_ID = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Seed(_Strict):
    files: dict[str, str]
    executable: tuple[str, ...] = ()
    staged: dict[str, str] = {}
    unstaged: dict[str, str] = {}
    untracked: dict[str, str] = {}


class Check(_Strict):
    name: str
    kind: Literal[
        "command", "file_contains", "file_lacks", "file_absent", "status", "finding_at",
        "active_goal",
    ]  # fmt: skip
    path: str | None = None
    text: str | None = None
    run: str | None = None
    status: str | None = None


class ConcurrentEdit(_Strict):
    """The user edits a file while the run is in ``phase`` (after T0 was taken)."""

    phase: str = "VERIFY"
    path: str
    content: str


class Lane(_Strict):
    """One of a crowd scenario's contestants: its run replaces ``replace`` in ``path``
    with ``with`` (the first occurrence). Lanes with the same ``path`` and ``replace``
    contend for the same lines: exactly one lands, the others conflict."""

    name: str = Field(pattern=_ID)
    path: str
    replace: str = Field(min_length=1)
    with_: str = Field(alias="with", min_length=1)

    @property
    def objective(self) -> str:
        return f"edit-file: {self.path}\nreplace: {self.replace}\nwith: {self.with_}\n"


class Scenario(_Strict):
    schema_: str = Field(alias="schema", pattern=r"^tidegate\.gym-scenario/1$")
    id: str = Field(pattern=_ID)
    title: str
    covers: str
    identity: str
    base_type: str
    mode: Literal["patch", "review", "debug", "composite-review"]
    seed: Seed
    objective: str
    verify: str | None = None
    contestant: str = "local-harness"
    max_attempts: int = Field(default=3, ge=1, le=10)
    checks: tuple[Check, ...] = Field(min_length=1)
    changes: tuple[str, ...] = ()
    """The paths the scenario asks to change; every other byte of user work must survive."""
    concurrent_edit: ConcurrentEdit | None = None
    crowd: tuple[Lane, ...] = Field(default=(), max_length=16)
    """A crowd scenario: one real ``tidegate run`` per lane, all at once (``gym.crowd``)."""


class Suite(_Strict):
    schema_: str = Field(alias="schema", pattern=r"^tidegate\.gym-suite/1$")
    id: str = Field(pattern=_ID)
    title: str
    scenarios: tuple[str, ...] = Field(min_length=1)


def _folder(kind: str) -> Any:
    return resources.files("tidegate.gym") / kind


def _load(kind: str, name: str, model: type[BaseModel]) -> Any:
    if not re.match(_ID, name):
        raise UsageError(f"{kind[:-1]} id {name!r}: only lowercase letters, digits and hyphens")
    entry = _folder(kind) / f"{name}.json"
    if not entry.is_file():
        raise UsageError(f"unknown {kind[:-1]} {name!r}; shipped: {', '.join(names(kind))}")
    try:
        return model.model_validate(json.loads(entry.read_text(encoding="utf-8")))
    except (ValueError, ValidationError) as exc:
        raise UsageError(f"{kind[:-1]} {name}: invalid: {exc}") from exc


def names(kind: str) -> list[str]:
    return sorted(e.name[:-5] for e in _folder(kind).iterdir() if e.name.endswith(".json"))


def load_scenario(name: str) -> Scenario:
    scenario: Scenario = _load("scenarios", name, Scenario)
    return scenario


def load_suite(name: str) -> Suite:
    suite: Suite = _load("suites", name, Suite)
    for scenario in suite.scenarios:
        load_scenario(scenario)
    return suite


def script_text(name: str) -> str:
    """A scripted contestant shipped beside the scenarios (``scenarios/<name>``)."""
    entry = _folder("scenarios") / name
    if "/" in name or not entry.is_file():
        raise UsageError(f"unknown shipped script {name!r}")
    return str(entry.read_text(encoding="utf-8"))
