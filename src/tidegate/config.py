"""Project configuration: ``[tool.tidegate]`` in ``pyproject.toml`` and ``.tidegate/config.toml``.

Two files, two authors. ``.tidegate/config.toml`` is the user's (local and untracked:
``.tidegate/`` is excluded from git); it sets the policy over the defaults. The
``[tool.tidegate]`` table of the committed ``pyproject.toml`` is the repository's, written
by whoever got a commit in, so it may tighten that policy, never loosen it (``tighten``,
one rule per key in ``TIGHTEN``)::

    [tool.tidegate.validate]          # in .tidegate/config.toml: [validate]
    max_files = 50                    # max_*: the repository may only lower them
    max_lines_added = 2000
    max_lines_removed = 2000
    max_bytes = 1048576
    allow_binary = false              # the repository may only set it false
    protected = [".github/workflows/**", ".env*"]  # the repository's globs are added
    comment_guard = true              # the repository may only set it true

    [tool.tidegate.containment]       # how VERIFY's command is confined
    mode = "auto"                     # "none" < "auto" < "required": it may only rise
    share = [".venv", "node_modules"] # ignored dirs visible read-only in the shadow
    env = ["JAVA_OPTS"]               # extra variables passed to commands (no secrets)
                                      # share, env: the repository may only leave out

    [tool.tidegate.shadow]            # mechanics: pool may only be turned off by the
    pool = false                      # repository; verify_layer it may set either way
    verify_layer = "auto"

    [tool.tidegate.tools]             # the model's workspace tools
    readable_secrets = [".env.test"]  # secret-shaped files the model may read anyway
                                      # (the repository may only leave out)

    [model]                           # only in .tidegate/config.toml: see
                                      # tidegate.models.settings

A setting the repository may not loosen is ignored, and ``LoadedConfig.ignored`` says so
in one line each (a run's report carries them as notes). A ``.tidegate/config.toml`` git
tracks came with the repository (an exclude keeps out untracked files only), so it counts
as the repository's; and it is read without following a link, at ``.tidegate`` or at the
file. Unknown keys are refused in either file, naming it, so a typo never silently
weakens a limit.

A run reads the policy once (``load_policy``), and no change a run proposes may touch
``.tidegate/`` or alter the ``[tool.tidegate]`` table (``policy_table_change`` is the
comparison the engine and the tool host share).
"""

from __future__ import annotations

import errno
import hashlib
import mmap
import os
import stat
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from msgspec import Meta, field

from tidegate.errors import GitError, UsageError
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


class TidegateConfig(Checked):
    validate_: ValidationConfig = field(default_factory=ValidationConfig, name="validate")
    shadow: ShadowConfig = field(default_factory=ShadowConfig)
    containment: ContainmentConfig = field(default_factory=ContainmentConfig)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    model: dict[str, Any] = field(default_factory=dict)
    """``--model`` settings (base URL, key variable, limits, retry, price); validated by
    ``tidegate.models.settings`` when a model is used. Only the user's file sets them."""


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
    ignored: tuple[str, ...] = ()
    """One line for each setting of the repository's that was not applied because it would
    have loosened the policy, and for a local file that was not read (a symlink...)."""


# -- the rule: a repository may tighten the policy, never loosen it -----------------------

WHY_IGNORED = (
    f"a repository may tighten tidegate's policy, never loosen it; set it in {CONFIG_LOCAL}"
)
WHY_MODEL = (
    "model settings are yours alone (a repository's could send your API key to another "
    f"server, or change what --max-cost counts); set it in {CONFIG_LOCAL}"
)

Outcome = tuple[Any, tuple[str, ...]]
"""The value in force, and what of the repository's value was ignored (`` = 'none'``,
`` entry 'JAVA_OPTS'``; empty: nothing)."""
Rule = Callable[[Any, Any], Outcome]
"""(the user's value, the repository's value) -> Outcome."""


def _shown(value: object) -> str:
    text = str(value).lower() if isinstance(value, bool) else repr(value)  # as TOML says it
    return text if len(text) <= 120 else text[:117] + "..."


def _lower(mine: int, theirs: int) -> Outcome:
    return (theirs, ()) if theirs <= mine else (mine, (f" = {_shown(theirs)}",))


def _stricter(*loosest_first: object) -> Rule:
    def rule(mine: object, theirs: object) -> Outcome:
        if loosest_first.index(theirs) >= loosest_first.index(mine):
            return theirs, ()
        return mine, (f" = {_shown(theirs)}",)

    return rule


def _union(mine: tuple[str, ...], theirs: tuple[str, ...]) -> Outcome:
    return mine + tuple(e for e in dict.fromkeys(theirs) if e not in mine), ()


def _narrow(mine: tuple[str, ...], theirs: tuple[str, ...]) -> Outcome:
    """Only entries the user's list has (compared as written): the repository's list can
    leave some out, not add any."""
    kept = tuple(e for e in mine if e in theirs)
    return kept, tuple(f" entry {_shown(e)}" for e in dict.fromkeys(theirs) if e not in mine)


def _either(mine: object, theirs: object) -> Outcome:
    return theirs, ()


def _users_only(mine: object, theirs: object) -> Outcome:
    return mine, (() if theirs == mine else (f" = {_shown(theirs)}",))


TIGHTEN: dict[str, Rule] = {
    "validate.max_files": _lower,
    "validate.max_lines_added": _lower,
    "validate.max_lines_removed": _lower,
    "validate.max_bytes": _lower,
    "validate.allow_binary": _stricter(True, False),
    "validate.protected": _union,
    "validate.comment_guard": _stricter(False, True),
    # Keeping a copy of the work tree (untracked files too) on disk between runs is the
    # user's decision; the repository may only keep it from happening.
    "shadow.pool": _stricter(True, False),
    # Mechanics, not policy: the change that APPLY_BACK writes is computed before VERIFY,
    # containment is the same either way, and an unlayered command only makes the next
    # cleaning a full one. The repository knows whether its build renames directories.
    "shadow.verify_layer": _either,
    "containment.mode": _stricter("none", "auto", "required"),
    "containment.share": _narrow,  # each share exposes more of the main tree
    "containment.env": _narrow,  # each variable is something a command can send away
    "tools.readable_secrets": _narrow,
    # A committed base URL or key variable would send the user's API key elsewhere; a
    # price or a limit sets what --max-cost enforces. Only the user's file sets them.
    "model": _users_only,
}
"""How a setting from the repository's ``[tool.tidegate]`` combines with the user's value
(the local file's, else the default), by dotted key; a nested key follows the nearest
enclosing one, and a key with no rule is the user's only."""


def _rule(path: tuple[str, ...]) -> Rule:
    for end in range(len(path), 0, -1):
        if (rule := TIGHTEN.get(".".join(path[:end]))) is not None:
            return rule
    return _users_only


def _leaves(table: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for key, value in table.items():
        path = (*prefix, key)
        if isinstance(value, Mapping):
            out += _leaves(value, path)  # an empty table sets nothing
        else:
            out.append(path)
    return out


_MISSING = object()


def _get(data: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(data, Mapping) or key not in data:
            return _MISSING
        data = data[key]
    return data


def _set(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        data = data[key]
    data[path[-1]] = value


def tighten(
    users: TidegateConfig, table: Mapping[str, Any], source: str
) -> tuple[TidegateConfig, tuple[str, ...]]:
    """``users`` with each setting of the repository's ``table`` that tightens it applied;
    one line for each one that would have loosened it, naming ``source``. UsageError when
    the table itself is not a valid configuration."""
    theirs = _validated(table, source).model_dump(by_alias=True)
    values = users.model_dump(by_alias=True)
    ignored: list[str] = []
    for path in _leaves(table):
        mine = _get(values, path)
        value, dropped = _rule(path)(mine, _get(theirs, path))
        if value is not mine and value is not _MISSING:
            _set(values, path, value)
        why = WHY_MODEL if path[0] == "model" else WHY_IGNORED
        ignored += [f"{source} {'.'.join(path)}{what} ignored: {why}" for what in dropped]
    return TidegateConfig.model_validate(values), tuple(ignored)


# -- reading the two files ------------------------------------------------------------------


def load_config(root: Path) -> TidegateConfig:
    """Read the repository's configuration (defaults when there is none)."""
    return load_policy(root).config


def load_policy(root: Path) -> LoadedConfig:
    """The configuration and the files it came from, each read exactly once.

    The user's file sets the policy over the defaults; each of the repository's tables
    (``pyproject.toml``'s, and a tracked ``.tidegate/config.toml``) then tightens it.
    UsageError, naming the file, for a file that cannot be read or a bad setting.

    A run calls this once, at bootstrap, on the user's work tree; nothing reads it again
    from a shadow or a candidate, so a change under test cannot alter its own policy."""
    sources: list[ConfigSource] = []
    ignored: list[str] = []
    repository: list[tuple[dict[str, Any], str]] = []
    users = TidegateConfig()
    pyproject = root / CONFIG_PYPROJECT
    if pyproject.is_file():
        data = _read_bytes(pyproject)
        section = _parse_toml(pyproject, data).get("tool", {}).get("tidegate")
        if section is not None:
            repository.append((_table(section, f"{pyproject} [tool.tidegate]"), PYPROJECT_TABLE))
            sources.append(ConfigSource(CONFIG_PYPROJECT, hashlib.sha256(data).hexdigest()))
    local = read_local(root)
    if local.problem is not None:
        ignored.append(local.problem)
    if local.data is not None:
        table = _table(_parse_toml(root / CONFIG_LOCAL, local.data), str(root / CONFIG_LOCAL))
        if _tracked(root):
            ignored.append(
                f"{CONFIG_LOCAL} is tracked by git: it came with the repository, so it may "
                "only tighten tidegate's policy (`git rm --cached` it to make it yours)"
            )
            repository.append((table, f"{CONFIG_LOCAL} (tracked)"))
        else:
            users = _validated(table, CONFIG_LOCAL)
        sources.append(ConfigSource(CONFIG_LOCAL, hashlib.sha256(local.data).hexdigest()))
    config = users
    for table, source in repository:
        config, dropped = tighten(config, table, source)
        ignored += dropped
    return LoadedConfig(config, tuple(sources), tuple(ignored))


def _validated(table: Mapping[str, Any], source: str) -> TidegateConfig:
    try:
        return TidegateConfig.model_validate(table)
    except CheckError as exc:
        raise UsageError(f"tidegate configuration ({source}): {exc}") from exc


def _table(section: Any, source: str) -> dict[str, Any]:
    if not isinstance(section, dict):
        raise UsageError(f"{source}: expected a table")
    return section


@dataclass(frozen=True)
class LocalFile:
    """``.tidegate/config.toml`` as ``load_policy`` reads it."""

    data: bytes | None
    """None: there is none, or it was not read (``problem`` says why)."""
    problem: str | None = None


def read_local(root: Path) -> LocalFile:
    """The user's file, opened without following a link at ``.tidegate`` or at
    ``config.toml``: a symlink, a FIFO or a device there is not read (and said so), since
    the link could lead to a file the repository wrote. UsageError when it cannot be read."""
    nofollow = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise UsageError(f"{root}: {exc.strerror}") from exc
    try:
        folder = _open_below(top, ".tidegate", nofollow | os.O_DIRECTORY)
        if isinstance(folder, LocalFile):
            return folder
        try:
            fd = _open_below(folder, "config.toml", nofollow | os.O_NONBLOCK)
        finally:
            os.close(folder)
        if isinstance(fd, LocalFile):
            return fd
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                return LocalFile(None, f"{CONFIG_LOCAL} is not a regular file: not read")
            return LocalFile(file.read())
    except OSError as exc:
        raise UsageError(f"{root / CONFIG_LOCAL}: {exc.strerror}") from exc
    finally:
        os.close(top)


def _open_below(parent: int, name: str, flags: int) -> int | LocalFile:
    """``name`` opened in the directory ``parent``, or the LocalFile that says why not."""
    try:
        return os.open(name, flags, dir_fd=parent)
    except FileNotFoundError:
        return LocalFile(None)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        if not stat.S_ISLNK(os.lstat(name, dir_fd=parent).st_mode):
            return LocalFile(None)  # a file named .tidegate: there is no local file
        if name == ".tidegate":
            return LocalFile(
                None, f".tidegate is a symlink: not followed, so {CONFIG_LOCAL} was not read"
            )
        return LocalFile(None, f"{CONFIG_LOCAL} is a symlink: not followed, so it was not read")


def _tracked(root: Path) -> bool:
    """Whether git tracks ``.tidegate/config.toml`` (a repository can commit it: an exclude
    keeps out untracked files only)."""
    if not _maybe_in_index(root):
        return False
    from tidegate.git import Git

    try:
        found = Git(root).run("ls-files", "-z", "--cached", "--", CONFIG_LOCAL, check=False)
    except GitError:
        return False
    return found.returncode == 0 and bool(found.stdout.strip(b"\0"))


def _maybe_in_index(root: Path) -> bool:
    """False only when the index of the work tree's own ``.git`` directory cannot hold
    ``.tidegate/config.toml``: a version 2 or 3 index, neither split nor sparse, stores each
    path whole and NUL-terminated, so a path absent from its bytes is not tracked. Saves a
    git process per read in the common case; anything else is for git to answer."""
    git_dir = root / ".git"
    try:
        with (
            open(git_dir / "index", "rb") as file,
            mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as index,
        ):
            if index[:4] != b"DIRC" or int.from_bytes(index[4:8], "big") not in (2, 3):
                return True
            if index.find(b"sdir") != -1 or any(
                name.startswith("sharedindex.") for name in os.listdir(git_dir)
            ):
                return True
            return index.find(CONFIG_LOCAL.encode() + b"\0") != -1
    except FileNotFoundError:
        return not git_dir.is_dir()  # a repository with no index yet tracks nothing
    except (OSError, ValueError):  # .git is a file (a linked worktree), an empty index...
        return True


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
    except RecursionError as exc:  # tomllib has no depth limit: a nesting bomb
        raise UsageError(f"{path}: invalid TOML: nested too deeply") from exc


def tidegate_table(data: bytes | None) -> dict[str, Any] | None:
    """The ``[tool.tidegate]`` table of a ``pyproject.toml``'s bytes, as ``load_policy``
    would read it (None: no file, or no table). ValueError when it cannot be parsed."""
    if data is None:
        return None
    try:
        parsed = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"not valid TOML ({exc})") from exc
    except RecursionError as exc:
        raise ValueError("not valid TOML (nested too deeply)") from exc
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
