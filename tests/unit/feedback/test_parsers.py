"""Each parser on real output captured from its tool (tests/fixtures/tool_output, see the
README there for versions and commands)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tidegate.errors import ErrorClass
from tidegate.feedback.classify import classify
from tidegate.feedback.diagnostics import Diagnostic, ParseContext
from tidegate.feedback.parsers import parse_output

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tool_output"
CAPTURE = Path("/tmp/tidegate-capture")


def load(name: str) -> tuple[str, int]:
    text = (FIXTURES / f"{name}.txt").read_text("utf-8")
    code = int((FIXTURES / f"{name}.exit").read_text().strip())
    return text, code


def parse(name: str, root: Path | None = None) -> tuple[list[Diagnostic], ErrorClass, str]:
    text, code = load(name)
    diags = parse_output(text, ParseContext(root=root, exit_code=code))
    cls, rule = classify(diags, exit_code=code, timed_out=False)
    return diags, cls, rule


def rows(diags: list[Diagnostic]) -> list[tuple[object, ...]]:
    return [(d.tool, d.path, d.line, d.column, d.code, d.test_id, d.error_class) for d in diags]


JEST = " \u203a "  # the separator jest prints between describe blocks and tests
C, T, L, D = (
    ErrorClass.COMPILATION,
    ErrorClass.TEST,
    ErrorClass.LINT,
    ErrorClass.DEPENDENCY_ERROR,
)


# --- tsc --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["tsc7_plain", "tsc7_pretty", "tsc5_plain", "tsc5_pretty"])
def test_tsc_plain_and_pretty(name: str) -> None:
    diags, cls, _ = parse(name, CAPTURE / "ts")
    assert rows(diags) == [
        ("tsc", "src/app.ts", 2, 3, "TS2322", None, C),
        ("tsc", "src/app.ts", 5, 7, "TS2322", None, C),
        ("tsc", "src/app.ts", 6, 19, "TS2345", None, C),
    ]
    assert diags[0].message == "Type 'number' is not assignable to type 'string'."
    assert cls is C


@pytest.mark.parametrize("name", ["tsc7_missing_module", "tsc5_missing_module"])
def test_tsc_missing_package_is_a_dependency_but_a_missing_local_file_is_not(name: str) -> None:
    diags, cls, rule = parse(name)
    assert rows(diags) == [
        ("tsc", "src/dep.ts", 1, 21, "TS2307", None, D),
        ("tsc", "src/dep.ts", 2, 24, "TS2307", None, C),
    ]
    assert (cls, rule) == (D, "dependency")


# --- eslint -----------------------------------------------------------------------------


def test_eslint_stylish_paths_made_relative_to_the_root() -> None:
    diags, cls, _ = parse("eslint_stylish", CAPTURE / "es")
    assert [(d.path, d.line, d.column, d.code, d.severity) for d in diags] == [
        ("src/a.js", 1, 7, "no-unused-vars", "error"),
        ("src/a.js", 3, 32, "no-undef", "error"),
        ("src/a.js", 4, 3, "no-undef", "error"),
        ("src/a.js", 4, 3, "no-console", "warning"),
        ("src/b.js", 1, 5, "no-unused-vars", "error"),
        ("src/b.js", 2, 1, "no-debugger", "error"),
    ]
    assert diags[1].message == "'y' is not defined"
    assert {d.error_class for d in diags} == {L}
    assert cls is L


def test_eslint_without_root_keeps_absolute_paths() -> None:
    diags, _, _ = parse("eslint_stylish")
    assert diags[0].path == "/tmp/tidegate-capture/es/src/a.js"
    assert not ParseContext.is_project(diags[0].path)


def test_eslint_parsing_error_is_compilation() -> None:
    diags, cls, _ = parse("eslint_parse_error", CAPTURE / "es")
    assert rows(diags) == [("eslint", "src/c.js", 1, 10, "parsing-error", None, C)]
    assert cls is C


# --- jest -------------------------------------------------------------------------------


def test_jest_failures() -> None:
    diags, cls, _ = parse("jest_failures", CAPTURE / "jest")
    assert rows(diags) == [
        (
            "jest",
            "src/sum.test.js",
            5,
            23,
            None,
            "src/sum.test.js::sum" + JEST + "adds two numbers",
            T,
        ),
        (
            "jest",
            "src/sum.js",
            5,
            30,
            None,
            JEST.join(["src/sum.test.js::sum", "nested", "throws on bad input"]),
            T,
        ),
    ]
    assert diags[0].message == "expect(received).toBe(expected) // Object.is equality"
    assert diags[0].detail == "Expected: 3\nReceived: -1"
    assert diags[1].message == "TypeError: JSON.parse(...).value.toUpperCase is not a function"
    assert diags[1].trace == (("src/sum.test.js", 12),)
    assert cls is T


def test_jest_suite_that_cannot_find_a_package() -> None:
    diags, cls, _ = parse("jest_missing_module", CAPTURE / "jest")
    assert rows(diags) == [("jest", "src/dep.test.js", 1, 12, "MODULE_NOT_FOUND", None, D)]
    assert diags[0].message == "Cannot find module 'left-pad-nope' from 'src/dep.test.js'"
    assert cls is D


def test_jest_suite_that_does_not_parse() -> None:
    diags, cls, _ = parse("jest_syntax_error", CAPTURE / "jest")
    assert rows(diags) == [("jest", "src/syntax.test.js", 2, 18, "SyntaxError", None, C)]
    assert diags[0].message.startswith("SyntaxError: src/syntax.test.js: Unexpected token")
    assert cls is C


# --- go ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["go_test_fail", "go_test_fail_verbose"])
def test_go_test_failures_default_and_verbose(name: str) -> None:
    diags, cls, _ = parse(name, CAPTURE / "go" / "calc")
    assert rows(diags) == [
        ("go", "calc_test.go", 7, None, None, "example.com/calc::TestAdd", T),
        ("go", "calc_test.go", 18, None, None, "example.com/calc::TestTable/neg", T),
        ("go", "calc_test.go", 26, None, None, "example.com/calc::TestPanic", T),
    ]
    assert diags[0].message == "Add(2, 3) = -1, want 5"
    assert diags[2].message == "panic: assignment to entry in nil map"
    assert cls is T


def test_go_test_log_paths_are_mapped_to_the_package_folder(tmp_path: Path) -> None:
    """Go prints test log locations relative to the package; with the module's go.mod at
    the root, they become relative to the root."""
    (tmp_path / "go.mod").write_text("module example.com\n\ngo 1.19\n")
    diags, _, _ = parse("go_test_fail", tmp_path)
    assert [(d.path, d.line) for d in diags[:2]] == [
        ("calc/calc_test.go", 7),
        ("calc/calc_test.go", 18),
    ]


@pytest.mark.parametrize("name", ["go_build_error", "go_test_build_error"])
def test_go_build_errors(name: str) -> None:
    diags, cls, _ = parse(name)
    assert rows(diags) == [
        ("go", "main.go", 5, 2, None, None, C),
        ("go", "main.go", 9, 14, None, None, C),
        ("go", "main.go", 10, 14, None, None, C),
    ]
    assert diags[2].message == "undefined: y"
    assert cls is C


@pytest.mark.parametrize("name", ["go_missing_module", "go_cannot_find_package"])
def test_go_missing_package(name: str) -> None:
    diags, cls, rule = parse(name)
    assert rows(diags) == [("go", "main.go", 3, 8, "missing-package", None, D)]
    assert (cls, rule) == (D, "dependency")


def test_go_missing_package_of_the_own_module_is_a_code_error(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module github.com/nobody\n")
    diags, cls, _ = parse("go_missing_module", tmp_path)
    assert [d.error_class for d in diags] == [C]
    assert cls is C


# --- cargo ------------------------------------------------------------------------------


def test_cargo_build_errors() -> None:
    diags, cls, _ = parse("cargo_build_error", CAPTURE / "rs" / "broken")
    assert rows(diags) == [
        ("cargo", "src/main.rs", 3, 20, "E0425", None, C),
        ("cargo", "src/main.rs", 2, 22, "E0308", None, C),
    ]
    assert diags[0].message == "cannot find value `totl` in this scope"
    assert cls is C


@pytest.mark.parametrize("name", ["cargo_test_fail", "cargo_test_fail_backtrace"])
def test_cargo_test_failures(name: str) -> None:
    diags, cls, _ = parse(name, CAPTURE / "rs" / "calc")
    assert rows(diags) == [
        ("cargo", "src/lib.rs", 15, 9, "panic", "tests::it_adds", T),
        ("cargo", "src/lib.rs", 6, 5, "panic", "tests::it_indexes", T),
    ]
    assert diags[0].message == "assertion `left == right` failed"
    assert diags[0].detail == "  left: -1\n right: 5"
    assert diags[1].message == "index out of bounds: the len is 0 but the index is 0"
    assert cls is T


def test_cargo_missing_crate() -> None:
    diags, cls, _ = parse("cargo_missing_crate")
    assert rows(diags) == [("cargo", "src/main.rs", 1, 1, "E0463", None, D)]
    assert cls is D


# --- dependencies and locks outside the test tools ------------------------------------------


def test_npm_ls_missing_dependency() -> None:
    diags, cls, _ = parse("npm_ls_missing")
    assert [(d.code, d.error_class) for d in diags] == [("missing-package", D)] * 2
    assert diags[1].message == "npm error missing: left-pad@^1.3.0, required by needs-deps@1.0.0"
    assert cls is D


def test_node_cannot_find_module() -> None:
    diags, cls, _ = parse("node_missing_module")
    assert [(d.code, d.message) for d in diags] == [
        ("MODULE_NOT_FOUND", "Error: Cannot find module 'left-pad'")
    ]
    assert cls is D


def test_dpkg_lock_is_resource_lock() -> None:
    diags, cls, rule = parse("apt_dpkg_lock")
    assert {d.code for d in diags} == {"lock"}
    assert diags[0].message.startswith("E: Could not get lock /var/lib/dpkg/lock-frontend.")
    assert (cls, rule) == (ErrorClass.RESOURCE_LOCK_ERROR, "lock")


def test_cargo_waiting_for_the_build_lock() -> None:
    """cargo only says it waits; the wait is the cause when the command then timed out
    (here `timeout` stopped it: exit 124) or reported nothing else."""
    diags, cls, rule = parse("cargo_lock_blocking")
    assert [(d.code, d.severity) for d in diags] == [("lock-wait", "warning")]
    assert (cls, rule) == (ErrorClass.RESOURCE_LOCK_ERROR, "lock-wait")
    assert classify(diags, exit_code=None, timed_out=True)[0] is ErrorClass.RESOURCE_LOCK_ERROR


def test_cargo_lock_wait_then_a_compile_error_is_the_compile_error() -> None:
    wait, _ = load("cargo_lock_blocking")
    build, _ = load("cargo_build_error")
    diags = parse_output(wait + build, ParseContext(exit_code=101))
    assert classify(diags, exit_code=101, timed_out=False) == (C, "compilation")
