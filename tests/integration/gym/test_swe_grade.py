"""The grading rules on logs (pure functions): the ones the issue found tidegate getting
wrong — XFAIL, truncated parametrized ids, non-Python files of a test patch, a log that
describes no run, a harness error — decided as the swebench package decides them."""

from __future__ import annotations

from tidegate.gym.swe_grade import (
    END,
    EXIT_CODE,
    START,
    harness_failure,
    read_log,
    resolution,
    split_tests,
)
from tidegate.gym.swe_instances import Instance
from tidegate.gym.swe_specs import pytest_section, spec_for


def _log(body: str, code: int = 1) -> str:
    return f"{START}\n{body}\n{END}\n{EXIT_CODE}: {code}\n"


def test_xfail_counts_as_a_pass_and_a_skipped_fail_to_pass_does_not() -> None:
    statuses = read_log(
        _log("XFAIL t.py::a - reason\nSKIPPED t.py::b\nPASSED t.py::c", 0), "pytest"
    )
    assert statuses is not None
    assert resolution(split_tests(statuses, ("t.py::a",), ("t.py::b", "t.py::c"))) == "resolved"
    assert resolution(split_tests(statuses, ("t.py::b",), ())) == "unresolved"


def test_truncated_parametrized_ids_prefix_match() -> None:
    log = _log(
        "PASSED t.py::test_x[log(photon)]\nPASSED t.py::test_x[log(photon2)]\nFAILED t.py::u", 1
    )
    statuses = read_log(log, "pytest")
    assert statuses is not None
    assert resolution(split_tests(statuses, ("t.py::test_x[log(photon",), ())) == "resolved"
    assert resolution(split_tests(statuses, ("t.py::test_x[nope",), ())) == "unresolved"


def test_partial_resolution() -> None:
    statuses = read_log(_log("PASSED t.py::a\nFAILED t.py::b\nPASSED t.py::c"), "pytest")
    assert statuses is not None
    assert (
        resolution(split_tests(statuses, ("t.py::a", "t.py::b"), ("t.py::c",)))
        == "partially resolved"
    )
    assert resolution(split_tests(statuses, ("t.py::a", "t.py::b"), ("t.py::b",))) == "unresolved"


def test_a_log_that_describes_no_run_is_not_graded() -> None:
    assert read_log("PASSED t.py::a\n", "pytest") is None  # no markers
    assert read_log(_log("nothing ran"), "pytest") is None
    # the log claims a pass, the runner exited non-zero with no failure: forged
    assert read_log(_log("PASSED t.py::a", code=2), "pytest") is None


def test_a_missing_environment_module_is_a_harness_error_not_a_verdict() -> None:
    log = _log(
        "ERROR t.py - ModuleNotFoundError: No module named 'flask'\nE   ModuleNotFoundError: No module named 'flask'"
    )
    statuses = read_log(log, "pytest")
    assert harness_failure(log, statuses, ("t.py::a",), frozenset()) is not None
    # a module the candidate's patch imports anew, or removed, is its doing: a verdict
    assert harness_failure(log, statuses, ("t.py::a",), frozenset({"flask"})) is None


def test_non_python_files_of_a_test_patch_are_not_handed_to_the_runner() -> None:
    patch = (
        "diff --git a/tests/static/config.toml b/tests/static/config.toml\n"
        "diff --git a/tests/test_config.py b/tests/test_config.py\n"
    )
    instance = Instance("i", "pallets/flask", "abc1234", "", "", patch, (), ())
    spec = spec_for(instance)
    assert spec.directives == ("tests/test_config.py",)
    assert spec.test_files == ("tests/static/config.toml", "tests/test_config.py")
    assert spec.test_cmd == "pytest -rA"
    django = spec_for(Instance("d", "django/django", "abc1234", "", "",
                                "diff --git a/tests/forms/tests.py b/tests/forms/tests.py\n", (), ()))  # fmt: skip
    assert django.directives == ("forms.tests",) and django.log_parser == "django"
    assert (
        spec_for(Instance("s", "sympy/sympy", "abc1234", "", "", "", (), ())).log_parser == "sympy"
    )


def test_sympy_and_django_logs() -> None:
    sympy = read_log(_log("test_a ok\ntest_b F\ntest_c E"), "sympy")
    assert sympy == {"test_a": "PASSED", "test_b": "FAILED", "test_c": "ERROR"}
    django = read_log(
        _log("test_x (m.C) ... ok\ntest_y (m.C) ... FAIL\ntest_z (m.C) ... skipped 'no'"), "django"
    )
    assert django == {"test_x (m.C)": "PASSED", "test_y (m.C)": "FAILED", "test_z (m.C)": "SKIPPED"}


def test_the_pytest_part_of_a_config_file() -> None:
    cfg = "[metadata]\nname = x\n[tool:pytest]\naddopts = -x\n[flake8]\nmax = 1\n"
    assert pytest_section(cfg, "setup.cfg") == "[tool:pytest]\naddopts = -x"
    toml = '[project]\nname = "x"\n[tool.pytest.ini_options]\naddopts = "-x"\n'
    assert pytest_section(toml, "pyproject.toml") == '[tool.pytest.ini_options]\naddopts = "-x"'
