"""Conformance 27: project discovery reports incomplete scans and malformed manifests
instead of treating missing evidence as proof of absence.

A manifest that does not parse is still reported (``malformed``, with the parser's
message) and still counts as evidence of its ecosystem; an unreadable one is reported
``unreadable``. A scan that hits its entry or depth limit says ``complete: false`` and
why, so a caller cannot read "no go.mod found" as "this is not a Go project".
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Repo
from tidegate.workspace.project import detect_project


def test_malformed_and_unreadable_manifests_are_reported(repo: Repo) -> None:
    repo.write("pyproject.toml", "[project\nname = 'broken'\n")
    repo.write("package.json", '{"name": "web", "scripts": {"test": "jest"},}')
    repo.write("go.mod", "go 1.22\n")  # no module line
    repo.write("services/api/Cargo.toml", b'[package]\nname = "caf\xe9"\n')  # not UTF-8
    repo.write("tests/test_x.py", "def test_x():\n    pass\n")
    repo.commit_all("broken manifests")
    report = detect_project(repo.root)
    by_path = {m.path: m for m in report.manifests}
    assert by_path["pyproject.toml"].status == "malformed"
    assert "TOML" in (by_path["pyproject.toml"].error or "")
    assert by_path["package.json"].status == "malformed"
    assert by_path["go.mod"].status == "malformed"
    assert by_path["services/api/Cargo.toml"].status == "unreadable"
    data = report.to_json()
    # Still evidence of these ecosystems; no validation invented from a broken manifest.
    assert set(data["ecosystems"]) == {"python", "node", "go", "rust"}
    assert data["suggested_commands"] == [] and data["validation_command"] is None
    assert data["complete"] is True


def test_an_entry_limit_makes_the_scan_incomplete(repo: Repo) -> None:
    for i in range(40):
        repo.write(f"a{i:02d}/x.py", "x = 1\n")
    repo.write("zz/go.mod", "module example.com/zz\n\ngo 1.22\n")  # after the cut
    repo.commit_all("many")
    cut = detect_project(repo.root, max_entries=30)
    assert cut.complete is False
    assert any("stopped after 30 entries" in r for r in cut.incomplete_reasons)
    assert "zz/go.mod" not in [m.path for m in cut.manifests]
    assert cut.to_json()["complete"] is False
    full = detect_project(repo.root)
    assert full.complete and "zz/go.mod" in [m.path for m in full.manifests]


def test_a_depth_limit_makes_the_scan_incomplete_and_names_what_it_skipped(
    tmp_path: Path,
) -> None:
    root = tmp_path / "plain"
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "a" / "b" / "c" / "pom.xml").write_text("<project><artifactId>x</artifactId></project>")
    shallow = detect_project(root, max_depth=2)
    assert not shallow.complete
    assert shallow.not_examined == ["a/b"]
    assert shallow.manifests == []
    deep = detect_project(root, max_depth=4)
    assert deep.complete
    assert [(m.path, m.status, dict(m.details)) for m in deep.manifests] == [
        ("a/b/c/pom.xml", "ok", {"artifact_id": "x"})
    ]
