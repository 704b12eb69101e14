"""Project detection for ``project.detect``: what kind of project is this, and how is it
checked?

The scan goes through the workspace port (confined, ``.git`` and ignored paths skipped,
dependency directories such as ``node_modules`` not entered) and is bounded by depth and
entry count. The report never turns missing evidence into a claim of absence:

* a manifest is a regular *file* with a known name; a directory called ``package.json``
  is not one, and neither is a symlink (its target is reported where it lives, if inside);
* a manifest that does not parse is reported ``malformed`` with the parser's message, one
  that cannot be read (not UTF-8, too large) ``unreadable`` -- both still count as
  evidence that the project uses that ecosystem;
* a scan cut short by a limit says so (``complete: false`` and why), and names the
  directories it did not look into.

Suggested validation commands are data for the caller, derived only from what the
manifests configure (a ``[tool.pytest.ini_options]`` table, a ``test`` script, a ``go.mod``
...). ``runs_repository_script`` marks commands whose behaviour the repository itself
defines (npm scripts, make targets): those are executable repository code and need
approval or containment before they run.
"""

from __future__ import annotations

import configparser
import json
import re
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from tidegate.errors import TidegateError
from tidegate.workspace.fingerprint import DEFAULT_DERIVED
from tidegate.workspace.port import ListEntry, WorkspaceLimits, WorkspacePort

ManifestStatus = Literal["ok", "malformed", "unreadable"]
Purpose = Literal["test", "lint", "typecheck", "build"]

DEFAULT_MAX_DEPTH = 6
DEFAULT_MAX_ENTRIES = 20_000
MAX_MANIFEST_BYTES = 1_000_000
_PAGE = 1000
_SHOWN = 50

EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".rs": "rust",
    ".go": "go",
    ".java": "java",
    ".kt": "kotlin",
    ".rb": "ruby",
    ".php": "php",
    ".c": "c",
    ".h": "c",
    ".cc": "c++",
    ".cpp": "c++",
    ".hpp": "c++",
    ".cs": "c#",
    ".swift": "swift",
}


# -- the report ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Manifest:
    path: str
    kind: str
    """The manifest's file name (``pyproject.toml``, ``package.json`` ...)."""
    ecosystem: str
    status: ManifestStatus
    error: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "ecosystem": self.ecosystem,
            "status": self.status,
            "error": self.error,
            "details": dict(self.details),
        }


@dataclass(frozen=True)
class SuggestedCommand:
    command: str
    purpose: Purpose
    cwd: str
    """Directory (root-relative) the command is meant to run in."""
    source: str
    """The manifest (or file) whose configuration suggests it."""
    reason: str
    runs_repository_script: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "purpose": self.purpose,
            "cwd": self.cwd,
            "source": self.source,
            "reason": self.reason,
            "runs_repository_script": self.runs_repository_script,
        }


@dataclass(frozen=True)
class ProjectReport:
    root: str
    complete: bool
    incomplete_reasons: list[str]
    entries_examined: int
    manifests: list[Manifest]
    languages: dict[str, int]
    """Source files per language, counted by extension among regular files examined."""
    suggested_commands: list[SuggestedCommand]
    excluded: list[str]
    """What the traversal skipped (.git, ignored paths, dependency directories)."""
    excluded_total: int
    not_examined: list[str]
    """Directories at the depth limit, whose contents were not looked at."""
    scope: Mapping[str, Any]

    @property
    def validation_command(self) -> str | None:
        """The suggested test command for the root: one a tool's own configuration names
        (``pytest``, ``cargo test``) before one the repository scripts (``npm test``,
        ``make test``)."""
        tests = [s for s in self.suggested_commands if s.purpose == "test" and s.cwd == "."]
        tests.sort(key=lambda s: s.runs_repository_script)
        return tests[0].command if tests else None

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "complete": self.complete,
            "incomplete_reasons": list(self.incomplete_reasons),
            "entries_examined": self.entries_examined,
            "manifests": [m.to_json() for m in self.manifests],
            "manifests_paths": [m.path for m in self.manifests],
            "ecosystems": sorted({m.ecosystem for m in self.manifests}),
            "languages": dict(self.languages),
            "suggested_commands": [s.to_json() for s in self.suggested_commands],
            "validation_command": self.validation_command,
            "excluded": list(self.excluded),
            "excluded_total": self.excluded_total,
            "not_examined": list(self.not_examined),
            "scope": dict(self.scope),
        }


# -- detection -------------------------------------------------------------------------------


def detect_project(
    port_or_root: WorkspacePort | Path,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    include_ignored: bool = False,
) -> ProjectReport:
    """Scan the workspace and report manifests, languages and validation suggestions."""
    if isinstance(port_or_root, WorkspacePort):
        return _detect(port_or_root, max_depth, max_entries, include_ignored)
    with WorkspacePort(port_or_root, WorkspaceLimits(max_depth=max_depth)) as port:
        return _detect(port, max_depth, max_entries, include_ignored)


def _detect(
    port: WorkspacePort, max_depth: int, max_entries: int, include_ignored: bool
) -> ProjectReport:
    depth = min(max_depth, port.limits.max_depth)
    reasons: list[str] = []
    if depth < max_depth:
        reasons.append(f"depth capped at {depth} by the workspace limits")
    entries, excluded, excluded_total, cut = _scan(port, depth, max_entries, include_ignored)
    if cut:
        reasons.append(f"stopped after {max_entries} entries; later entries were not examined")
    files = {e.path for e in entries if e.kind == "file"}
    not_examined = sorted(
        e.path for e in entries if e.kind == "dir" and len(e.path.split("/")) >= depth
    )
    if not_examined:
        reasons.append(f"{len(not_examined)} directories at depth {depth} were not looked into")
    manifests = [
        _read_manifest(port, entry.path)
        for entry in entries
        if entry.kind == "file" and _manifest_kind(entry.path) is not None
    ]
    languages: dict[str, int] = {}
    for entry in entries:
        if entry.kind == "file":
            language = EXTENSIONS.get(PurePosixPath(entry.path).suffix.lower())
            if language is not None:
                languages[language] = languages.get(language, 0) + 1
    suggestions: list[SuggestedCommand] = []
    for manifest in manifests:
        if manifest.status == "ok":
            suggestions += _suggest(manifest, files)
    return ProjectReport(
        root=str(port.root),
        complete=not reasons,
        incomplete_reasons=reasons,
        entries_examined=len(entries),
        manifests=manifests,
        languages=dict(sorted(languages.items())),
        suggested_commands=_dedupe(suggestions),
        excluded=excluded,
        excluded_total=excluded_total,
        not_examined=not_examined[:_SHOWN],
        scope={
            "max_depth": depth,
            "max_entries": max_entries,
            "include_ignored": include_ignored,
            "not_entered": list(DEFAULT_DERIVED),
        },
    )


def _scan(
    port: WorkspacePort, depth: int, max_entries: int, include_ignored: bool
) -> tuple[list[ListEntry], list[str], int, bool]:
    """Page through a listing of the whole root; True when ``max_entries`` cut it short."""
    entries: list[ListEntry] = []
    excluded: list[str] = []
    excluded_total = 0
    cursor: str | None = None
    while True:
        page = port.list(
            ".",
            depth=depth,
            cursor=cursor,
            limit=min(_PAGE, max_entries - len(entries) + 1),
            include_ignored=include_ignored,
            exclude_names=DEFAULT_DERIVED,
        )
        entries += page.entries
        excluded_total += page.excluded_total
        excluded += [x for x in page.excluded if x not in excluded][: _SHOWN - len(excluded)]
        if len(entries) > max_entries:
            return entries[:max_entries], excluded, excluded_total, True
        if not page.truncated:
            return entries, excluded, excluded_total, False
        cursor = page.next_cursor


# -- manifests -------------------------------------------------------------------------------

Parser = Callable[[str], dict[str, Any]]


def _manifest_kind(path: str) -> str | None:
    name = path.rpartition("/")[2]
    return name if name in MANIFESTS else None


def _read_manifest(port: WorkspacePort, path: str) -> Manifest:
    kind = path.rpartition("/")[2]
    ecosystem, parse = MANIFESTS[kind]
    try:
        result = port.read(path, max_lines=port.limits.max_read_lines)
        if result.size > MAX_MANIFEST_BYTES or result.truncated:
            return Manifest(
                path,
                kind,
                ecosystem,
                "unreadable",
                f"too large to read whole ({result.size} bytes)",
            )
        text = result.content
    except TidegateError as exc:
        return Manifest(path, kind, ecosystem, "unreadable", str(exc))
    try:
        details = parse(text)
    except _Malformed as exc:
        return Manifest(path, kind, ecosystem, "malformed", str(exc))
    return Manifest(path, kind, ecosystem, "ok", None, details)


class _Malformed(ValueError):
    pass


def _toml(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _Malformed(f"TOML: {exc}") from None


def _json(text: str, *, comments: bool = False) -> dict[str, Any]:
    if comments:
        text = _strip_jsonc(text)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _Malformed(f"JSON: {exc}") from None
    if not isinstance(data, dict):
        raise _Malformed("JSON: the top level is not an object")
    return data


def _ini(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        raise _Malformed(f"INI: {exc.message}") from None
    return parser


def _pyproject(text: str) -> dict[str, Any]:
    data = _toml(text)
    project = data.get("project", {})
    tool = data.get("tool", {})
    if not isinstance(project, dict) or not isinstance(tool, dict):
        raise _Malformed("[project] and [tool] must be tables")
    deps = [str(d) for d in project.get("dependencies", []) if isinstance(d, str)]
    optional = project.get("optional-dependencies", {})
    if isinstance(optional, dict):
        for group in optional.values():
            if isinstance(group, list):
                deps += [str(d) for d in group]
    groups = data.get("dependency-groups", {})
    if isinstance(groups, dict):
        for group in groups.values():
            if isinstance(group, list):
                deps += [d for d in group if isinstance(d, str)]
    return {
        "name": project.get("name"),
        "requires_python": project.get("requires-python"),
        "build_backend": (data.get("build-system") or {}).get("build-backend"),
        "tools": sorted(tool),
        "pytest_configured": "pytest" in tool and "ini_options" in tool.get("pytest", {}),
        "declares_pytest": any(_dep_name(d) == "pytest" for d in deps),
    }


def _setup_cfg(text: str) -> dict[str, Any]:
    parser = _ini(text)
    return {
        "name": parser.get("metadata", "name", fallback=None),
        "sections": parser.sections(),
        "pytest_configured": parser.has_section("tool:pytest"),
    }


def _tox_ini(text: str) -> dict[str, Any]:
    parser = _ini(text)
    return {
        "envlist": parser.get("tox", "envlist", fallback=None),
        "pytest_configured": parser.has_section("pytest") or parser.has_section("tool:pytest"),
    }


def _pytest_ini(text: str) -> dict[str, Any]:
    parser = _ini(text)
    if not parser.has_section("pytest"):
        raise _Malformed("pytest.ini has no [pytest] section")
    return {"pytest_configured": True}


def _requirements(text: str) -> dict[str, Any]:
    names = [
        _dep_name(line)
        for line in (raw.split("#", 1)[0].strip() for raw in text.splitlines())
        if line and not line.startswith("-")
    ]
    return {"requirements": len(names), "declares_pytest": "pytest" in names}


def _package_json(text: str) -> dict[str, Any]:
    data = _json(text)
    scripts = data.get("scripts", {})
    if not isinstance(scripts, dict):
        raise _Malformed("'scripts' must be an object")
    deps: dict[str, Any] = {}
    for key in ("dependencies", "devDependencies"):
        block = data.get(key, {})
        if isinstance(block, dict):
            deps.update(block)
    return {
        "name": data.get("name"),
        "scripts": {str(k): str(v) for k, v in scripts.items()},
        "frameworks": sorted(
            name for name in ("jest", "vitest", "mocha", "eslint", "typescript") if name in deps
        ),
    }


def _cargo(text: str) -> dict[str, Any]:
    data = _toml(text)
    package = data.get("package", {})
    workspace = data.get("workspace", {})
    if not package and not workspace:
        raise _Malformed("Cargo.toml has neither [package] nor [workspace]")
    return {
        "name": package.get("name") if isinstance(package, dict) else None,
        "workspace_members": workspace.get("members", []) if isinstance(workspace, dict) else [],
    }


def _go_mod(text: str) -> dict[str, Any]:
    module = re.search(r"^module\s+(\S+)", text, re.MULTILINE)
    if module is None:
        raise _Malformed("go.mod has no module line")
    go = re.search(r"^go\s+(\S+)", text, re.MULTILINE)
    return {"module": module.group(1), "go": go.group(1) if go else None}


def _pom(text: str) -> dict[str, Any]:
    if "<!DOCTYPE" in text or "<!ENTITY" in text:
        raise _Malformed("XML with a DOCTYPE or entities is not parsed")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise _Malformed(f"XML: {exc}") from None
    ns = root.tag.partition("}")[0] + "}" if root.tag.startswith("{") else ""
    artifact = root.find(f"{ns}artifactId")
    return {"artifact_id": artifact.text if artifact is not None else None}


def _makefile(text: str) -> dict[str, Any]:
    targets = sorted(set(re.findall(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", text, re.MULTILINE)))
    return {"targets": targets}


def _present(text: str) -> dict[str, Any]:
    return {}


MANIFESTS: dict[str, tuple[str, Parser]] = {
    "pyproject.toml": ("python", _pyproject),
    "setup.cfg": ("python", _setup_cfg),
    "setup.py": ("python", _present),
    "requirements.txt": ("python", _requirements),
    "tox.ini": ("python", _tox_ini),
    "pytest.ini": ("python", _pytest_ini),
    "Pipfile": ("python", _toml),
    "package.json": ("node", _package_json),
    "tsconfig.json": ("node", lambda text: {"keys": sorted(_json(text, comments=True))}),
    "Cargo.toml": ("rust", _cargo),
    "go.mod": ("go", _go_mod),
    "pom.xml": ("java", _pom),
    "build.gradle": ("java", _present),
    "build.gradle.kts": ("kotlin", _present),
    "Gemfile": ("ruby", _present),
    "composer.json": ("php", lambda text: {"scripts": sorted(_json(text).get("scripts", {}))}),
    "CMakeLists.txt": ("c/c++", _present),
    "Makefile": ("make", _makefile),
}


# -- suggestions -----------------------------------------------------------------------------

_NPM_PLACEHOLDER = "no test specified"


def _suggest(manifest: Manifest, files: set[str]) -> list[SuggestedCommand]:
    d = manifest.details
    cwd = str(PurePosixPath(manifest.path).parent)
    src = manifest.path

    def make(command: str, purpose: Purpose, reason: str, script: bool = False) -> SuggestedCommand:
        return SuggestedCommand(command, purpose, cwd, src, reason, script)

    out: list[SuggestedCommand] = []
    kind = manifest.kind
    if kind in ("pyproject.toml", "setup.cfg", "tox.ini", "pytest.ini", "requirements.txt"):
        if d.get("pytest_configured"):
            out.append(make("pytest", "test", f"pytest is configured in {kind}"))
        elif d.get("declares_pytest"):
            out.append(make("pytest", "test", f"{kind} declares pytest"))
    if kind == "pyproject.toml":
        tools = d.get("tools", [])
        if "ruff" in tools:
            out.append(make("ruff check .", "lint", "[tool.ruff] in pyproject.toml"))
        if "mypy" in tools:
            out.append(make("mypy", "typecheck", "[tool.mypy] in pyproject.toml"))
    if kind == "tox.ini" and d.get("envlist"):
        out.append(make("tox", "test", "tox.ini defines environments", script=True))
    if kind == "package.json":
        runner = _node_runner(cwd, files)
        scripts = d.get("scripts", {})
        if "test" in scripts and _NPM_PLACEHOLDER not in scripts["test"]:
            out.append(make(f"{runner} test", "test", "package.json defines a test script", True))
        for name, purpose in (("lint", "lint"), ("typecheck", "typecheck"), ("build", "build")):
            if name in scripts:
                out.append(
                    make(
                        f"{runner} run {name}",
                        purpose,  # type: ignore[arg-type]
                        f"package.json defines a {name} script",
                        True,
                    )
                )
    if kind == "Cargo.toml":
        out.append(make("cargo test", "test", "Cargo.toml"))
    if kind == "go.mod":
        out.append(make("go test ./...", "test", "go.mod"))
        out.append(make("go vet ./...", "lint", "go.mod"))
    if kind == "pom.xml":
        out.append(make("mvn -q test", "test", "pom.xml"))
    if kind in ("build.gradle", "build.gradle.kts"):
        wrapper = str(PurePosixPath(cwd) / "gradlew") if cwd != "." else "gradlew"
        gradle = "./gradlew" if wrapper in files else "gradle"
        out.append(make(f"{gradle} test", "test", kind, script=gradle == "./gradlew"))
    if kind == "composer.json" and "test" in d.get("scripts", []):
        out.append(make("composer test", "test", "composer.json defines a test script", True))
    if kind == "Makefile":
        for target, purpose in (("test", "test"), ("check", "test"), ("lint", "lint")):
            if target in d.get("targets", []):
                out.append(
                    make(
                        f"make {target}",
                        purpose,  # type: ignore[arg-type]
                        f"the Makefile has a {target} target",
                        True,
                    )
                )
    return out


def _node_runner(cwd: str, files: set[str]) -> str:
    base = PurePosixPath(cwd)
    for lockfile, runner in (
        ("pnpm-lock.yaml", "pnpm"),
        ("yarn.lock", "yarn"),
        ("bun.lockb", "bun"),
    ):
        if str(base / lockfile) in files or (cwd == "." and lockfile in files):
            return runner
    return "npm"


def _dedupe(suggestions: list[SuggestedCommand]) -> list[SuggestedCommand]:
    seen: set[tuple[str, str]] = set()
    out: list[SuggestedCommand] = []
    for s in suggestions:
        key = (s.command, s.cwd)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


def _dep_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return match.group(1).lower().replace("_", "-") if match else ""


def _strip_jsonc(text: str) -> str:
    """JSON with comments and trailing commas (tsconfig.json) -> JSON."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        else:
            out.append(c)
        i += 1
    return re.sub(r",(\s*[}\]])", r"\1", "".join(out))
