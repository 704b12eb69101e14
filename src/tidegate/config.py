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

Both files are the user's policy: a run reads them once (``load_policy``), and no change a
run proposes may touch ``.tidegate/`` or alter the ``[tool.tidegate]`` table
(``policy_table_change`` is the comparison the engine and the tool host share).
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from tidegate.checked import Checked, CheckError, spec
from tidegate.errors import UsageError

CONFIG_PYPROJECT = "pyproject.toml"
"""The committed configuration file; its ``[tool.tidegate]`` table is tidegate's policy."""
CONFIG_LOCAL = ".tidegate/config.toml"
"""The local configuration file (``.tidegate/`` is excluded from git)."""

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

    max_files: int = spec(default=200, ge=1)
    max_lines_added: int = spec(default=10_000, ge=0)
    max_lines_removed: int = spec(default=10_000, ge=0)
    max_bytes: int = spec(default=5 * 1024 * 1024, ge=0)
    """Total size of the new content of every changed file."""
    allow_binary: bool = False
    protected: tuple[str, ...] = DEFAULT_PROTECTED
    """Globs (``*`` within a segment, ``**`` across segments) no change may touch."""
    comment_guard: bool = True
    """Refuse rewrites of existing comments unless the objective asks for comment changes."""


class ShadowConfig(Checked):
    pool: bool = False
    """Keep one warm shadow per work tree under the OS temp dir and reset it to each run's
    T0 instead of checking out a fresh worktree (fast on large repositories; the shadow,
    with copies of untracked files, stays on disk between runs)."""
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
    share: tuple[str, ...] = spec(default=DEFAULT_SHARED, check=_relative_paths)
    """Ignored directories of the main work tree made visible read-only in the shadow
    (relative paths), when they exist there and the shadow lacks them."""

    env: tuple[str, ...] = spec(default=(), check=_no_secrets)
    """Environment variables passed to commands besides the built-in allowlist
    (``tidegate.exec.environment``). Secret-shaped names are refused."""


class ToolsConfig(Checked):
    """The model's tools (see docs/tools.md)."""

    readable_secrets: tuple[str, ...] = ()
    """Secret-shaped files (``tidegate.workspace.secret_files``) the model's workspace
    tools may read anyway: globs over root-relative paths, or bare names."""


class TidegateConfig(Checked):
    validate_: ValidationConfig = spec(default_factory=ValidationConfig, key="validate")
    shadow: ShadowConfig = spec(default_factory=ShadowConfig)
    containment: ContainmentConfig = spec(default_factory=ContainmentConfig)
    tools: ToolsConfig = spec(default_factory=ToolsConfig)
    model: dict[str, Any] = spec(default_factory=dict)
    """``--model`` settings (base URL, key variable, limits, retry, price); validated by
    ``tidegate.models.settings`` when a model is used."""


@dataclass(frozen=True)
class ConfigSource:
    """One file the configuration was read from, and the SHA-256 of the bytes read."""

    path: str
    """Relative to the work tree: ``pyproject.toml`` or ``.tidegate/config.toml``."""
    sha256: str


@dataclass(frozen=True)
class LoadedConfig:
    config: TidegateConfig
    sources: tuple[ConfigSource, ...]


def load_config(root: Path) -> TidegateConfig:
    """Read the repository's configuration (defaults when there is none)."""
    return load_policy(root).config


def load_policy(root: Path) -> LoadedConfig:
    """The configuration and the files it came from, each read exactly once.

    A run calls this once, at bootstrap, on the user's work tree; nothing reads it again
    from a shadow or a candidate, so a change under test cannot alter its own policy."""
    merged: dict[str, Any] = {}
    sources: list[ConfigSource] = []
    pyproject = root / CONFIG_PYPROJECT
    if pyproject.is_file():
        data = _read_bytes(pyproject)
        section = _parse_toml(pyproject, data).get("tool", {}).get("tidegate")
        if section is not None:
            _merge(merged, section, f"{pyproject} [tool.tidegate]")
            sources.append(ConfigSource(CONFIG_PYPROJECT, hashlib.sha256(data).hexdigest()))
    local = root / CONFIG_LOCAL
    if local.is_file() and not local.is_symlink():
        data = _read_bytes(local)
        _merge(merged, _parse_toml(local, data), str(local))
        sources.append(ConfigSource(CONFIG_LOCAL, hashlib.sha256(data).hexdigest()))
    names = ", ".join(
        f"{s.path} [tool.tidegate]" if s.path == CONFIG_PYPROJECT else s.path for s in sources
    )
    try:
        return LoadedConfig(TidegateConfig.model_validate(merged), tuple(sources))
    except CheckError as exc:
        raise UsageError(f"tidegate configuration ({names}): {exc}") from exc


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from exc


def _parse_toml(path: Path, data: bytes) -> dict[str, Any]:
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: invalid TOML: {exc}") from exc


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


def tidegate_table(data: bytes | None) -> dict[str, Any] | None:
    """The ``[tool.tidegate]`` table of a ``pyproject.toml``'s bytes, as ``load_policy``
    would read it (None: no file, or no table). ValueError when it cannot be parsed."""
    if data is None:
        return None
    try:
        parsed = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"not valid TOML ({exc})") from exc
    tool = parsed.get("tool")
    if tool is None:
        return None
    if not isinstance(tool, dict):
        raise ValueError("its 'tool' key is not a table")
    table = tool.get("tidegate")
    if table is not None and not isinstance(table, dict):
        raise ValueError("its 'tool.tidegate' key is not a table")
    return table


def policy_table_change(old: bytes | None, new: bytes | None) -> str | None:
    """Why replacing ``pyproject.toml``'s ``old`` bytes with ``new`` alters tidegate's
    policy, or None when ``[tool.tidegate]`` parses to the same table on both sides.

    The rest of the file (dependencies, other tools' tables, comments, formatting) may
    change freely. A ``new`` side that cannot be parsed counts as a change: what the next
    run would read cannot be judged."""
    if old == new:
        return None
    try:
        before = tidegate_table(old)
    except ValueError:
        before = {"<unparseable>": True}
    try:
        after = tidegate_table(new)
    except ValueError as exc:
        return f"{CONFIG_PYPROJECT} would no longer parse ({exc}), so tidegate's policy in it cannot be checked"
    if before == after:
        return None
    return (
        f"{CONFIG_PYPROJECT}: the change alters [tool.tidegate], tidegate's own policy; "
        "only you may change it, outside a run"
    )
