"""Conformance 33: project detection ignores directory names that look like manifests or
source files, and discloses what the host's traversal excluded.

``package.json/``, ``Cargo.toml/`` and ``main.py/`` directories are not manifests or
source files; a symlink named like a manifest is not read as one. ``.git``, ignored paths
and dependency directories such as ``node_modules`` are skipped -- and listed as skipped.
"""

from __future__ import annotations

import os

from tests.conftest import Repo
from tidegate.workspace.project import detect_project


def test_directories_named_like_manifests_or_sources_are_not_evidence(repo: Repo) -> None:
    repo.write("package.json/readme.txt", "a directory, not a manifest\n")
    repo.write("Cargo.toml/notes.txt", "also a directory\n")
    repo.write("main.py/data.txt", "a directory named like a source file\n")
    repo.write("lib.rs/x.txt", "x\n")
    repo.write("README.md", "# project\n")
    repo.commit_all("decoys")
    os.symlink("README.md", repo.root / "go.mod")
    report = detect_project(repo.root)
    assert report.manifests == []
    assert report.languages == {}
    assert report.suggested_commands == []
    assert report.complete


def test_real_manifests_beside_decoys_are_found(repo: Repo) -> None:
    repo.write("package.json", '{"name": "app", "scripts": {"test": "vitest run"}}')
    repo.write("web/package.json/x.txt", "decoy\n")
    repo.write("src/index.ts", "export const x = 1;\n")
    repo.commit_all("app")
    report = detect_project(repo.root)
    assert [m.path for m in report.manifests] == ["package.json"]
    assert report.languages == {"typescript": 1}
    assert report.validation_command == "npm test"
    assert report.suggested_commands[0].runs_repository_script is True


def test_traversal_exclusions_are_disclosed(repo: Repo) -> None:
    repo.write(".gitignore", "generated/\n")
    repo.write("generated/package.json", '{"name": "ignored"}')
    repo.write("node_modules/dep/package.json", '{"name": "dep"}')
    repo.write("pyproject.toml", "[project]\nname = 'real'\n[tool.pytest.ini_options]\n")
    repo.commit_all("layout")
    repo.write("generated/package.json", '{"name": "ignored"}')
    report = detect_project(repo.root)
    assert [m.path for m in report.manifests] == ["pyproject.toml"]
    assert ".git/" in report.excluded
    assert "generated/ (ignored)" in report.excluded
    assert "node_modules/ (excluded by name)" in report.excluded
    assert report.to_json()["scope"]["include_ignored"] is False
    assert report.validation_command == "pytest"
    with_ignored = detect_project(repo.root, include_ignored=True)
    assert "generated/package.json" in [m.path for m in with_ignored.manifests]
