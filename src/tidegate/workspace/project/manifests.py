"""Manifests: which file names are one, and what each configures (parsed, or why not)."""

from __future__ import annotations

import configparser
import json
import re
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

from tidegate.errors import TidegateError
from tidegate.workspace.port import WorkspacePort
from tidegate.workspace.project.records import Manifest

MAX_MANIFEST_BYTES = 1_000_000

Parser = Callable[[str], dict[str, Any]]


def manifest_kind(path: str) -> str | None:
    name = path.rpartition("/")[2]
    return name if name in MANIFESTS else None


def read_manifest(port: WorkspacePort, path: str) -> Manifest:
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
