"""VALIDATE's diff policy and its configuration, on real repositories."""

from __future__ import annotations

import pytest

from tests.conftest import Repo
from tidegate.errors import UsageError

EDIT = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"


def _refused(report_message: str, phase: str | None, expected: str) -> None:
    assert phase == "VALIDATE"
    assert expected in report_message


def test_binary_content_is_refused_by_default_and_allowed_by_config(committed_repo: Repo) -> None:
    objective = "create-file: data.bin\ncontent: <<<\nhas a \0 byte\n>>>\n"
    report = committed_repo.run(objective, max_attempts=1)
    assert report.status == "failed"
    _refused(report.message, report.failure_phase, "binary content is not allowed")
    assert not (committed_repo.root / "data.bin").exists()

    committed_repo.write(".tidegate/config.toml", "[validate]\nallow_binary = true\n")
    report = committed_repo.run(objective)
    assert report.status == "succeeded", report.message
    assert (committed_repo.root / "data.bin").read_bytes() == b"has a \0 byte\n"


@pytest.mark.parametrize("committed", [True, False])
def test_binary_by_attribute_is_refused_too(committed_repo: Repo, committed: bool) -> None:
    """Text the work tree's ``.gitattributes`` marks binary counts as binary, committed or
    not (the counts are taken without the index, from the attributes T0 holds)."""
    committed_repo.write(".gitattributes", "*.dat binary\n")
    if committed:
        committed_repo.commit_all()
    objective = "create-file: table.dat\ncontent: <<<\nplain text\n>>>\n"
    report = committed_repo.run(objective, max_attempts=1)
    assert report.status == "failed"
    _refused(report.message, report.failure_phase, "binary content is not allowed")
    assert not (committed_repo.root / "table.dat").exists()


@pytest.mark.parametrize(
    "path",
    [".github/workflows/ci.yml", ".env", ".env.local", "services/api/.env", ".gitlab-ci.yml"],
)
def test_protected_paths_are_refused(committed_repo: Repo, path: str) -> None:
    report = committed_repo.run(f"create-file: {path}\ncontent: <<<\nx: 1\n>>>\n", max_attempts=1)
    assert report.status == "failed"
    _refused(report.message, report.failure_phase, "protected by the pattern")
    assert not (committed_repo.root / path).exists()


def test_protected_patterns_come_from_pyproject(committed_repo: Repo) -> None:
    committed_repo.write(
        "pyproject.toml",
        '[tool.tidegate.validate]\nprotected = ["calc.py"]\nmax_files = 5\n',
    )
    committed_repo.commit_all("config")
    report = committed_repo.run(EDIT, max_attempts=1)
    assert report.status == "failed"
    _refused(report.message, report.failure_phase, "calc.py: protected by the pattern 'calc.py'")
    # The repository's list extends the user's, never replaces it: .env stays protected.
    env_file = "create-file: .env\ncontent: <<<\nA=1\n>>>\n"
    report = committed_repo.run(env_file, max_attempts=1)
    assert report.status == "failed"
    _refused(report.message, report.failure_phase, ".env: protected by the pattern '.env'")
    assert not (committed_repo.root / ".env").exists()
    # The user's own file may replace the list.
    committed_repo.write(".tidegate/config.toml", '[validate]\nprotected = ["calc.py"]\n')
    report = committed_repo.run(env_file)
    assert report.status == "succeeded", report.message
    assert committed_repo.read(".env") == "A=1\n"


def test_limits_from_local_config_override_pyproject(committed_repo: Repo) -> None:
    committed_repo.write("pyproject.toml", "[tool.tidegate.validate]\nmax_lines_added = 100\n")
    committed_repo.commit_all("config")
    committed_repo.write(".tidegate/config.toml", "[validate]\nmax_lines_added = 1\n")
    objective = "create-file: notes.txt\ncontent: <<<\none\ntwo\n>>>\n"
    report = committed_repo.run(objective, max_attempts=1)
    assert report.status == "failed"
    _refused(report.message, report.failure_phase, "adds 2 lines; the limit is 1")


def test_every_problem_is_reported_as_feedback(committed_repo: Repo) -> None:
    committed_repo.write(".tidegate/config.toml", "[validate]\nmax_files = 1\n")
    objective = (
        "create-file: a.txt\ncontent: <<<\na\n>>>\ncreate-file: .env.prod\ncontent: <<<\nb\n>>>\n"
    )
    report = committed_repo.run(objective, max_attempts=1)
    assert report.status == "failed"
    assert report.error_class == "AST_VALIDATION_ERROR"
    feedback = report.feedback[0]
    assert "touches 2 files; the limit is 1" in feedback
    assert ".env.prod: protected" in feedback


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[validate]\nmax_filez = 3\n", "validate.max_filez: not a known field"),
        ("[validate]\nmax_files = 0\n", "validate.max_files"),
        ("[validate\n", "invalid TOML"),
    ],
)
def test_bad_configuration_is_a_usage_error_and_changes_nothing(
    committed_repo: Repo, content: str, message: str
) -> None:
    committed_repo.write(".tidegate/config.toml", content)
    before = committed_repo.tree_state(with_mtimes=True)
    with pytest.raises(UsageError, match=message.replace("[", r"\[")):
        committed_repo.run(EDIT)
    assert committed_repo.tree_state(with_mtimes=True) == before
    assert committed_repo.git("for-each-ref", "refs/tidegate") == ""
