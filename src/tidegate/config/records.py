"""What the configuration is: its sections as checked records, their defaults, and what
``load_policy`` returns."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from tidegate.errors import UsageError
from tidegate.records.checked import Checked, CheckError, check

CONFIG_PYPROJECT = "pyproject.toml"
"""The committed configuration file; its ``[tool.tidegate]`` table may tighten the policy."""
CONFIG_LOCAL = ".tidegate/config.toml"
"""The local configuration file (``.tidegate/`` is excluded from git)."""
PYPROJECT_TABLE = f"{CONFIG_PYPROJECT} [tool.tidegate]"

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


class ValidationConfig(Checked):
    """Limits and path policy applied to every proposed change before it is applied."""

    max_files: Annotated[int, Meta(ge=1)] = 200
    max_lines_added: Annotated[int, Meta(ge=0)] = 10_000
    max_lines_removed: Annotated[int, Meta(ge=0)] = 10_000
    max_bytes: Annotated[int, Meta(ge=0)] = 5 * 1024 * 1024
    """Total size of the new content of every changed file."""
    allow_binary: bool = False
    protected: tuple[str, ...] = DEFAULT_PROTECTED
    """Globs (``*`` within a segment, ``**`` across segments) no change may touch."""
    comment_guard: bool = True
    """Refuse rewrites of existing comments unless the objective asks for comment changes."""


class ShadowConfig(Checked):
    pool: bool = False
    """Keep warm shadows of the work tree under the OS temp dir and reset one to each run's
    T0 instead of checking out a fresh worktree (fast on large repositories; each shadow,
    with copies of untracked files, stays on disk between runs). One per run using the
    pool at the same moment, at most 8 (``workspace.lock.POOL_SLOTS``)."""
    verify_layer: Literal["auto", "off"] = "auto"
    """auto: VERIFY's command writes into a throwaway overlay over the shadow where the
    host supports one, so the shadow keeps only what APPLY wrote and is undone by those
    paths; off: the command writes the shadow itself (for a command that renames a
    directory the shadow has: in the overlay that rename fails with EXDEV)."""


DEFAULT_SHARED = (".venv", "node_modules")


def _no_secrets(names: tuple[str, ...]) -> None:
    from tidegate.exec.environment import never_passed

    for name in names:
        if never_passed(name):
            raise ValueError(f"{name!r} looks like a secret; commands never get it")


def _relative_paths(entries: tuple[str, ...]) -> None:
    for entry in entries:
        parts = PurePosixPath(entry).parts
        if not parts or entry.startswith("/") or ".." in parts or parts[0] == ".git":
            raise ValueError(f"{entry!r} is not a relative path inside the work tree")


class ContainmentConfig(Checked):
    """How VERIFY's command is contained (see docs/commands.md)."""

    mode: Literal["auto", "required", "none"] = "auto"
    """auto: bubblewrap when its probe passes, else uncontained (and said so); required:
    refuse to run the command without it; none: never contain."""
    share: Annotated[tuple[str, ...], check(_relative_paths)] = DEFAULT_SHARED
    """Ignored directories of the main work tree made visible read-only in the shadow
    (relative paths), when they exist there and the shadow lacks them."""

    env: Annotated[tuple[str, ...], check(_no_secrets)] = ()
    """Environment variables passed to commands besides the built-in allowlist
    (``tidegate.exec.environment``). Secret-shaped names are refused."""


class ToolsConfig(Checked):
    """The model's tools (see docs/tools.md)."""

    readable_secrets: tuple[str, ...] = ()
    """Secret-shaped files (``tidegate.workspace.secret_files``) the model's workspace
    tools may read anyway: globs over root-relative paths, or bare names."""


class RunConfig(Checked):
    """Defaults for ``tidegate run``, ``review`` and ``debug``."""

    verify: str | None = None
    """The verify command when the command line gives no ``--verify``. The user's file
    sets it as the user's own command; a repository's ``[tool.tidegate.run]`` may name one
    too, which then runs as a command the repository chose (contained, or uncontained only
    with the user's approval) and never overrides the user's."""
    verify_timeout: Annotated[float, Meta(ge=1)] | None = None
    """Seconds before VERIFY is killed when the command line gives no ``--verify-timeout``
    (None: ``tidegate.records.modes.DEFAULT_VERIFY_TIMEOUT_S``)."""


class RetentionConfig(Checked):
    """What tidegate keeps of past runs (``tidegate gc``, and the end of every run)."""

    runs: Annotated[int, Meta(ge=1)] = 50
    """The newest runs whose objects stay in ``refs/tidegate/keep`` (their change can be
    applied, undone, read); a held, paused or live run is kept whatever its age."""
    undo_max_days: Annotated[float, Meta(ge=0)] = 14.0
    """Days the tool host's replaced bytes are kept for ``undo --call/--session``."""
    undo_max_bytes: Annotated[int, Meta(ge=0)] = 256 * 1024 * 1024
    """Bytes those may take, the oldest sessions dropped first."""


class TidegateConfig(Checked):
    run: RunConfig = msgspec.field(default_factory=RunConfig)
    validate_: ValidationConfig = msgspec.field(default_factory=ValidationConfig, name="validate")
    shadow: ShadowConfig = msgspec.field(default_factory=ShadowConfig)
    containment: ContainmentConfig = msgspec.field(default_factory=ContainmentConfig)
    tools: ToolsConfig = msgspec.field(default_factory=ToolsConfig)
    retention: RetentionConfig = msgspec.field(default_factory=RetentionConfig)
    model: dict[str, Any] = msgspec.field(default_factory=dict)
    """``--model`` settings (base URL, key variable, limits, retry, price); validated by
    ``tidegate.models.settings`` when a model is used. Only the user's file sets them."""


class ConfigSource(msgspec.Struct, frozen=True):
    """One file the configuration was read from, and the SHA-256 of the bytes read."""

    path: str
    """Relative to the work tree: ``pyproject.toml`` or ``.tidegate/config.toml``."""
    sha256: str


class LoadedConfig(msgspec.Struct, frozen=True):
    config: TidegateConfig
    sources: tuple[ConfigSource, ...]
    ignored: tuple[str, ...] = ()
    """One line for each setting of the repository's that was not applied because it would
    have loosened the policy, and for a local file that was not read (a symlink...)."""
    repository_verify: tuple[str, str] | None = None
    """The verify command a repository's table names (``[run] verify``), and which table:
    a command the repository chose, never folded into ``config``."""


def validated(table: Mapping[str, Any], source: str) -> TidegateConfig:
    try:
        return TidegateConfig.model_validate(table)
    except CheckError as exc:
        raise UsageError(f"tidegate configuration ({source}): {exc}") from exc
