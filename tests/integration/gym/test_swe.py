"""SWE-bench instances through the guarded engine: the shipped synthetic instances (on
mirrors built deterministically) with the oracle, a contestant that does not resolve one,
and the instance format's refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e._operator import op
from tidegate.gym.swe import outcomes, verify_command
from tidegate.gym.swe_instances import load_instances
from tidegate.gym.swe_synthetic import shipped_instances


@pytest.fixture(scope="module")
def mirrors(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tidegate.gym.swe_synthetic import build_mirrors

    directory = tmp_path_factory.mktemp("mirrors")
    build_mirrors(directory)
    return directory


def test_the_oracle_resolves_every_shipped_instance(
    capsys: pytest.CaptureFixture[str], mirrors: Path, tmp_path: Path
) -> None:
    res = op(
        capsys,
        "gym",
        "swe",
        str(shipped_instances()),
        "--repos",
        str(mirrors),
        "--oracle",
        "--state-root",
        str(tmp_path / "s"),
        "--allow-uncontained",
        "--json",
    )
    summary = res.json()
    assert res.code == 0, summary
    assert summary["resolve_rate"] == 1.0
    for result in summary["results"]:
        assert result["fail_to_pass_failed_before"] is True  # the harness check
        assert result["harness_ok"] is True
        assert all(result["fail_to_pass"].values()) and all(result["pass_to_pass"].values())


def test_a_contestant_that_does_not_fix_it_is_not_resolved(
    capsys: pytest.CaptureFixture[str], mirrors: Path, tmp_path: Path
) -> None:
    script = tmp_path / "wrong.json"
    script.write_text(json.dumps({"planner": "scripted", "attempts": [
        {"plan": "guess", "objective": "edit-file: calc.py\nreplace: return a - b\nwith: return a * b\n"}
    ]}))  # fmt: skip
    res = op(capsys, "gym", "swe", str(shipped_instances()), "--repos", str(mirrors), "--contestant", f"scripted:{script}",
             "--instance", "tidegate-gym__calc-1", "--state-root", str(tmp_path / "s"),
             "--allow-uncontained", "--json")  # fmt: skip
    summary = res.json()
    assert res.code == 1
    (result,) = summary["results"]
    assert result["status"] == "not-resolved"
    assert summary["resolve_rate"] == 0.0


def test_fail_to_pass_lists_may_be_json_strings(tmp_path: Path) -> None:
    instances = load_instances(shipped_instances())
    assert instances[0].fail_to_pass == ("test_add.py::test_add[2-3-5]",)  # was a JSON string


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("{not json", "invalid JSON"),
        ('{"instance_id": "x"}', "missing"),
        (
            '{"instance_id": "x", "repo": "a/b", "base_commit": "HEAD; rm -rf", "patch": "", "test_patch": "", "FAIL_TO_PASS": [], "PASS_TO_PASS": []}',
            "not a commit id",
        ),
        (
            '{"instance_id": "x", "repo": "a/b", "base_commit": "abc1234", "patch": "", "test_patch": "", "FAIL_TO_PASS": "nope", "PASS_TO_PASS": []}',
            "FAIL_TO_PASS",
        ),
    ],
)
def test_malformed_instances_are_refused_by_line(tmp_path: Path, line: str, why: str) -> None:
    from tidegate.errors import UsageError

    path = tmp_path / "i.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(UsageError, match=why):
        load_instances(path)


def test_test_ids_are_run_by_their_framework() -> None:
    assert "-m pytest" in verify_command("/py", ("a.py::t[1-2]",))
    assert "-m unittest -v pkg.mod.C.test_x" in verify_command("/py", ("test_x (pkg.mod.C)",))
    out = "PASSED a.py::t[1-2]\nFAILED a.py::u - assert\ntest_x (pkg.mod.C.test_x) ... ok\n"
    assert outcomes(out, ("a.py::t[1-2]", "a.py::u", "test_x (pkg.mod.C)")) == {
        "a.py::t[1-2]": True, "a.py::u": False, "test_x (pkg.mod.C)": True,
    }  # fmt: skip


def test_sympy_style_names_and_an_instance_venv(
    capsys: pytest.CaptureFixture[str],
    mirrors: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    rows = [json.loads(line) for line in shipped_instances().read_text().splitlines()]
    calc, strings = rows
    calc = dict(
        calc, instance_id="bare-names", FAIL_TO_PASS=["test_add"], PASS_TO_PASS=["test_mul"]
    )
    calc["test_patch"] = calc["test_patch"]  # adds test_add.py; test_mul lives in test_mul.py
    calc["PASS_TO_PASS"] = []
    strings = dict(strings, instance_id="own-venv", requirements=[])
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (calc, strings)))
    res = op(
        capsys,
        "gym",
        "swe",
        str(path),
        "--repos",
        str(mirrors),
        "--oracle",
        "--state-root",
        str(tmp_path / "s"),
        "--allow-uncontained",
        "--json",
    )
    summary = res.json()
    assert res.code == 0, summary
    by_id = {r["instance_id"]: r for r in summary["results"]}
    assert by_id["bare-names"]["fail_to_pass"] == {"test_add": True}
    assert by_id["bare-names"]["fail_to_pass_failed_before"] is True
    venv_python = by_id["own-venv"]["python"]
    # built in the cache, outside the state root that contained tests never see
    assert venv_python.startswith(str(tmp_path / "cache" / "tidegate" / "swe-venvs"))
    assert Path(venv_python).exists()


def test_bare_names_run_over_the_test_patch_files() -> None:
    from tidegate.gym.swe import test_files

    files = test_files("--- /dev/null\n+++ b/tests/test_a.py\n@@ -0,0 +1 @@\n+x\n")
    assert files == ("tests/test_a.py",)
    command = verify_command("/py", ("test_one", "test_two"), files)
    assert "tests/test_a.py -k 'test_one or test_two'" in command
    assert outcomes("PASSED tests/test_a.py::test_one\n", ("test_one", "test_two")) == {
        "test_one": True, "test_two": False,
    }  # fmt: skip
