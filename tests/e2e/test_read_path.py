"""The one read path of ``tidegate runs`` and ``read`` (``cli.records`` over
``store.locate``, ``store.reading`` and ``store.views``) on real stores.

Each case asks the read path itself in this process, the typer application in a
subprocess and ``tidegate`` as a user runs it (the fast dispatch), and compares the three
byte for byte. The stores are recorded by real runs and then edited with sqlite3 the way
a tamperer, a crash or an odd file name would leave them; what the store calls corrupt is
named in one line.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests._terminal import on_a_terminal
from tests.conftest import Repo, tidegate_cli
from tidegate.cli import records
from tidegate.errors import UsageError

FIX = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
TYPER = "import sys; from tidegate.cli.app import main; sys.exit(main(sys.argv[1:]))"
COLUMNS = {"COLUMNS": "80"}


def _typer(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    res = subprocess.run(
        [sys.executable, "-c", TYPER, *args],
        cwd=cwd,
        env={**os.environ, **COLUMNS, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    return res.returncode, res.stdout, res.stderr


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    res = tidegate_cli(*args, cwd=cwd, env={**COLUMNS, **(env or {})})
    return res.returncode, res.stdout, res.stderr


def _fast(args: list[str], repo: Path) -> str:
    """The read path's own answer to ``args``, in this process (raises its error)."""
    command, rest = args[0], args[1:]
    flags = {a for a in rest if a.startswith("--")}
    positional = [a for a in rest if not a.startswith("--")]
    if command == "runs":
        return records.runs_output(str(repo), None, 20, "--json" in flags)
    return records.read_output(
        positional[0], str(repo), None, "--json" in flags, "--detail" in flags
    )


def same(args: list[str], repo: Repo, *, answered: bool = True) -> str:
    """Assert the read path in this process, the typer application and the CLI print the
    same; ``answered=False``: the command fails (one line on stderr) and the read path
    raises."""
    full = _typer(*args, cwd=repo.root)
    if answered:
        assert (0, _fast(args, repo.root), "") == full, args
    else:
        assert full[0] != 0 and len(full[2].splitlines()) == 1, full
        with pytest.raises(Exception):  # noqa: B017 - the command's own error
            _fast(args, repo.root)
    assert _cli(*args, cwd=repo.root) == full, args
    return full[1]


def _store(repo: Repo) -> Path:
    (path,) = Path(os.environ["TIDEGATE_STATE_ROOT"]).glob("*/runs.sqlite3")
    return path


def _edit(repo: Repo, sql: str, params: tuple[object, ...] = ()) -> None:
    with sqlite3.connect(_store(repo)) as db:
        db.execute(sql, params)


def _report(repo: Repo, run_id: str) -> dict[str, object]:
    with sqlite3.connect(_store(repo)) as db:
        (text,) = db.execute("SELECT report_json FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    value = json.loads(text)
    assert isinstance(value, dict)
    return value


def _set_report(repo: Repo, run_id: str, **changes: object) -> None:
    report = {**_report(repo, run_id), **changes}
    _edit(repo, "UPDATE runs SET report_json = ? WHERE run_id = ?", (json.dumps(report), run_id))


@pytest.fixture
def recorded(committed_repo: Repo) -> tuple[Repo, str, str]:
    """A repository with a run that succeeded and a newer one that failed (their ids)."""
    ok = tidegate_cli("run", "--objective", FIX, "--verify", "true", cwd=committed_repo.root)
    assert ok.returncode == 0, ok.stderr
    committed_repo.git("checkout", "-q", "calc.py")
    failed = tidegate_cli(
        "run", "--objective", FIX, "--verify", "false", "--max-attempts", "2",
        cwd=committed_repo.root,
    )  # fmt: skip
    assert failed.returncode == 1, failed.stderr
    runs = json.loads(tidegate_cli("runs", "--json", cwd=committed_repo.root).stdout)
    return committed_repo, runs[1]["run_id"], runs[0]["run_id"]


@pytest.fixture(autouse=True)
def eighty_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # the console width both sides render for


FORMS = [["runs"], ["runs", "--json"], ["read", "latest"], ["read", "latest", "--json"]]
FORMS += [["read", "latest", "--json", "--detail"]]


def test_a_success_and_a_failure_read_the_same(recorded: tuple[Repo, str, str]) -> None:
    repo, ok, failed = recorded
    for args in FORMS:
        same(args, repo)
    shown = same(["read", ok], repo)
    assert "change  path" in shown and "(verified)" in shown
    failure = same(["read", failed], repo)
    assert "feedback from attempt 1:" in failure
    same(["read", ok, "--json", "--detail"], repo)


def test_an_edited_checkpoint_is_refused(
    recorded: tuple[Repo, str, str],
) -> None:
    repo, _, failed = recorded
    _edit(
        repo,
        # The row's own field, which the rebuilt document holds whether the row is stored
        # whole or as a delta.
        "UPDATE checkpoints SET event_seq = event_seq + 100 WHERE run_id = ? AND seq = 2",
        (failed,),
    )
    shown = same(["read", "latest"], repo)
    assert "checkpoint 2 of run" in shown and "does not match its hash" in shown
    same(["read", "latest", "--json", "--detail"], repo)


@pytest.mark.parametrize(
    "forgery",
    [
        "UPDATE checkpoints SET mac = 'hmac-sha256:' || hex(randomblob(32)) WHERE seq = 3",
        "DELETE FROM checkpoints WHERE seq = 2",
        "UPDATE checkpoints SET prev_hash = NULL WHERE seq = 4",
    ],
    ids=["forged-signature", "removed", "unchained"],
)
def test_a_forged_chain_is_refused_alike(recorded: tuple[Repo, str, str], forgery: str) -> None:
    repo, _, _ = recorded
    _edit(repo, forgery)
    assert "refused: checkpoint" in same(["read", "latest"], repo)


def test_without_a_usable_key_the_chain_is_unverifiable(recorded: tuple[Repo, str, str]) -> None:
    repo, _, _ = recorded
    key = Path(os.environ["TIDEGATE_STATE_ROOT"]) / "checkpoint.key"
    key.chmod(0o644)  # readable by others: the store will not use it
    assert "(unverifiable: no checkpoint key" in same(["read", "latest"], repo)
    key.unlink()
    assert "(unverifiable: no checkpoint key" in same(["read", "latest"], repo)


def test_a_corrupt_store_is_one_error_line(recorded: tuple[Repo, str, str]) -> None:
    repo, _, _ = recorded
    path = _store(repo)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.write_bytes(b"SQLite format 3\0" + b"\xff" * 4000)
    for args in (["runs"], ["read", "latest"], ["read", "latest", "--json"]):
        same(args, repo, answered=False)


def test_an_empty_state_root_lists_nothing_and_reads_nothing(committed_repo: Repo) -> None:
    assert same(["runs"], committed_repo) == "no recorded runs\n"
    assert same(["runs", "--json"], committed_repo) == "[]\n"
    same(["read", "latest"], committed_repo, answered=False)  # no recorded run


def test_an_unacknowledged_report_and_a_dead_holder(recorded: tuple[Repo, str, str]) -> None:
    repo, ok, failed = recorded
    _edit(repo, "UPDATE runs SET acknowledged = 0 WHERE run_id = ?", (ok,))
    _edit(repo, "UPDATE runs SET status = 'running', pid = 999999999 WHERE run_id = ?", (failed,))
    listing = same(["runs"], repo)
    assert "PERSISTENCE_ERROR" in listing and "interrupted" in listing
    assert "never acknowledged" in same(["read", ok], repo)
    same(["read", ok, "--json"], repo)
    shown = same(["read", "latest"], repo)
    assert "resumable" in shown
    same(["read", "latest", "--json", "--detail"], repo)


NAMES = [
    ("we\x1b[31mird\n.py", None),  # an escape sequence and a line break
    ("bad\\xff.py", "YmFk/y5weQ=="),  # not UTF-8: the exact bytes b"bad\xff.py"
    ("[bold]x[/bold].py", None),  # markup in a name is a name
    ("back\\slash.py", None),
    ("with space.py", None),
]


@pytest.mark.parametrize(("path", "raw"), NAMES, ids=["controls", "non-utf8", "markup", "bs", "sp"])
def test_file_names_are_escaped_alike(
    recorded: tuple[Repo, str, str], path: str, raw: str | None
) -> None:
    repo, ok, _ = recorded
    files = [{**f, "path": path, "path_bytes": raw} for f in _report(repo, ok)["changed_files"]]  # type: ignore[attr-defined]
    _set_report(repo, ok, changed_files=files, rejects=[path], rejects_dir="/r\x07")
    shown = same(["read", ok], repo)
    assert "\x1b" not in shown and "\x07" not in shown
    same(["read", ok, "--json"], repo)


MESSAGES = [
    "plain",
    "markup [bold]not bold[/bold] and \\[escaped] and a trailing backslash \\",
    "controls \x1b]52;c;AAAA\x07 and \x9b and a\ttab",
    "a key sk-ant-REDACTME0123456789abcdefABCDEF and password=hunter22",
    "bidi \u202e reversed",
]


@pytest.mark.parametrize("message", MESSAGES, ids=["plain", "markup", "controls", "secret", "bidi"])
def test_messages_and_notes_read_the_same(recorded: tuple[Repo, str, str], message: str) -> None:
    repo, ok, _ = recorded
    finding = {"message": message, "path": "a.py", "line": 3, "severity": "warn", "source": "x"}
    _set_report(
        repo,
        ok,
        message=message,
        notes=[message, "second"],
        findings=[finding],
        feedback=["\n".join(f"line {i} {message}" for i in range(20))],
    )
    shown = same(["read", ok], repo)
    assert "sk-ant-REDACTME" not in shown and "hunter22" not in shown
    same(["read", ok, "--json"], repo)


def _created(path: str) -> dict[str, object]:
    return {"path": path, "action": "create", "before_sha256": None, "after_sha256": "ab" * 32,
            "before_mode": None, "after_mode": "100644", "path_bytes": None}  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "shown"),
    [
        ({"message": "an emoji code :smile: shown as written"}, ":smile: shown as written"),
        ({"changed_files": [_created("x" * 90)]}, "x" * 90),
        ({"changed_files": [_created("café.py")]}, "create  café.py  -"),
        ({"message": "[bold]not markup[/bold]"}, "[bold]not markup[/bold]"),
    ],
    ids=["emoji", "wide-table", "non-ascii-cell", "markup"],
)
def test_what_rich_rendered_its_own_way_reads_alike(
    recorded: tuple[Repo, str, str], changes: dict[str, object], shown: str
) -> None:
    """One renderer: text is printed as written (no emoji or markup), wide tables are not
    wrapped, whichever path answers."""
    repo, ok, _ = recorded
    _set_report(repo, ok, **changes)
    assert shown in same(["read", ok], repo)


def test_a_report_the_model_converts_or_refuses(recorded: tuple[Repo, str, str]) -> None:
    """A stored report that is not exactly what the model writes is read by the model: an
    int where it has a float is converted; a field it does not know makes the run corrupt."""
    repo, ok, _ = recorded
    _set_report(repo, ok, duration_s=1)
    assert json.loads(same(["read", ok, "--json"], repo))["duration_s"] == 1.0
    _set_report(repo, ok, extra="field")
    same(["read", ok], repo, answered=False)
    assert "is corrupt in the store" in _typer("read", ok, cwd=repo.root)[2]


def test_a_paused_run_and_a_narrow_console(
    recorded: tuple[Repo, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, ok, _ = recorded
    _set_report(repo, ok, status="paused")
    monkeypatch.setenv("COLUMNS", "80")
    assert "continue it with: tidegate resume" in same(["read", ok], repo)
    monkeypatch.setenv("COLUMNS", "40")  # the table is wider: the terminal wraps it
    narrow = same(["read", ok], repo)
    assert max(len(row) for row in narrow.splitlines()) > 40


@pytest.mark.parametrize(
    "terminal",
    [{"FORCE_COLOR": "1"}, {"FORCE_COLOR": "1", "NO_COLOR": "1"}, {"TTY_COMPATIBLE": "1"}],
    ids=["colour", "no-colour", "tty-compatible"],
)
def test_a_terminal_gets_styles(
    recorded: tuple[Repo, str, str], terminal: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, ok, failed = recorded
    for name, value in terminal.items():
        monkeypatch.setenv(name, value)
    shown = same(["read", ok], repo)
    assert "\x1b[1m" in shown  # the header row (and the status) in bold
    same(["read", failed], repo)
    monkeypatch.setenv("TERM", "dumb")  # a terminal that takes no styles
    assert "\x1b" not in same(["read", ok], repo)


def test_a_real_terminal_reads_the_same(recorded: tuple[Repo, str, str]) -> None:
    repo, ok, _ = recorded
    for columns in (100, 60):
        fast = on_a_terminal([sys.executable, "-m", "tidegate", "read", ok], repo.root, columns)
        slow = on_a_terminal([sys.executable, "-c", TYPER, "read", ok], repo.root, columns)
        assert fast == slow and b"\x1b[1;32msucceeded" in fast
    log = repo.root.parent / "importtime.txt"
    argv = [sys.executable, "-X", "importtime", "-m", "tidegate", "read", ok]
    assert on_a_terminal(argv, repo.root, 60, stderr=log) == fast
    assert "tidegate.cli.report_text" in log.read_text()
    assert "rich.console" not in log.read_text()  # the one renderer, without rich


def test_outside_a_repository_every_repositorys_runs_are_listed(
    recorded: tuple[Repo, str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, _, _ = recorded
    other = Repo(tmp_path / "other")
    other.root.mkdir()
    other.git("init", "-q")
    other.write("calc.py", "def add(a, b):\n    return a - b\n")
    other.commit_all("calc")
    assert (
        tidegate_cli("run", "--objective", FIX, "--verify", "true", cwd=other.root).returncode == 0
    )
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    monkeypatch.chdir(outside)
    for args, options in ((["runs"], {}), (["runs", "--json"], {"--json": True})):
        full = _typer(*args, cwd=outside)
        assert (0, records.runs_output(None, None, 20, bool(options)), "") == full
        assert _cli(*args, cwd=outside) == full
    assert str(repo.root) in full[1] and str(other.root) in full[1]
    with pytest.raises(UsageError):  # a --repo that is not one: discover's error
        records.runs_output(str(outside), None, 20, False)


def test_a_truncated_chain_or_an_edited_delta_is_refused(
    recorded: tuple[Repo, str, str],
) -> None:
    """Schema 4: delta rows are rebuilt and the committed chain head checked."""
    repo, ok, failed = recorded
    _edit(
        repo,
        "DELETE FROM checkpoints WHERE run_id = ? AND seq = (SELECT max(seq) FROM checkpoints "
        "WHERE run_id = ?)",
        (failed, failed),
    )
    shown = same(["read", "latest"], repo)
    assert "the checkpoint chain is truncated" in shown, shown
    same(["read", "latest", "--json", "--detail"], repo)
    _edit(
        repo,
        "UPDATE checkpoints SET document = replace(document, '\"=\"', '\"d\"') "
        "WHERE run_id = ? AND encoding = 'delta'",
        (ok,),
    )
    shown = same(["read", ok], repo)
    assert "refused: checkpoint" in shown, shown


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE trace SET meta = '[1, 2]' WHERE run_id = ? AND seq = 2",
        "UPDATE trace SET payload = CAST(payload AS BLOB) WHERE run_id = ? AND seq = 1",
        "UPDATE checkpoints SET seq = 'one' WHERE run_id = ? AND seq = 1",
    ],
    ids=["meta an array", "payload a blob", "checkpoint seq as text"],
)
def test_a_corrupt_row_is_named_in_one_line(recorded: tuple[Repo, str, str], sql: str) -> None:
    """What the store calls corrupt is named in one line, exit 1."""
    repo, _, failed = recorded
    _edit(repo, sql, (failed,))
    with pytest.raises(Exception, match=f"run {failed}"):
        _fast(["read", failed], repo.root)
    shown = subprocess.run(
        [sys.executable, "-m", "tidegate", "read", failed],
        cwd=repo.root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert shown.returncode == 1, shown.stdout
    assert len(shown.stderr.splitlines()) == 1 and f"run {failed}" in shown.stderr, shown.stderr
