"""Attack: links planted in the state root where the run store keeps its files.

A link at the repository's store directory, at ``runs.sqlite3`` or at a file SQLite keeps
beside it would have the run's records written elsewhere (SQLite follows a linked
database file and writes its journal beside the real one); a link at ``checkpoint.key``
would have a foreign key read. Each is refused before the run touches anything, in one
line, and the file or directory the link points at keeps its bytes.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.adversarial._repo_shapes import cli
from tests.conftest import Repo
from tidegate.store.state_root import repository_store
from tidegate.workspace.repo import discover

EDIT = "edit-file: README.md\nreplace: # calc\nwith: # calc!\n"


def _store_dir(repo: Repo) -> Path:
    state = Path(os.environ["TIDEGATE_STATE_ROOT"])
    found = discover(repo.root)
    return repository_store(state, found.common_dir, found.root.name, create=False)


def _run(repo: Repo) -> tuple[int, str]:
    res = cli("run", "--objective", EDIT, "--json", cwd=repo.root)
    return res.returncode, res.stderr.decode()


def _bytes(path: Path) -> dict[str, bytes]:
    if path.is_file():
        return {path.name: path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()}


@pytest.mark.parametrize("planted", ["runs.sqlite3", "runs.sqlite3-wal", "runs.sqlite3-shm"])
def test_a_link_at_a_database_file_is_refused(
    committed_repo: Repo, tmp_path: Path, planted: str
) -> None:
    repo = committed_repo
    assert _run(repo)[0] == 0  # the store exists, with records in it
    repo.git("checkout", "--", "README.md")
    store = _store_dir(repo)
    outside = tmp_path / "outside-file"
    shutil.copyfile(store / "runs.sqlite3", outside)  # a database SQLite would gladly write
    (store / planted).unlink(missing_ok=True)
    (store / planted).symlink_to(outside)
    before = _bytes(outside)

    code, err = _run(repo)

    assert code == 1, err
    assert err == (
        f"tidegate: error: PERSISTENCE_ERROR: state root {store.parent}: cannot open the run "
        f"store {store.name}/runs.sqlite3: {planted} is a symlink; not followed (ELOOP)\n"
    )
    assert _bytes(outside) == before
    assert repo.read("README.md") == "# calc\n"


def test_a_link_at_the_repository_store_directory_is_refused(
    committed_repo: Repo, tmp_path: Path
) -> None:
    repo = committed_repo
    store = _store_dir(repo)
    outside = tmp_path / "outside-dir"
    outside.mkdir()
    store.parent.mkdir(parents=True, exist_ok=True)
    store.symlink_to(outside)

    code, err = _run(repo)

    assert code == 2, err
    assert err == f"tidegate: error: {store}: a symlink; not followed\n"
    assert list(outside.iterdir()) == []
    assert repo.read("README.md") == "# calc\n"


def test_a_link_at_the_checkpoint_key_is_refused(committed_repo: Repo, tmp_path: Path) -> None:
    repo = committed_repo
    state = Path(os.environ["TIDEGATE_STATE_ROOT"])
    foreign = tmp_path / "foreign.key"
    foreign.write_bytes(b"ab" * 32 + b"\n")
    foreign.chmod(0o600)
    (state / "checkpoint.key").symlink_to(foreign)

    code, err = _run(repo)

    assert code == 2, err
    assert err.startswith(f"tidegate: error: checkpoint key {state}/checkpoint.key: ")
    assert err.count("\n") == 1
    assert foreign.read_bytes() == b"ab" * 32 + b"\n"
    assert not list(state.glob("*/runs.sqlite3"))
    assert repo.read("README.md") == "# calc\n"
