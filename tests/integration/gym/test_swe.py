"""SWE-bench instances graded the way SWE-bench grades: the shipped synthetic instances
with the oracle, official predictions files in and reports out, a contestant's patch, the
statuses (partially resolved, empty patch, error) and the instance format's refusals."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from tests.integration.gym._swe import calc_instance, diff, grade, swe_cache, write_jsonl
from tidegate.gym.swe_instances import load_instances
from tidegate.gym.swe_synthetic import shipped_instances

__all__ = ["swe_cache"]


@pytest.fixture(scope="module")
def mirrors(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tidegate.gym.swe_synthetic import build_mirrors

    directory = tmp_path_factory.mktemp("mirrors")
    build_mirrors(directory)
    return directory


def test_the_oracle_resolves_every_shipped_instance_and_writes_reports(
    capsys: pytest.CaptureFixture[str],
    mirrors: Path,
    tmp_path: Path,
    swe_cache: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    res = grade(capsys, shipped_instances(), mirrors, tmp_path / "s", "--oracle", "--run-id", "r1")
    # the benchmark commands' spilled output is read and removed, not left in the temp dir
    assert not list(temp.glob("tidegate-swe-out-*"))
    summary = res.json()
    assert res.code == 0, summary
    assert summary["resolve_rate"] == 1.0 and summary["resolved_instances"] == 2
    run = tmp_path / "s" / "gym" / "swe" / "r1"
    on_disk = json.loads((run / "summary.json").read_text())
    assert on_disk["resolved_ids"] == ["tidegate-gym__calc-1", "tidegate-gym__strings-1"]
    for result in summary["results"]:
        where = run / "gold" / result["instance_id"]
        report = json.loads((where / "report.json").read_text())[result["instance_id"]]
        assert report["resolved"] is True and report["patch_successfully_applied"] is True
        assert report["tests_status"]["FAIL_TO_PASS"]["failure"] == []
        assert ">>>>> Start Test Output" in (where / "test_output.txt").read_text()
        # built by the gym, in the cache: never tidegate's own interpreter
        assert result["python"].startswith(str(swe_cache))
    predictions = [
        json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines()
    ]
    assert {p["model_name_or_path"] for p in predictions} == {"gold"}


def test_each_instance_is_shown_as_it_is_graded(
    capsys: pytest.CaptureFixture[str], mirrors: Path, tmp_path: Path, swe_cache: Path
) -> None:
    from tests.e2e._operator import op

    res = op(capsys, "gym", "swe", str(shipped_instances()), "--repos", str(mirrors),
             "--state-root", str(tmp_path / "s"), "--allow-uncontained", "--oracle")  # fmt: skip
    assert res.code == 0, res.err
    graded = [line.split() for line in res.err.splitlines() if line.startswith("  graded ")]
    assert [g[1] for g in graded] == ["tidegate-gym__calc-1", "tidegate-gym__strings-1"]
    assert all(g[2] == "resolved" and g[3].endswith("s") for g in graded), graded
    assert "resolved 2/2" in res.out and "graded" not in res.out


def test_a_predictions_file_is_graded_per_instance(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, swe_cache: Path
) -> None:
    mirrors = tmp_path / "mirrors"
    two = calc_instance(mirrors, "t/two")
    two["FAIL_TO_PASS"] = json.dumps(
        ["tests/test_calc.py::test_add", "tests/test_calc.py::test_mul"]
    )
    two["test_patch"] = diff(mirrors / "t__two", {
        "tests/test_calc.py": "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n"
        "\n\ndef test_add():\n    from calc import add\n\n    assert add(2, 3) == 5\n"
        "\n\ndef test_mul():\n    from calc import mul\n\n    assert mul(2, 3) == 6\n",
    })  # fmt: skip
    rows = [calc_instance(mirrors, "t/fixed"), two, calc_instance(mirrors, "t/empty"),
            calc_instance(mirrors, "t/broken")]  # fmt: skip
    instances = write_jsonl(tmp_path / "i.jsonl", rows)
    predictions = write_jsonl(tmp_path / "p.jsonl", [
        {"instance_id": "t__fixed-1", "model_name_or_path": "org/m", "model_patch": rows[0]["patch"]},
        {"instance_id": "t__two-1", "model_name_or_path": "org/m", "model_patch": rows[1]["patch"]},
        {"instance_id": "t__empty-1", "model_name_or_path": "org/m", "model_patch": ""},
        {"instance_id": "t__broken-1", "model_name_or_path": "org/m", "model_patch": "diff --git a/x b/x\n@@ nonsense\n"},
    ])  # fmt: skip
    res = grade(capsys, instances, mirrors, tmp_path / "s", "--predictions", str(predictions))
    summary = res.json()
    status = {r["instance_id"]: r["status"] for r in summary["results"]}
    assert status == {
        "t__fixed-1": "resolved", "t__two-1": "partially resolved",
        "t__empty-1": "empty patch", "t__broken-1": "error",
    }, summary  # fmt: skip
    assert summary["empty_patch_ids"] == ["t__empty-1"] and summary["error_ids"] == ["t__broken-1"]
    assert res.code == 1
    reports = Path(summary["run_dir"]) / "org__m"
    assert (reports / "t__two-1" / "report.json").exists()
    assert not (Path(summary["run_dir"]) / "predictions.jsonl").exists()  # given, not produced


def test_a_contestant_that_does_not_fix_it_is_unresolved_and_its_patch_kept(
    capsys: pytest.CaptureFixture[str], mirrors: Path, tmp_path: Path, swe_cache: Path
) -> None:
    script = tmp_path / "wrong.json"
    script.write_text(json.dumps({"planner": "scripted", "attempts": [
        {"plan": "guess", "objective": "edit-file: calc.py\nreplace: return a - b\nwith: return a * b\n"}
    ]}))  # fmt: skip
    res = grade(capsys, shipped_instances(), mirrors, tmp_path / "s", "--contestant",
                f"scripted:{script}", "--instance", "tidegate-gym__calc-1", "--run-id", "c")  # fmt: skip
    summary = res.json()
    assert res.code == 1
    (result,) = summary["results"]
    assert result["status"] == "unresolved", result
    assert result["engine_status"] == "succeeded" and result["attempts"] == 1
    (prediction,) = [
        json.loads(line)
        for line in (tmp_path / "s" / "gym" / "swe" / "c" / "predictions.jsonl")
        .read_text()
        .splitlines()
    ]
    assert "+    return a * b" in prediction["model_patch"]


def test_a_module_missing_from_the_environment_is_a_harness_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, swe_cache: Path
) -> None:
    mirrors = tmp_path / "mirrors"
    row = calc_instance(mirrors)
    row["test_patch"] = diff(mirrors / "t__calc", {
        "tests/test_calc.py": "import absent_dependency\n\n" + "def test_add():\n    pass\n",
    })  # fmt: skip
    res = grade(
        capsys, write_jsonl(tmp_path / "i.jsonl", [row]), mirrors, tmp_path / "s", "--oracle"
    )
    (result,) = res.json()["results"]
    assert result["status"] == "error", result
    assert "absent_dependency" in result["error"]


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


def test_the_checkout_not_importable_is_a_harness_error_a_bad_import_a_verdict(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, swe_cache: Path
) -> None:
    from tests.integration.gym._swe import CALC, CALC_GOLD, CALC_TESTS, make_instance

    mirrors = tmp_path / "mirrors"
    # no conftest.py at the root, no packaging: the tests cannot import calc at all
    base = {k: v for k, v in CALC.items() if k != "conftest.py"}
    row = make_instance(mirrors, "t/lost", base, CALC_GOLD, CALC_TESTS,
                        ["tests/test_calc.py::test_add"], ["tests/test_calc.py::test_sub"])  # fmt: skip
    calc = calc_instance(mirrors)
    bad_import = diff(
        mirrors / "t__calc", {"calc.py": "import no_such_dependency\n" + CALC["calc.py"]}
    )
    instances = write_jsonl(tmp_path / "i.jsonl", [row, calc])
    predictions = write_jsonl(tmp_path / "p.jsonl", [
        {"instance_id": row["instance_id"], "model_name_or_path": "m", "model_patch": row["patch"]},
        {"instance_id": calc["instance_id"], "model_name_or_path": "m", "model_patch": bad_import},
    ])  # fmt: skip
    res = grade(capsys, instances, mirrors, tmp_path / "s", "--predictions", str(predictions))
    lost, broken = res.json()["results"]
    assert lost["status"] == "error" and "calc" in lost["error"], lost
    assert broken["status"] == "unresolved", broken
