"""Validation commands suggested from what the manifests configure."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import PurePosixPath
from typing import Any

from tidegate.workspace.project.records import Manifest, Purpose, SuggestedCommand

_NPM_PLACEHOLDER = "no test specified"


def suggest(manifest: Manifest, files: set[str]) -> list[SuggestedCommand]:
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
        out += _package_json(d, cwd, files, make)
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
        out += _makefile(d, make)
    return out


Make = Callable[[str, Purpose, str, bool], SuggestedCommand]


def _package_json(
    d: Mapping[str, Any], cwd: str, files: set[str], make: Make
) -> list[SuggestedCommand]:
    """The scripts package.json defines, run by the package manager its lockfile names."""
    out: list[SuggestedCommand] = []
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
    return out


def _makefile(d: Mapping[str, Any], make: Make) -> list[SuggestedCommand]:
    """The Makefile's test, check and lint targets."""
    out: list[SuggestedCommand] = []
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


def dedupe(suggestions: list[SuggestedCommand]) -> list[SuggestedCommand]:
    seen: set[tuple[str, str]] = set()
    out: list[SuggestedCommand] = []
    for s in suggestions:
        key = (s.command, s.cwd)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out
