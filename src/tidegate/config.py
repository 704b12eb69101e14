"""Project configuration: ``[tool.tidegate]`` in ``pyproject.toml`` and ``.tidegate/config.toml``.

``.tidegate/config.toml`` (local, never committed: ``.tidegate/`` is excluded) overrides
``pyproject.toml`` key by key. Unknown keys are refused, naming the file, so a typo never
silently weakens a limit::

    [tool.tidegate.validate]          # in .tidegate/config.toml: [validate]
    max_files = 50
    max_lines_added = 2000
    max_lines_removed = 2000
    max_bytes = 1048576
    allow_binary = false
    protected = [".github/workflows/**", ".env*"]
    comment_guard = true

    [tool.tidegate.containment]       # how VERIFY's command is confined
    mode = "auto"                     # "auto" | "required" | "none"
    share = [".venv", "node_modules"] # ignored dirs visible read-only in the shadow
    env = ["JAVA_OPTS"]               # extra variables passed to commands (no secrets)

    [tool.tidegate.tools]             # the model's workspace tools
    readable_secrets = [".env.test"]  # secret-shaped files the model may read anyway
"""

from __future__ import annotations

import tomllib
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tidegate.errors import UsageError

DEFAULT_PROTECTED = (
    ".git/**",
    ".tidegate/**",
    ".github/workflows/**",
    ".gitlab-ci.yml",
    ".circleci/**",
    ".travis.yml",
    "azure-pipelines.yml",
    "Jenkinsfile",
    ".env",
    ".env.*",
    "**/.env",
    "**/.env.*",
)


class ValidationConfig(BaseModel):
    """Limits and path policy applied to every proposed change before it is applied."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_files: int = Field(default=200, ge=1)
    max_lines_added: int = Field(default=10_000, ge=0)
    max_lines_removed: int = Field(default=10_000, ge=0)
    max_bytes: int = Field(default=5 * 1024 * 1024, ge=0)
    """Total size of the new content of every changed file."""
    allow_binary: bool = False
    protected: tuple[str, ...] = DEFAULT_PROTECTED
    """Globs (``*`` within a segment, ``**`` across segments) no change may touch."""
    comment_guard: bool = True
    """Refuse rewrites of existing comments unless the objective asks for comment changes."""


class ShadowConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    pool: bool = False
    """Keep one warm shadow per work tree under the OS temp dir and reset it to each run's
    T0 instead of checking out a fresh worktree (fast on large repositories; the shadow,
    with copies of untracked files, stays on disk between runs)."""


DEFAULT_SHARED = (".venv", "node_modules")


class ContainmentConfig(BaseModel):
    """How VERIFY's command is contained (see docs/commands.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["auto", "required", "none"] = "auto"
    """auto: bubblewrap when its probe passes, else uncontained (and said so); required:
    refuse to run the command without it; none: never contain."""
    share: tuple[str, ...] = DEFAULT_SHARED
    """Ignored directories of the main work tree made visible read-only in the shadow
    (relative paths), when they exist there and the shadow lacks them."""

    env: tuple[str, ...] = ()
    """Environment variables passed to commands besides the built-in allowlist
    (``tidegate.exec.environment``). Secret-shaped names are refused."""

    @field_validator("env")
    @classmethod
    def _no_secrets(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from tidegate.exec.environment import never_passed

        for name in value:
            if never_passed(name):
                raise ValueError(f"{name!r} looks like a secret; commands never get it")
        return value

    @field_validator("share")
    @classmethod
    def _relative(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            parts = PurePosixPath(entry).parts
            if not parts or entry.startswith("/") or ".." in parts or parts[0] == ".git":
                raise ValueError(f"{entry!r} is not a relative path inside the work tree")
        return value


class ToolsConfig(BaseModel):
    """The model's tools (see docs/tools.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    readable_secrets: tuple[str, ...] = ()
    """Secret-shaped files (``tidegate.workspace.secret_files``) the model's workspace
    tools may read anyway: globs over root-relative paths, or bare names."""


class TidegateConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    validate_: ValidationConfig = Field(default_factory=ValidationConfig, alias="validate")
    shadow: ShadowConfig = Field(default_factory=ShadowConfig)
    containment: ContainmentConfig = Field(default_factory=ContainmentConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    model: dict[str, Any] = Field(default_factory=dict)
    """``--model`` settings (base URL, key variable, limits, retry, price); validated by
    ``tidegate.models.settings`` when a model is used."""


def load_config(root: Path) -> TidegateConfig:
    """Read the repository's configuration (defaults when there is none)."""
    merged: dict[str, Any] = {}
    sources: list[str] = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        section = _read_toml(pyproject).get("tool", {}).get("tidegate")
        if section is not None:
            _merge(merged, section, f"{pyproject} [tool.tidegate]")
            sources.append("pyproject.toml [tool.tidegate]")
    local = root / ".tidegate" / "config.toml"
    if local.is_file() and not local.is_symlink():
        _merge(merged, _read_toml(local), str(local))
        sources.append(".tidegate/config.toml")
    try:
        return TidegateConfig.model_validate(merged)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UsageError(
            f"tidegate configuration ({', '.join(sources)}): {where}: {first['msg']}"
        ) from exc


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML: {exc}") from exc
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from exc


def _merge(into: dict[str, Any], section: Any, source: str) -> None:
    if not isinstance(section, dict):
        raise UsageError(f"{source}: expected a table")
    for key, value in section.items():
        if isinstance(value, dict):
            target = into.setdefault(key, {})
            if not isinstance(target, dict):
                raise UsageError(f"{source}: {key} must be a table")
            _merge(target, value, source)
        else:
            into[key] = value
