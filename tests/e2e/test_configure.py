"""Configure once (issue #25): ``tidegate init``, ``[run] verify`` and its detection,
``--verify none``, and a failed run's headline, end to end on dirty repositories."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo, tidegate_cli
from tidegate.config import load_policy
from tidegate.config.verify import PYTEST, detect_verify

PYTEST_HERE = f"{shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
FIX = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
WRONG = "edit-file: calc.py\nreplace: return a - b\nwith: return a * b\n"


@pytest.fixture
def dirty(committed_repo: Repo) -> Repo:
    """A pytest project with staged, unstaged and untracked work."""
    repo = committed_repo
    repo.write("pyproject.toml", '[project]\nname = "calc"\n\n[tool.pytest.ini_options]\n')
    repo.write("tests/test_calc.py", TESTS)
    repo.commit_all("tests")
    repo.write("README.md", "# calc\n\nunstaged edit\n")
    repo.write("staged.txt", "staged\n")
    repo.git("add", "staged.txt")
    repo.write("scratch/notes.txt", "untracked\n")
    return repo


def _outside_tidegate(repo: Repo) -> dict[str, object]:
    """Every path but .tidegate/ (and the root's mtime, which making .tidegate/ moves)."""
    state = repo.tree_state(with_mtimes=True)
    return {k: v for k, v in state.items() if ".tidegate" not in k and k != "dir:."}


# -- tidegate init ----------------------------------------------------------------------


def test_init_writes_the_users_file_and_touches_nothing_else(dirty: Repo) -> None:
    before, index, status = _outside_tidegate(dirty), dirty.index_bytes(), dirty.status()
    res = tidegate_cli("init", cwd=dirty.root)
    assert res.returncode == 0, res.stdout + res.stderr
    written = dirty.root / ".tidegate" / "config.toml"
    assert res.stdout == f"wrote {written}\n"
    text = written.read_text()
    assert f'# Detected from pyproject.toml:\nverify = "{PYTEST}"\n' in text
    assert text.startswith("# tidegate's configuration for this work tree")
    # byte-identical outside .tidegate/, the index included; git does not see the file
    assert _outside_tidegate(dirty) == before
    assert dirty.index_bytes() == index
    assert dirty.status() == status
    # what it wrote is a valid configuration, the user's own
    loaded = load_policy(dirty.root)
    assert loaded.config.run.verify == PYTEST
    assert loaded.ignored == ()


def test_init_refuses_to_overwrite_unless_forced(dirty: Repo) -> None:
    own = dirty.root / ".tidegate" / "config.toml"
    own.parent.mkdir()
    own.write_text('[run]\nverify = "make check"\n')
    before, index = dirty.tree_state(with_mtimes=True), dirty.index_bytes()
    res = tidegate_cli("init", cwd=dirty.root)
    assert res.returncode == 2
    assert res.stdout == ""
    assert res.stderr == (
        f"tidegate: error: {own} exists; not overwritten (--force to replace it)\n"
    )
    assert dirty.tree_state(with_mtimes=True) == before  # the file too
    assert dirty.index_bytes() == index
    res = tidegate_cli("init", "--force", cwd=dirty.root)
    assert res.returncode == 0, res.stderr
    assert f'verify = "{PYTEST}"' in own.read_text()
    assert dirty.index_bytes() == index


def test_init_follows_no_link_and_writes_no_tracked_file(dirty: Repo, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, dirty.root / ".tidegate")
    res = tidegate_cli("init", "--force", cwd=dirty.root)
    assert res.returncode == 2
    assert "is not a directory (a symlink?)" in res.stderr
    assert list(elsewhere.iterdir()) == []
    os.unlink(dirty.root / ".tidegate")
    dirty.write(".tidegate/config.toml", "[validate]\nmax_files = 5\n")
    dirty.git("add", "-f", ".tidegate/config.toml")
    before, index = dirty.tree_state(with_mtimes=True), dirty.index_bytes()
    res = tidegate_cli("init", "--force", cwd=dirty.root)
    assert res.returncode == 2
    assert "is tracked by git" in res.stderr
    assert dirty.tree_state(with_mtimes=True) == before
    assert dirty.index_bytes() == index


def test_init_with_nothing_detected_leaves_verify_commented(committed_repo: Repo) -> None:
    res = tidegate_cli("init", cwd=committed_repo.root)
    assert res.returncode == 0, res.stderr
    text = (committed_repo.root / ".tidegate" / "config.toml").read_text()
    assert "# Nothing was detected" in text
    assert "\nverify =" not in text
    assert load_policy(committed_repo.root).config.run.verify is None


# -- [run] verify and detection -----------------------------------------------------------


def test_the_configured_verify_runs_without_verify_and_says_so(dirty: Repo) -> None:
    own = dirty.root / ".tidegate" / "config.toml"
    own.parent.mkdir()
    own.write_text(f"[run]\nverify = {json.dumps(PYTEST_HERE)}\n")
    res = tidegate_cli("run", "--objective", FIX, cwd=dirty.root)
    assert res.returncode == 0, res.stdout + res.stderr
    note = f"no --verify: using `{PYTEST_HERE}` from .tidegate/config.toml"
    assert f"tidegate: note: {note}" in res.stderr
    assert f"note: {note}" in res.stdout
    assert "verified change applied" in res.stdout.splitlines()[0]
    assert "unstaged edit" in dirty.read("README.md")
    assert dirty.read("calc.py").startswith("def add(a, b):\n    return a + b\n")


def test_verify_none_runs_without_one_on_purpose(dirty: Repo) -> None:
    own = dirty.root / ".tidegate" / "config.toml"
    own.parent.mkdir()
    own.write_text('[run]\nverify = "false"\n')  # would fail the run if it ran
    res = tidegate_cli("run", "--objective", FIX, "--verify", "none", "--json", cwd=dirty.root)
    assert res.returncode == 0, res.stdout + res.stderr
    report = json.loads(res.stdout)
    assert report["verify"] is None
    assert "unverified" in report["message"]
    assert "--verify none: no verify command runs" in report["notes"]


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"pyproject.toml": "[tool.pytest.ini_options]\n"}, (PYTEST, "pyproject.toml")),
        ({"pytest.ini": "[pytest]\n"}, (PYTEST, "pytest.ini")),
        ({"setup.cfg": "[tool:pytest]\n"}, (PYTEST, "setup.cfg")),
        ({"pyproject.toml": "[project]\n", "tests/test_x.py": ""}, (PYTEST, "tests/")),
        (
            {"package.json": '{"scripts": {"test": "jest"}}'},
            ("npm test", "package.json's test script"),
        ),
        ({"package.json": '{"scripts": {"test": "echo \\"Error: no test specified\\""}}'}, None),
        ({"go.mod": "module x\n"}, ("go test ./...", "go.mod")),
        ({"Cargo.toml": "[package]\n"}, ("cargo test", "Cargo.toml")),
        ({"pyproject.toml": "not toml ["}, None),
        ({"README.md": "# x\n"}, None),
    ],
)
def test_detection(tmp_path: Path, files: dict[str, str], expected: tuple[str, str] | None) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert detect_verify(tmp_path) == expected


def test_a_linked_manifest_is_no_evidence(tmp_path: Path) -> None:
    (tmp_path / "real.toml").write_text("[package]\n")
    os.symlink(tmp_path / "real.toml", tmp_path / "Cargo.toml")
    assert detect_verify(tmp_path) is None


def test_with_nothing_configured_or_detected_the_run_says_so(committed_repo: Repo) -> None:
    res = tidegate_cli("run", "--objective", FIX, "--json", cwd=committed_repo.root)
    assert res.returncode == 0, res.stdout + res.stderr
    report = json.loads(res.stdout)
    assert report["verify"] is None
    assert any("none detected: no verify command runs" in n for n in report["notes"])


# -- a failed run's headline ----------------------------------------------------------------


def test_a_failed_runs_headline_is_the_failing_test(dirty: Repo) -> None:
    before, index = dirty.tree_state(with_mtimes=True), dirty.index_bytes()
    res = tidegate_cli("run", "--objective", WRONG, "--verify", PYTEST_HERE, cwd=dirty.root)
    assert res.returncode == 1
    head = res.stdout.splitlines()[0]
    assert head.startswith("failed patch run ")
    assert ": 1 failing test (pytest): tests/test_calc.py::test_add" in head, head
    assert "failed in VERIFY (TEST)" in res.stdout.splitlines()[1]
    assert dirty.tree_state(with_mtimes=True) == before
    assert dirty.index_bytes() == index


def test_a_failed_runs_headline_is_validates_refusal(dirty: Repo) -> None:
    objective = "create-file: .github/workflows/ci.yml\ncontent: <<<\non: push\n>>>\n"
    res = tidegate_cli("run", "--objective", objective, "--verify", "none", cwd=dirty.root)
    assert res.returncode == 1
    lines = res.stdout.splitlines()
    assert ".github/workflows/ci.yml" in lines[0], lines[0]
    assert "failed in VALIDATE" in lines[1], lines[1]


def test_verify_timeout_is_the_users_default(dirty: Repo) -> None:
    own = dirty.root / ".tidegate" / "config.toml"
    own.parent.mkdir()
    own.write_text('[run]\nverify = "sleep 30"\nverify_timeout = 1\n')
    res = tidegate_cli("run", "--objective", FIX, "--max-attempts", "1", "--json", cwd=dirty.root)
    assert res.returncode == 1, res.stdout + res.stderr
    report = json.loads(res.stdout)
    assert report["verify"]["timed_out"] is True
    assert report["verify"]["duration_s"] < 20


def test_the_repository_may_not_set_the_verify_timeout(dirty: Repo) -> None:
    dirty.write(
        "pyproject.toml", "[tool.pytest.ini_options]\n\n[tool.tidegate.run]\nverify_timeout = 1\n"
    )
    dirty.commit_all("a short timeout")
    loaded = load_policy(dirty.root)
    assert loaded.config.run.verify_timeout is None
    assert loaded.repository_verify is None
    assert [line.split(" ignored")[0] for line in loaded.ignored] == [
        "pyproject.toml [tool.tidegate] run.verify_timeout = 1.0"
    ]
