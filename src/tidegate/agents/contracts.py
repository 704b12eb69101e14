"""Agent flow contracts: how to launch, prepare, drive and recognise one agent CLI.

A contract is JSON shipped as package data and validated when loaded (unknown keys are
refused, every checkpoint list is non-empty where a flow needs it, placeholders are from a
fixed set). Placeholders in argv, env and file contents:

``{program}`` the resolved program; ``{home}`` the agent's private home (outside the
repository); ``{workdir}`` where it works; ``{model}``, ``{base_url}``, ``{key_env}`` its
model endpoint; ``{task}`` the task text (argv only).
"""

from __future__ import annotations

import json
import re
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tidegate.errors import UsageError

SCHEMA = "tidegate.agent-contract/1"
PLACEHOLDERS = frozenset({"program", "home", "workdir", "model", "base_url", "key_env", "task"})
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_FIELD = re.compile(r"\{([a-z_]+)\}")
AGENT_PATH_ENV = "TIDEGATE_AGENT_PATH"
"""Extra directories (``:``-separated) searched for agent programs before PATH."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_fields(text: str, allowed: frozenset[str] = PLACEHOLDERS) -> str:
    unknown = set(_FIELD.findall(text)) - allowed
    if unknown:
        raise ValueError(f"unknown placeholder(s) {sorted(unknown)}")
    return text


class VersionProbe(_Strict):
    argv: tuple[str, ...] = Field(min_length=1)
    expect: str = Field(min_length=1)


class ModelEndpoint(_Strict):
    default: str
    base_url_env: str
    base_url_default: str
    key_env: str


class PreparedFile(_Strict):
    path: str
    content: str

    @field_validator("path")
    @classmethod
    def _relative(cls, value: str) -> str:
        parts = Path(value).parts
        if Path(value).is_absolute() or ".." in parts or not parts:
            raise ValueError("a prepared file's path is relative to the agent home, without ..")
        return value


class Batch(_Strict):
    argv: tuple[str, ...] = Field(min_length=1)
    why_full_access: str


class Payload(_Strict):
    id: str = Field(pattern=r"^[a-z0-9-]+$")
    text: str = Field(min_length=1)


class Interactive(_Strict):
    argv: tuple[str, ...] = Field(min_length=1)
    startup: tuple[str, ...] = Field(min_length=1)
    """Ordered visible checkpoints before the payload may be sent (banner first)."""
    trust: tuple[str, ...] = ()
    submit_hotkey: tuple[str, ...] = ()
    wrapper_errors: tuple[str, ...] = ()
    noise: tuple[str, ...] = ()
    submit: str = Field(pattern=r"^text-enter$")
    payload: Payload
    completion: tuple[str, ...] = Field(min_length=1)
    exit: tuple[str, ...] = Field(min_length=1)
    restore: tuple[str, ...] = ()
    """Tracked files the agent is known to rewrite: restored to their pre-launch bytes."""


class AgentContract(_Strict):
    schema_: str = Field(alias="schema", pattern=r"^tidegate\.agent-contract/1$")
    name: str = Field(pattern=_NAME.pattern)
    description: str
    program: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    install: str
    version: VersionProbe
    model: ModelEndpoint
    env: dict[str, str] = {}
    files: tuple[PreparedFile, ...] = ()
    batch: Batch
    interactive: Interactive

    def model_post_init(self, _context: Any) -> None:
        for text in (
            *self.version.argv,
            *self.batch.argv,
            *self.interactive.argv,
            *self.env.values(),
            *(f.content for f in self.files),
            *(f.path for f in self.files),
        ):
            _check_fields(text)
        if "{task}" not in self.batch.argv:
            raise ValueError("batch.argv must pass {task}")
        if any("{task}" in a for a in self.interactive.argv):
            raise ValueError("interactive.argv takes no task: the payload is fixed")

    def find_program(self, search: str | None = None) -> str | None:
        """The program's real path (links resolved: a launcher link in HOME, where a
        contained command sees nothing, must not be what runs)."""
        import os

        extra = search if search is not None else os.environ.get(AGENT_PATH_ENV, "")
        for directory in [d for d in extra.split(":") if d]:
            candidate = Path(directory) / self.program
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return os.path.realpath(candidate)
        found = shutil.which(self.program)
        return os.path.realpath(found) if found else None


def _folder() -> Any:
    return resources.files("tidegate.agents") / "contracts"


def contract_names() -> list[str]:
    return sorted(e.name[:-5] for e in _folder().iterdir() if e.name.endswith(".json"))


def load_contract(name: str) -> AgentContract:
    if not _NAME.match(name):
        raise UsageError(f"agent name {name!r}: only lowercase letters, digits and hyphens")
    if name not in contract_names():
        raise UsageError(
            f"unknown agent {name!r}; shipped contracts: {', '.join(contract_names())}"
        )
    return parse_contract(json.loads((_folder() / f"{name}.json").read_text(encoding="utf-8")))


def parse_contract(raw: object) -> AgentContract:
    try:
        return AgentContract.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "contract"
        raise UsageError(f"agent contract: {where}: {first['msg']}") from exc


def expand(text: str, values: dict[str, str]) -> str:
    """Fill placeholders (one pass, so a value containing ``{x}`` is never expanded)."""
    return _FIELD.sub(lambda m: values.get(m.group(1), m.group(0)), text)
