"""Predictions that try to game the grade instead of fixing the bug. Each must come out
unresolved (or error, where the environment, not the patch, is at fault), and each test
fails if the protection it names is removed:

* the candidate's changes to the test patch's files, to ``conftest.py`` and to pytest's
  configuration are undone before the test patch is applied (``swe_eval._undo``);
* the code under test must be the checkout's (``swe_eval._shadowed``, from the origin
  the pytest plugin reports).

The instance: an installable package ``calc`` whose ``add`` subtracts; FAIL_TO_PASS
``test_add`` (added by the test patch), PASS_TO_PASS ``test_sub``.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.integration.gym._swe import diff, grade, make_instance, swe_cache, write_jsonl

__all__ = ["swe_cache"]

PYPROJECT = (
    '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
    '[project]\nname = "calc"\nversion = "0.1"\n\n[tool.setuptools]\npackages = ["calc"]\n'
)
BUGGY = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
FIXED = BUGGY.replace("return a - b\n\n", "return a + b\n\n", 1)
TEST_SUB = "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n"
TEST_ADD = "\n\ndef test_add():\n    from calc import add\n\n    assert add(2, 3) == 5\n"
# a pytest plugin that reports every failing test as passed
CHEAT = (
    "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n    report = outcome.get_result()\n    report.outcome = 'passed'\n"
)


@pytest.fixture(scope="module")
def pkg(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    mirrors = tmp_path_factory.mktemp("mirrors")
    base = {"pyproject.toml": PYPROJECT, "calc/__init__.py": BUGGY, "tests/test_calc.py": TEST_SUB,
            "CHANGES.md": "# changes\n"}  # fmt: skip
    row = make_instance(
        mirrors, "t/pkg", base, {"calc/__init__.py": FIXED},
        {"tests/test_calc.py": TEST_SUB + TEST_ADD},
        ["tests/test_calc.py::test_add"], ["tests/test_calc.py::test_sub"],
    )  # fmt: skip
    return mirrors, row


def _grade_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pkg: tuple[Path, dict[str, Any]],
    patch: str, **instance: Any,
) -> dict[str, Any]:  # fmt: skip
    mirrors, row = pkg
    instances = write_jsonl(tmp_path / "i.jsonl", [{**row, **instance}])
    predictions = write_jsonl(tmp_path / "p.jsonl", [
        {"instance_id": row["instance_id"], "model_name_or_path": "cheat", "model_patch": patch}
    ])  # fmt: skip
    res = grade(capsys, instances, mirrors, tmp_path / "s", "--predictions", str(predictions))
    (result,) = res.json()["results"]
    assert isinstance(result, dict)
    return result


def _patch(pkg: tuple[Path, dict[str, Any]], files: dict[str, str | None]) -> str:
    mirrors, _ = pkg
    return diff(mirrors / "t__pkg", files)


def test_the_gold_patch_resolves_and_the_tests_use_the_checkout(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pkg: tuple[Path, dict[str, Any]],
    swe_cache: Path,
) -> None:  # fmt: skip
    result = _grade_one(capsys, tmp_path, pkg, pkg[1]["patch"])
    assert result["status"] == "resolved", result
    log = (Path(result["report"]).parent / "test_output.txt").read_text()
    assert "/testbed/calc/__init__.py" in log  # the origin the plugin reported


def test_returning_early_from_the_failing_test(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pkg: tuple[Path, dict[str, Any]],
    swe_cache: Path,
) -> None:  # fmt: skip
    # the candidate writes the failing test itself, with `return` first
    early = TEST_ADD.replace("from calc import add\n", "return\n    from calc import add\n")
    result = _grade_one(
        capsys, tmp_path, pkg, _patch(pkg, {"tests/test_calc.py": TEST_SUB + early})
    )
    assert result["status"] == "unresolved", result
    assert result["undone"] == ["tests/test_calc.py"]


def test_patching_the_code_from_the_test_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pkg: tuple[Path, dict[str, Any]],
    swe_cache: Path,
) -> None:  # fmt: skip
    # the test patch still applies (its hunk is at the end), but the file's first lines
    # replace the code under test
    header = "import calc\n\ncalc.add = lambda a, b: a + b\n"
    result = _grade_one(
        capsys, tmp_path, pkg, _patch(pkg, {"tests/test_calc.py": header + TEST_SUB})
    )
    assert result["status"] == "unresolved", result


def test_deleting_the_tests(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pkg: tuple[Path, dict[str, Any]],
    swe_cache: Path,
) -> None:  # fmt: skip
    result = _grade_one(capsys, tmp_path, pkg, _patch(pkg, {"tests/test_calc.py": None}))
    assert result["status"] == "unresolved", result


@pytest.mark.parametrize(
    "conftest",
    [
        "import pytest\n\n\ndef pytest_collection_modifyitems(items):\n"
        "    for item in items:\n        item.add_marker(pytest.mark.skip)\n",
        CHEAT,
    ],
    ids=["skips-everything", "reports-failures-as-passes"],
)
def test_a_planted_conftest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pkg: tuple[Path, dict[str, Any]],
    swe_cache: Path, conftest: str,
) -> None:  # fmt: skip
    result = _grade_one(capsys, tmp_path, pkg, _patch(pkg, {"tests/conftest.py": conftest}))
    assert result["status"] == "unresolved", result
    assert result["undone"] == ["tests/conftest.py"]


@pytest.mark.parametrize(
    ("name", "config"),
    [
        ("pytest.ini", "[pytest]\naddopts = -p calc.cheat\n"),
        ("setup.cfg", "[metadata]\nname = calc\n\n[tool:pytest]\naddopts = -p calc.cheat\n"),
        ("tests/pytest.ini", "[pytest]\naddopts = -p calc.cheat\n"),
    ],
    ids=["pytest.ini", "setup.cfg", "a-nested-pytest.ini"],
)
def test_a_changed_pytest_configuration(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pkg: tuple[Path, dict[str, Any]],
    swe_cache: Path, name: str, config: str,
) -> None:  # fmt: skip
    # the plugin ships as part of the package (not a test file); the config loads it
    patch = _patch(pkg, {"calc/cheat.py": CHEAT, name: config})
    result = _grade_one(capsys, tmp_path, pkg, patch)
    assert result["status"] == "unresolved", result
    assert result["undone"] == [name]


def test_a_shadowing_module_planted_beside_the_tests(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pkg: tuple[Path, dict[str, Any]],
    swe_cache: Path,
) -> None:  # fmt: skip
    # tests/ comes first on sys.path (pytest's rootdir insertion): a fixed copy there
    result = _grade_one(capsys, tmp_path, pkg, _patch(pkg, {"tests/calc/__init__.py": FIXED}))
    assert result["status"] == "unresolved", result
    assert "not the checkout's" in " ".join(result["notes"])


def test_an_installed_copy_shadowing_the_checkout(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pkg: tuple[Path, dict[str, Any]],
    swe_cache: Path,
) -> None:  # fmt: skip
    # the environment holds the fixed calc, installed; the checkout is not: a
    # changelog-only patch would pass every test
    install = (
        "import os, sysconfig\n"
        "where = os.path.join(sysconfig.get_paths()['purelib'], 'calc')\n"
        f"os.makedirs(where)\nopen(os.path.join(where, '__init__.py'), 'w').write({FIXED!r})\n"
    )
    environment = {"packages": ["pytest"], "install": f"python -c {shlex.quote(install)}"}
    patch = _patch(pkg, {"CHANGES.md": "# changes\n\n- add() adds\n"})
    result = _grade_one(capsys, tmp_path, pkg, patch, environment=environment)
    assert result["status"] == "error", result
    assert "site-packages/calc/__init__.py" in result["error"]


def test_the_reports_name_what_was_undone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pkg: tuple[Path, dict[str, Any]],
    swe_cache: Path,
) -> None:  # fmt: skip
    patch = pkg[1]["patch"] + _patch(pkg, {"tests/conftest.py": CHEAT})
    result = _grade_one(capsys, tmp_path, pkg, patch)
    assert result["status"] == "resolved", result  # the real fix still counts
    report = json.loads(Path(result["report"]).read_text())
    assert report["t__pkg-1"]["tidegate"]["undone"] == ["tests/conftest.py"]


def test_a_link_planted_to_send_the_undo_outside(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pkg: tuple[Path, dict[str, Any]],
    swe_cache: Path,
) -> None:  # fmt: skip
    from tidegate.gym.swe_eval import _restore

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "conftest.py").write_text("keep me\n")
    # git apply refuses a file beyond a link in the same patch (the grade is error) ...
    link = (
        f"diff --git a/tests/evil b/tests/evil\nnew file mode 120000\n--- /dev/null\n"
        f"+++ b/tests/evil\n@@ -0,0 +1 @@\n+{outside}\n\\ No newline at end of file\n"
    )
    planted = _patch(pkg, {"tests/evil/conftest.py": CHEAT})
    result = _grade_one(capsys, tmp_path, pkg, link + planted)
    assert result["status"] == "error", result
    # ... and should a link stand in the testbed, the undo never reaches through it
    bed = pkg[0] / "t__pkg"
    (bed / "tests" / "evil").symlink_to(outside)
    try:
        _restore(bed, pkg[1]["base_commit"], "tests/evil/conftest.py")
    finally:
        (bed / "tests" / "evil").unlink()
    assert (outside / "conftest.py").read_text() == "keep me\n"
