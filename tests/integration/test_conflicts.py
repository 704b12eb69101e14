"""Apply-back against a main work tree the user changes while the run is in progress.

The user's edit is made by a phase observer the moment VERIFY starts: after the T0
snapshot was taken and the change was applied in the shadow, before APPLY_BACK. A clean
three-way merge is written; anything else is a conflict that changes nothing at all in the
work tree (all or nothing), writes ``.rej`` files under ``.tidegate/rejects/<run_id>/`` and
ends the run with exit code 3.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
from collections.abc import Callable

from tests.conftest import Repo, requires_containment, tidegate_cli
from tidegate.flow.transaction import execute
from tidegate.records.modes import Phase
from tidegate.records.report import FlowReport, PhaseEvent
from tidegate.records.request import RunRequest

LINES = "".join(f"line {i}\n" for i in range(1, 11))
AI_EDIT = "edit-file: f.txt\nreplace: line 8\nwith: line 8 (tidegate)\n"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class EditDuringRun:
    """A phase observer that runs ``action`` when ``phase`` starts, then records the whole
    work tree (bytes, modes, mtimes, index) as the user left it."""

    def __init__(
        self, repo: Repo, action: Callable[[], object], phase: Phase = Phase.VERIFY
    ) -> None:
        self.repo = repo
        self.action = action
        self.phase = phase
        self.fired = 0
        self.state_after_edit: dict[str, object] | None = None
        self.events: list[PhaseEvent] = []

    def phase_started(self, attempt: int, phase: Phase) -> None:
        if phase is self.phase and not self.fired:
            self.action()
            self.fired += 1
            self.state_after_edit = self.repo.tree_state(with_mtimes=True)

    def phase_finished(self, event: PhaseEvent) -> None:
        self.events.append(event)


def _without_tidegate_dir(state: dict[str, object]) -> dict[str, object]:
    """Drop tidegate's own ``.tidegate/`` entries; keep the root dir's mode, not its mtime
    (creating ``.tidegate/`` bumps it)."""
    out: dict[str, object] = {}
    for key, value in state.items():
        rel = key.removeprefix("dir:")
        if rel == ".tidegate" or rel.startswith(".tidegate/"):
            continue
        if key == "dir:.":
            assert isinstance(value, tuple)
            value = value[0]
        out[key] = value
    return out


def assert_conflict_changed_nothing(repo: Repo, obs: EditDuringRun, report: FlowReport) -> None:
    assert obs.fired == 1
    assert report.status == "conflict", (report.status, report.message)
    assert report.exit_code == 3
    assert report.error_class == "CONFLICT"
    assert report.failure_phase == "APPLY_BACK"
    assert report.applied_files == []
    assert obs.state_after_edit is not None
    assert _without_tidegate_dir(repo.tree_state(with_mtimes=True)) == _without_tidegate_dir(
        obs.state_after_edit
    )
    journal = repo.root / ".git" / "tidegate" / "journal"
    assert not journal.exists() or not any(journal.iterdir())


def _rejects(repo: Repo, report: FlowReport) -> dict[str, str]:
    """The .rej files on disk for this run, by path relative to the rejects dir."""
    rej_dir = repo.root / ".tidegate" / "rejects" / report.run_id
    assert report.rejects_dir is not None
    assert os.path.samefile(report.rejects_dir, rej_dir)
    found = {
        p.relative_to(rej_dir).as_posix(): p.read_text(encoding="utf-8")
        for p in rej_dir.rglob("*")
        if p.is_file()
    }
    assert sorted(report.rejects) == sorted(
        f".tidegate/rejects/{report.run_id}/{name}" for name in found
    )
    return found


# --------------------------------------------------------------------------- edits of one file


def test_non_overlapping_edit_during_run_is_merged(repo: Repo) -> None:
    repo.write("f.txt", LINES)
    repo.commit_all()
    index = repo.index_bytes()
    user_text = LINES.replace("line 2\n", "line 2 (user)\n")
    obs = EditDuringRun(repo, lambda: repo.write("f.txt", user_text))

    report = repo.run(AI_EDIT, observer=obs)

    assert obs.fired == 1
    assert report.status == "succeeded", report.message
    final = LINES.replace("line 2\n", "line 2 (user)\n").replace("line 8\n", "line 8 (tidegate)\n")
    assert repo.read("f.txt") == final
    assert repo.index_bytes() == index
    [applied] = report.applied_files
    assert (applied.path, applied.action, applied.merged) == ("f.txt", "write", True)
    assert applied.before_sha256 == _sha(user_text.encode())
    assert applied.after_sha256 == _sha(final.encode())
    # changed_files describes the verified change itself (T0 -> candidate), not the merge.
    [changed] = report.changed_files
    assert changed.before_sha256 == _sha(LINES.encode())
    assert changed.after_sha256 == _sha(LINES.replace("line 8\n", "line 8 (tidegate)\n").encode())
    assert not (repo.root / ".tidegate" / "rejects").exists()


def test_overlapping_edit_is_a_conflict_and_nothing_is_written(repo: Repo) -> None:
    # The conflicting file sorts between two clean ones, so a writer that goes path by path
    # would already have written a_first.txt before it met the conflict.
    repo.write("a_first.txt", "first\n")
    repo.write("f.txt", LINES)
    repo.write("z_last.txt", "last\n")
    repo.commit_all()
    index = repo.index_bytes()
    objective = (
        "edit-file: a_first.txt\nreplace: first\nwith: first (tidegate)\n"
        + AI_EDIT
        + "edit-file: z_last.txt\nreplace: last\nwith: last (tidegate)\n"
    )
    user_text = LINES.replace("line 8\n", "line 8 (user)\n")
    obs = EditDuringRun(repo, lambda: repo.write("f.txt", user_text))

    report = repo.run(objective, observer=obs)

    assert_conflict_changed_nothing(repo, obs, report)
    assert repo.read("f.txt") == user_text
    assert repo.read("a_first.txt") == "first\n"
    assert repo.read("z_last.txt") == "last\n"
    assert repo.index_bytes() == index
    rejects = _rejects(repo, report)
    assert list(rejects) == ["f.txt.rej"]
    rej = rejects["f.txt.rej"]
    assert rej.startswith("# tidegate could not apply this change to f.txt")
    assert "-line 8\n+line 8 (tidegate)\n" in rej
    # The report still attests the verified change the user can apply by hand.
    assert {c.path for c in report.changed_files} == {"a_first.txt", "f.txt", "z_last.txt"}
    assert report.diff_sha256 == _sha(report.diff.encode())
    # .tidegate/ is excluded, so the rejects do not show up as untracked files.
    assert repo.status() == " M f.txt\n"


def test_merge_keeps_crlf_line_endings_byte_exact(repo: Repo) -> None:
    crlf = "".join(f"line {i}\r\n" for i in range(1, 11))
    repo.write("win.txt", crlf)
    repo.commit_all()
    user_text = crlf.replace("line 2\r\n", "line 2 (user)\r\n")
    obs = EditDuringRun(repo, lambda: repo.write("win.txt", user_text))

    report = repo.run(
        "edit-file: win.txt\nreplace: line 8\nwith: line 8 (tidegate)\n", observer=obs
    )

    assert report.status == "succeeded", report.message
    expected = user_text.replace("line 8\r\n", "line 8 (tidegate)\r\n")
    assert (repo.root / "win.txt").read_bytes() == expected.encode()
    assert [(a.path, a.merged) for a in report.applied_files] == [("win.txt", True)]


def test_exec_bit_change_merges_with_a_user_content_edit(repo: Repo) -> None:
    repo.write("run.sh", "#!/bin/sh\necho 1\n", mode=0o644)
    repo.commit_all()
    obs = EditDuringRun(repo, lambda: repo.write("run.sh", "#!/bin/sh\necho 2\n"))

    report = repo.run("chmod-file: run.sh\nexecutable: true\n", observer=obs)

    assert report.status == "succeeded", report.message
    assert repo.read("run.sh") == "#!/bin/sh\necho 2\n"
    assert os.stat(repo.root / "run.sh").st_mode & 0o777 == 0o755


def test_binary_file_changed_on_both_sides_conflicts(repo: Repo) -> None:
    path = "dossier/café ü.bin"
    repo.write(path, b"\x00\x01 T0 bytes \xff")
    repo.write("f.txt", LINES)
    repo.commit_all()
    clone = repo.root.parent / "clone"
    repo.git("clone", "-q", str(repo.root), str(clone))
    (clone / path).write_bytes(b"\x00\x02 tidegate bytes \xfe")
    diff = subprocess.run(
        ["git", "diff", "--binary"], cwd=clone, capture_output=True, check=True
    ).stdout
    (repo.root.parent / "bin.diff").write_bytes(diff)
    repo.write(".tidegate/config.toml", "[validate]\nallow_binary = true\n")
    obs = EditDuringRun(repo, lambda: repo.write(path, b"\x00\x03 user bytes"))

    report = execute(
        RunRequest(
            repo=repo.root,
            objective="patch-file: bin.diff\n" + AI_EDIT,
            objective_base=repo.root.parent,
        ),
        observer=obs,
    )

    assert_conflict_changed_nothing(repo, obs, report)
    assert (repo.root / path).read_bytes() == b"\x00\x03 user bytes"
    assert repo.read("f.txt") == LINES
    rejects = _rejects(repo, report)
    assert list(rejects) == [f"{path}.rej"]
    assert "binary file changed both by you and by the change" in rejects[f"{path}.rej"]


# --------------------------------------------------------------------------- creations


def test_both_created_same_path_with_different_content_conflicts(repo: Repo) -> None:
    repo.write("f.txt", LINES)
    repo.commit_all()
    objective = "create-file: docs/new.md\ncontent: <<<\nfrom tidegate\n>>>\n" + AI_EDIT
    obs = EditDuringRun(repo, lambda: repo.write("docs/new.md", "from the user\n"))

    report = repo.run(objective, observer=obs)

    assert_conflict_changed_nothing(repo, obs, report)
    assert repo.read("docs/new.md") == "from the user\n"
    assert repo.read("f.txt") == LINES
    rejects = _rejects(repo, report)
    assert list(rejects) == ["docs/new.md.rej"]
    assert "--- /dev/null\n+++ b/docs/new.md\n" in rejects["docs/new.md.rej"]
    assert "+from tidegate\n" in rejects["docs/new.md.rej"]


def test_both_created_same_path_with_identical_content_is_fine(repo: Repo) -> None:
    repo.write("f.txt", LINES)
    repo.commit_all()
    index = repo.index_bytes()
    objective = "create-file: docs/new.md\ncontent: <<<\nsame words\n>>>\n" + AI_EDIT
    obs = EditDuringRun(repo, lambda: repo.write("docs/new.md", "same words\n"))

    report = repo.run(objective, observer=obs)

    assert obs.fired == 1
    assert report.status == "succeeded", report.message
    assert repo.read("docs/new.md") == "same words\n"
    assert repo.read("f.txt") == LINES.replace("line 8\n", "line 8 (tidegate)\n")
    assert repo.index_bytes() == index
    applied = {a.path: a.action for a in report.applied_files}
    assert applied == {"docs/new.md": "unchanged", "f.txt": "write"}
    # Already right: left alone, not rewritten.
    assert obs.state_after_edit is not None
    assert repo.tree_state(with_mtimes=True)["docs/new.md"] == obs.state_after_edit["docs/new.md"]


# --------------------------------------------------------------------------- deletions


def test_change_deletes_a_file_the_user_modified_conflicts(repo: Repo) -> None:
    repo.write("f.txt", LINES)
    repo.write("old.txt", "old\n")
    repo.commit_all()
    obs = EditDuringRun(repo, lambda: repo.write("old.txt", "old, but the user still needs it\n"))

    report = repo.run("delete-file: old.txt\n" + AI_EDIT, observer=obs)

    assert_conflict_changed_nothing(repo, obs, report)
    assert repo.read("old.txt") == "old, but the user still needs it\n"
    assert repo.read("f.txt") == LINES
    assert list(_rejects(repo, report)) == ["old.txt.rej"]


def test_change_edits_a_file_the_user_deleted_conflicts(repo: Repo) -> None:
    repo.write("f.txt", LINES)
    repo.write("g.txt", "g\n")
    repo.commit_all()
    obs = EditDuringRun(repo, lambda: (repo.root / "f.txt").unlink())

    report = repo.run(AI_EDIT + "edit-file: g.txt\nreplace: g\nwith: g (tidegate)\n", observer=obs)

    assert_conflict_changed_nothing(repo, obs, report)
    assert not (repo.root / "f.txt").exists()
    assert repo.read("g.txt") == "g\n"
    assert list(_rejects(repo, report)) == ["f.txt.rej"]


# --------------------------------------------------------------------------- ignored files


def test_ignored_files_are_never_touched_by_a_successful_run(committed_repo: Repo) -> None:
    repo = committed_repo
    repo.write(".env", "SECRET=1\n", mode=0o600)
    repo.write("build/out.bin", b"\x00\x01binary output\xff")
    repo.write("build/sub/deep.o", b"object")
    os.utime(repo.root / ".env", ns=(1_000_000_000, 1_000_000_000))
    os.utime(repo.root / "build/out.bin", ns=(2_000_000_000, 2_000_000_000))
    before = repo.tree_state(with_mtimes=True)
    ignored = [
        k for k in before if k in (".env", "dir:build") or k.startswith(("build/", "dir:build/"))
    ]
    assert len(ignored) == 5
    index = repo.index_bytes()

    report = repo.run(
        "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n",
        verify="test -f calc.py",
    )

    assert report.status == "succeeded", report.message
    assert "return a + b" in repo.read("calc.py")
    after = repo.tree_state(with_mtimes=True)
    for key in ignored:
        assert after[key] == before[key], key
    assert repo.index_bytes() == index
    assert {c.path for c in report.changed_files} == {"calc.py"}
    assert {a.path for a in report.applied_files} == {"calc.py"}


def test_change_creating_an_existing_ignored_file_conflicts(committed_repo: Repo) -> None:
    """An ignored file is not in T0, so a change that creates the same path would clobber it:
    that is a conflict, and the user's file stays as it was."""
    repo = committed_repo
    repo.write("build/local.cfg", "SECRET=user\n")  # build/ is ignored
    state = repo.tree_state(with_mtimes=True)
    obs = EditDuringRun(repo, lambda: None)

    report = repo.run(
        "create-file: build/local.cfg\ncontent: <<<\nSECRET=tidegate\n>>>\n", observer=obs
    )

    assert_conflict_changed_nothing(repo, obs, report)
    assert repo.read("build/local.cfg") == "SECRET=user\n"
    after = repo.tree_state(with_mtimes=True)
    assert after["build/local.cfg"] == state["build/local.cfg"]
    assert list(_rejects(repo, report)) == ["build/local.cfg.rej"]


# --------------------------------------------------------------------------- the CLI


def test_cli_conflict_exits_3_with_a_json_report(repo: Repo) -> None:
    repo.write("f.txt", LINES)
    repo.write("g.txt", "g\n")
    repo.commit_all()
    index = repo.index_bytes()
    target = repo.root / "f.txt"
    # VERIFY runs in the shadow, but uncontained it reaches the main tree by absolute path:
    # the user's edit lands while the run is in progress. (Contained, it cannot: below.)
    verify = f"printf 'x\\n' > {shlex.quote(str(target))}"
    objective = AI_EDIT + "edit-file: g.txt\nreplace: g\nwith: g (tidegate)\n"

    res = tidegate_cli(
        "run",
        "--repo",
        str(repo.root),
        "--objective",
        objective,
        "--verify",
        verify,
        "--containment",
        "none",
        "--json",
    )

    assert res.returncode == 3, (res.stdout, res.stderr)
    report = json.loads(res.stdout)
    assert report["status"] == "conflict"
    assert report["error_class"] == "CONFLICT"
    assert report["failure_phase"] == "APPLY_BACK"
    assert report["rejects"] == [f".tidegate/rejects/{report['run_id']}/f.txt.rej"]
    assert (repo.root / report["rejects"][0]).is_file()
    assert target.read_bytes() == b"x\n"
    assert repo.read("g.txt") == "g\n"
    assert repo.index_bytes() == index
    assert repo.status() == " M f.txt\n"


@requires_containment
def test_contained_verify_cannot_write_the_main_tree(repo: Repo) -> None:
    """Under bubblewrap (the default where it works) the same write is refused: the main
    work tree is read-only to the verify command, so the run fails and nothing changes."""
    repo.write("f.txt", LINES)
    repo.write("g.txt", "g\n")
    repo.commit_all()
    state = repo.tree_state(with_mtimes=True)
    verify = f"printf 'x\\n' > {shlex.quote(str(repo.root / 'f.txt'))}"
    objective = AI_EDIT + "edit-file: g.txt\nreplace: g\nwith: g (tidegate)\n"

    res = tidegate_cli(
        "run", "--repo", str(repo.root), "--objective", objective, "--verify", verify,
        "--containment", "required", "--max-attempts", "1", "--json",
    )  # fmt: skip

    assert res.returncode == 1, (res.stdout, res.stderr)
    report = json.loads(res.stdout)
    assert report["failure_phase"] == "VERIFY"
    assert report["containment"]["backend"] == "bubblewrap"
    assert str(repo.root) in report["containment"]["readonly"]
    assert "Read-only file system" in report["feedback"][0]
    assert repo.tree_state(with_mtimes=True) == state
