"""The feedback parsers on live output: pytest, unittest, mypy, ruff and flake8 (all in the
virtualenv) run on small projects in temporary folders through tidegate's own runner, and
``diagnose`` turns what they print into diagnostics, a class and feedback."""

from __future__ import annotations

import shlex
import sys
import textwrap
from pathlib import Path

import pytest

from tidegate.errors import ErrorClass
from tidegate.exec.guard import Clearance
from tidegate.exec.runner import run_command, shell_argv
from tidegate.feedback.classify import diagnose
from tidegate.feedback.diagnostics import Diagnosis, Diagnostic

PY = shlex.quote(sys.executable)
PYTEST = f"{PY} -m pytest -p no:cacheprovider -p no:hypothesispytest"
MYPY = f"{PY} -m mypy --no-incremental --cache-dir=/dev/null --no-error-summary"
RUFF = f"{PY} -m ruff check --no-cache --isolated"
FLAKE8 = f"{PY} -m flake8 --isolated"

CALC = """\
def add(a, b):
    return a - b


def div(a, b):
    return a / b
"""
TESTS = """\
import pytest

import calc


def test_add():
    assert calc.add(2, 3) == 5


def test_div():
    assert calc.div(1, 0) == 0


def test_ok():
    assert calc.add(0, 0) == 0


class TestGroup:
    def test_inner(self):
        assert [1, 2] == [1, 3]


@pytest.mark.parametrize("x", [1, 2])
def test_param(x):
    assert x == 1


@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")


def test_uses(broken):
    pass
"""
PYTEST_IDS = [
    "test_calc.py::test_add",
    "test_calc.py::test_div",
    "test_calc.py::TestGroup::test_inner",
    "test_calc.py::test_param[2]",
    "test_calc.py::test_uses",
]


def write(root: Path, files: dict[str, str]) -> Path:
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(content))
    return root


def run(root: Path, command: str) -> Diagnosis:
    result = run_command(
        shell_argv(command),
        cwd=root,
        timeout_s=120,
        spill_dir=root.parent / f"{root.name}-spill",
        clearance=Clearance.user(),
    )
    assert not result.ok, result.combined_tail
    return diagnose(command, result, root=root)


def rows(diags: list[Diagnostic]) -> list[tuple[object, ...]]:
    return [(d.path, d.line, d.code, d.test_id, d.error_class) for d in diags]


@pytest.fixture(scope="module")
def calc_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("calc"), {"calc.py": CALC, "test_calc.py": TESTS})


# --- pytest -----------------------------------------------------------------------------


@pytest.mark.parametrize("verbosity", ["", "-q", "-v --tb=short"], ids=["default", "q", "v"])
def test_pytest_failures(calc_project: Path, verbosity: str) -> None:
    diag = run(calc_project, f"{PYTEST} {verbosity}")
    assert diag.error_class is ErrorClass.TEST
    assert diag.rule == "test"
    assert diag.tools == ["pytest"]
    assert sorted(diag.failing_tests) == sorted(PYTEST_IDS)
    by_id = {d.test_id: d for d in diag.diagnostics}
    assert rows([by_id[t] for t in PYTEST_IDS]) == [
        ("test_calc.py", 7, "AssertionError", PYTEST_IDS[0], ErrorClass.TEST),
        ("calc.py", 6, "ZeroDivisionError", PYTEST_IDS[1], ErrorClass.TEST),
        ("test_calc.py", 20, "AssertionError", PYTEST_IDS[2], ErrorClass.TEST),
        ("test_calc.py", 25, "AssertionError", PYTEST_IDS[3], ErrorClass.TEST),
        ("test_calc.py", 30, "RuntimeError", PYTEST_IDS[4], ErrorClass.TEST),
    ]
    # the exception was raised in calc.py, reached from the test's line
    assert by_id[PYTEST_IDS[1]].trace == (("test_calc.py", 11),)
    assert by_id[PYTEST_IDS[1]].message == "ZeroDivisionError: division by zero"
    assert by_id[PYTEST_IDS[0]].message == "assert -1 == 5"
    assert diag.summary.startswith("5 failing tests (pytest): ")
    assert set(diag.files_involved) == {"calc.py", "test_calc.py"}
    assert "calc.py:6: ZeroDivisionError: division by zero" in diag.locations


def test_pytest_feedback_names_tests_and_shows_the_failing_source(calc_project: Path) -> None:
    diag = run(calc_project, f"{PYTEST} -q")
    fb = diag.feedback
    assert fb.startswith("TEST: 5 failing tests (pytest)")
    for test_id in PYTEST_IDS:
        assert test_id in fb
    assert "calc.py:6: ZeroDivisionError: division by zero  (test test_calc.py::test_div)" in fb
    assert "   via test_calc.py:11" in fb
    assert ">  6 |     return a / b" in fb or "> 6 |     return a / b" in fb
    assert "test_ok" not in fb  # a passing test's source is not shown
    assert str(calc_project) not in fb
    assert "[100%]" not in fb and "=====" not in fb


def test_pytest_feedback_is_the_same_for_the_same_failure(calc_project: Path) -> None:
    """Durations and object addresses change between runs; the feedback must not, or the
    retry loop would take a repeated failure for a new one."""
    first = run(calc_project, f"{PYTEST} -q")
    second = run(calc_project, f"{PYTEST} -q")
    assert first.feedback == second.feedback
    assert "0x…" in first.feedback or " at 0x" not in first.feedback


def test_pytest_collection_syntax_error_is_compilation(tmp_path: Path) -> None:
    root = write(tmp_path / "p", {"test_broken.py": "import os\n\ndef test_x(:\n    pass\n"})
    diag = run(root, PYTEST)
    assert diag.error_class is ErrorClass.COMPILATION
    assert rows(diag.diagnostics) == [
        ("test_broken.py", 3, "SyntaxError", None, ErrorClass.COMPILATION)
    ]
    assert diag.failing_tests == []
    assert "> 3 | def test_x(:" in diag.feedback


def test_pytest_collection_missing_package_is_dependency(tmp_path: Path) -> None:
    root = write(
        tmp_path / "p", {"test_dep.py": "import nosuch_pkg_xyz\n\ndef test_x():\n    pass\n"}
    )
    diag = run(root, f"{PYTEST} -q")
    assert diag.error_class is ErrorClass.DEPENDENCY_ERROR
    assert diag.rule == "dependency"
    assert rows(diag.diagnostics) == [
        ("test_dep.py", 1, "ModuleNotFoundError", None, ErrorClass.DEPENDENCY_ERROR)
    ]
    assert diag.summary.startswith("missing dependency: ModuleNotFoundError: No module named")


def test_pytest_missing_module_of_the_project_itself_is_compilation(tmp_path: Path) -> None:
    """The project's own package exists, the module the code imports from it does not: the
    code is wrong, not the environment."""
    root = write(
        tmp_path / "p",
        {
            "mypkg/__init__.py": "",
            "mypkg/core.py": "X = 1\n",
            "test_imp.py": "from mypkg import helpers\n\ndef test_x():\n    pass\n",
        },
    )
    diag = run(root, f"{PYTEST} -q")
    assert diag.error_class is ErrorClass.COMPILATION
    assert [d.code for d in diag.diagnostics] == ["ImportError"]


def test_pytest_internal_error_is_unknown(tmp_path: Path) -> None:
    root = write(
        tmp_path / "p",
        {
            "conftest.py": "def pytest_collection_modifyitems(items):\n"
            "    raise RuntimeError('hook broke')\n",
            "test_a.py": "def test_a():\n    pass\n",
        },
    )
    diag = run(root, f"{PYTEST} -q")
    assert diag.error_class is ErrorClass.UNKNOWN
    assert diag.rule == "crash"
    assert diag.summary.startswith("the tool crashed: INTERNALERROR>")


# --- unittest ---------------------------------------------------------------------------


UNITTEST_FILES = {
    "pkg/__init__.py": "",
    "pkg/mathx.py": """\
        def mul(a, b):
            return a + b


        def boom():
            raise KeyError("k")
        """,
    "pkg/test_mathx.py": """\
        import unittest

        from pkg import mathx


        class MulTest(unittest.TestCase):
            def test_mul(self):
                self.assertEqual(mathx.mul(2, 3), 6)

            def test_boom(self):
                mathx.boom()

            def test_ok(self):
                self.assertTrue(True)

            def test_sub(self):
                for i in range(2):
                    with self.subTest(i=i):
                        self.assertEqual(i, 0)
        """,
}


def test_unittest_failures_and_errors(tmp_path: Path) -> None:
    root = write(tmp_path / "p", UNITTEST_FILES)
    diag = run(root, f"{PY} -m unittest discover -s . -t . -p 'test_*.py'")
    assert diag.error_class is ErrorClass.TEST
    assert diag.tools == ["unittest"]
    assert rows(diag.diagnostics) == [
        ("pkg/mathx.py", 6, "KeyError", "pkg.test_mathx.MulTest.test_boom", ErrorClass.TEST),
        (
            "pkg/test_mathx.py",
            8,
            "AssertionError",
            "pkg.test_mathx.MulTest.test_mul",
            ErrorClass.TEST,
        ),
        (
            "pkg/test_mathx.py",
            19,
            "AssertionError",
            "pkg.test_mathx.MulTest.test_sub (i=1)",
            ErrorClass.TEST,
        ),
    ]
    assert diag.diagnostics[0].trace == (("pkg/test_mathx.py", 11),)
    assert diag.diagnostics[1].message == "AssertionError: 5 != 6"
    assert "pkg/mathx.py:6: KeyError: 'k'" in diag.feedback


def test_unittest_module_that_cannot_import_a_package(tmp_path: Path) -> None:
    root = write(tmp_path / "p", {**UNITTEST_FILES, "pkg/test_imp.py": "import nosuch_xyz\n"})
    diag = run(root, f"{PY} -m unittest discover -s . -t . -p 'test_*.py'")
    assert diag.error_class is ErrorClass.DEPENDENCY_ERROR
    imp = [d for d in diag.diagnostics if d.code == "ModuleNotFoundError"]
    assert rows(imp) == [
        ("pkg/test_imp.py", 1, "ModuleNotFoundError", None, ErrorClass.DEPENDENCY_ERROR)
    ]


# --- mypy -------------------------------------------------------------------------------


TYPED = """\
from typing import List


def f(x: int) -> str:
    y: int = undefined_name
    return x


def g(a: List[int]) -> int:
    return a.nope
"""


@pytest.mark.parametrize("flags", ["", "--pretty --show-column-numbers"], ids=["plain", "pretty"])
def test_mypy_errors(tmp_path: Path, flags: str) -> None:
    root = write(tmp_path / "p", {"typed.py": TYPED})
    diag = run(root, f"{MYPY} {flags} typed.py")
    assert diag.error_class is ErrorClass.COMPILATION
    assert diag.tools == ["mypy"]
    assert [(d.path, d.line, d.code) for d in diag.diagnostics] == [
        ("typed.py", 5, "name-defined"),
        ("typed.py", 6, "return-value"),
        ("typed.py", 10, "attr-defined"),
    ]
    assert diag.diagnostics[0].message == 'Name "undefined_name" is not defined'
    if "column" in flags:
        assert diag.diagnostics[0].column == 14
    assert diag.summary == (
        '3 compile errors (mypy): Name "undefined_name" is not defined at typed.py:5'
    )


def test_mypy_missing_third_party_module_is_dependency(tmp_path: Path) -> None:
    root = write(tmp_path / "p", {"m.py": "import nosuch_dep_xyz\n", "local/__init__.py": ""})
    diag = run(root, f"{MYPY} m.py")
    assert [(d.code, d.error_class) for d in diag.diagnostics if d.severity == "error"] == [
        ("import-not-found", ErrorClass.DEPENDENCY_ERROR)
    ]
    assert diag.error_class is ErrorClass.DEPENDENCY_ERROR


# --- ruff -------------------------------------------------------------------------------


LINTY = """\
import os
import sys


def f(x):
    l = 1
    return x == None
"""


def test_ruff_default_full_output(tmp_path: Path) -> None:
    root = write(tmp_path / "p", {"linty.py": LINTY})
    diag = run(root, f"{RUFF} --select E,F linty.py")
    assert diag.error_class is ErrorClass.LINT
    assert [(d.path, d.line, d.column, d.code) for d in diag.diagnostics] == [
        ("linty.py", 1, 8, "F401"),
        ("linty.py", 2, 8, "F401"),
        ("linty.py", 6, 5, "E741"),
        ("linty.py", 6, 5, "F841"),
        ("linty.py", 7, 17, "E711"),
    ]
    assert diag.diagnostics[0].message == "`os` imported but unused"
    assert "> 7 |     return x == None" in diag.feedback


def test_ruff_concise_and_syntax_error(tmp_path: Path) -> None:
    root = write(tmp_path / "p", {"linty.py": LINTY, "syn.py": "def broken(:\n    pass\n"})
    diag = run(root, f"{RUFF} --select E,F --output-format concise linty.py syn.py")
    assert diag.error_class is ErrorClass.COMPILATION  # a file that does not parse wins
    syntax = [d for d in diag.diagnostics if d.error_class is ErrorClass.COMPILATION]
    assert [(d.path, d.line, d.code) for d in syntax] == [
        ("syn.py", 1, "invalid-syntax"),
        ("syn.py", 1, "invalid-syntax"),
    ]
    lint = [d for d in diag.diagnostics if d.error_class is ErrorClass.LINT]
    assert [(d.path, d.line, d.code) for d in lint] == [
        ("linty.py", 1, "F401"),
        ("linty.py", 2, "F401"),
        ("linty.py", 6, "E741"),
        ("linty.py", 6, "F841"),
        ("linty.py", 7, "E711"),
    ]


def test_ruff_format_check(tmp_path: Path) -> None:
    root = write(tmp_path / "p", {"fmt.py": "x=1\n"})
    diag = run(root, f"{PY} -m ruff format --check --isolated --no-cache fmt.py")
    assert diag.error_class is ErrorClass.LINT
    assert [(d.path, d.code) for d in diag.diagnostics] == [("fmt.py", "unformatted")]


# --- flake8 -----------------------------------------------------------------------------


def test_flake8_violations_collapse_repeats(tmp_path: Path) -> None:
    trailing = "".join(f"v{i} = {i}   \n" for i in range(12))
    root = write(tmp_path / "p", {"style.py": "import os\n" + trailing})
    diag = run(root, f"{FLAKE8} style.py")
    assert diag.error_class is ErrorClass.LINT
    assert diag.tools == ["flake8"]
    assert [(d.line, d.column, d.code) for d in diag.diagnostics[:2]] == [
        (1, 1, "F401"),
        (2, 7, "W291"),
    ]
    assert [d.code for d in diag.diagnostics].count("W291") == 12
    # twelve identical messages become one entry with a count and the other places
    assert diag.feedback.count("trailing whitespace") == 1
    assert "   12 times; also at style.py:3, style.py:4, style.py:5, +8 more" in diag.feedback


def test_flake8_syntax_error_is_compilation(tmp_path: Path) -> None:
    root = write(tmp_path / "p", {"syn.py": "def broken(:\n    pass\n"})
    diag = run(root, f"{FLAKE8} syn.py")
    assert rows(diag.diagnostics)[0][:3] == ("syn.py", 1, "E999")
    assert diag.error_class is ErrorClass.COMPILATION


# --- plain Python -----------------------------------------------------------------------


def test_script_syntax_error_is_compilation(tmp_path: Path) -> None:
    root = write(tmp_path / "p", {"tool.py": "x = 1\nif x\n    pass\n"})
    diag = run(root, f"{PY} tool.py")
    assert rows(diag.diagnostics) == [("tool.py", 2, "SyntaxError", None, ErrorClass.COMPILATION)]
    assert diag.error_class is ErrorClass.COMPILATION


def test_script_assertion_is_logic_with_its_location(tmp_path: Path) -> None:
    root = write(
        tmp_path / "p",
        {
            "check.py": "import lib\n\nlib.verify(3)\n",
            "lib.py": "def verify(n):\n    assert n % 2 == 0, f'{n} is odd'\n",
        },
    )
    diag = run(root, f"{PY} check.py")
    assert diag.error_class is ErrorClass.LOGIC
    assert diag.rule == "plain"
    assert rows(diag.diagnostics) == [("lib.py", 2, "AssertionError", None, ErrorClass.LOGIC)]
    assert diag.diagnostics[0].trace == (("check.py", 3),)
    assert diag.summary.endswith(": AssertionError: 3 is odd at lib.py:2")


def test_import_of_a_name_the_standard_library_lacks_is_compilation(tmp_path: Path) -> None:
    root = write(tmp_path / "p", {"old.py": "from collections import Mapping\n"})
    diag = run(root, f"{PY} old.py")
    assert diag.error_class is ErrorClass.COMPILATION
    assert diag.diagnostics[0].code == "ImportError"
