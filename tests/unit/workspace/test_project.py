"""Manifest parsing and validation suggestions on real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from tidegate.workspace.project import detect_project


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root


def commands(root: Path) -> list[tuple[str, str, str, bool]]:
    return [
        (s.command, s.purpose, s.cwd, s.runs_repository_script)
        for s in detect_project(root).suggested_commands
    ]


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {"pyproject.toml": "[tool.pytest.ini_options]\n[tool.ruff]\n[tool.mypy]\n"},
            [("pytest", "test"), ("ruff check .", "lint"), ("mypy", "typecheck")],
        ),
        (
            {"pyproject.toml": "[project]\nname='x'\noptional-dependencies={dev=['pytest>=8']}\n"},
            [("pytest", "test")],
        ),
        ({"pyproject.toml": "[project]\nname = 'x'\n"}, []),
        (
            {"setup.cfg": "[metadata]\nname = x\n[tool:pytest]\naddopts = -q\n"},
            [("pytest", "test")],
        ),
        ({"requirements.txt": "# dev\nPyTest==8.0 ; python_version>'3'\n"}, [("pytest", "test")]),
        ({"pytest.ini": "[pytest]\n"}, [("pytest", "test")]),
        ({"tox.ini": "[tox]\nenvlist = py311\n"}, [("tox", "test")]),
        ({"Cargo.toml": "[package]\nname = 'x'\n"}, [("cargo test", "test")]),
        (
            {"go.mod": "module m\n\ngo 1.22\n"},
            [("go test ./...", "test"), ("go vet ./...", "lint")],
        ),
        ({"Makefile": "all:\n\ttrue\ntest: all\n\ttrue\nX := 1\n"}, [("make test", "test")]),
        (
            {
                "package.json": '{"scripts": {"test": "echo \\"Error: no test specified\\" && exit 1"}}'
            },
            [],
        ),
        (
            {"package.json": '{"scripts": {"test": "jest", "lint": "eslint ."}}', "yarn.lock": ""},
            [("yarn test", "test"), ("yarn run lint", "lint")],
        ),
        ({"build.gradle": "", "gradlew": "#!/bin/sh\n"}, [("./gradlew test", "test")]),
    ],
)
def test_suggestions_follow_configuration(
    tmp_path: Path, files: dict[str, str], expected: list[tuple[str, str]]
) -> None:
    root = write(tmp_path / "p", files)
    assert [(c, p) for c, p, _, _ in commands(root)] == expected


def test_nested_packages_get_their_own_cwd(tmp_path: Path) -> None:
    root = write(
        tmp_path / "mono",
        {
            "packages/web/package.json": '{"scripts": {"test": "vitest"}}',
            "packages/web/pnpm-lock.yaml": "",
            "services/api/go.mod": "module api\n",
        },
    )
    report = detect_project(root)
    assert [(s.command, s.cwd) for s in report.suggested_commands] == [
        ("pnpm test", "packages/web"),
        ("go test ./...", "services/api"),
        ("go vet ./...", "services/api"),
    ]
    assert report.validation_command is None  # nothing runs at the root


def test_tool_configured_tests_are_preferred_over_repository_scripts(tmp_path: Path) -> None:
    root = write(
        tmp_path / "p",
        {"Makefile": "test:\n\tpytest\n", "pyproject.toml": "[tool.pytest.ini_options]\n"},
    )
    assert detect_project(root).validation_command == "pytest"


def test_jsonc_and_xml_safety(tmp_path: Path) -> None:
    root = write(
        tmp_path / "p",
        {
            "tsconfig.json": '{\n  // comment\n  "compilerOptions": {"strict": true,},\n}\n',
            "pom.xml": '<!DOCTYPE x [<!ENTITY a "b">]><project>&a;</project>',
        },
    )
    by_path = {m.path: m for m in detect_project(root).manifests}
    assert by_path["tsconfig.json"].status == "ok"
    assert by_path["tsconfig.json"].details == {"keys": ["compilerOptions"]}
    assert by_path["pom.xml"].status == "malformed"


def test_json_report_shape(tmp_path: Path) -> None:
    root = write(tmp_path / "p", {"go.mod": "module m\n", "main.go": "package main\n"})
    data = detect_project(root).to_json()
    assert data["manifests_paths"] == ["go.mod"]
    assert data["languages"] == {"go": 1}
    assert data["validation_command"] == "go test ./..."
    assert data["complete"] is True and data["incomplete_reasons"] == []
