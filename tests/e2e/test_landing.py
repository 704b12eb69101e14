"""``run --hold``, ``apply``, ``discard``, ``undo``, ``diff`` and the ``runs`` listing, end to
end through the real CLI on a repository with staged, unstaged and untracked work.

Each command is checked for what it must change and, byte for byte, for what it must not:
the other files of the work tree, ``.git/index``, HEAD and every ref outside
``refs/tidegate/``.
"""

from __future__ import annotations

import sqlite3
import sys

from tests._terminal import on_a_terminal
from tests.conftest import CALC, Repo, tidegate_cli
from tests.e2e._landing import (
    CHECK,
    FIX,
    USER_TAIL,
    dirty,
    files_but,
    held,
    landed,
    outside_refs,
    rejects_of,
)
from tests.integration._store import cli, state_root

__all__ = ["dirty"]  # the fixture


def test_hold_verifies_and_keeps_the_change_without_touching_anything(dirty: Repo) -> None:
    before, refs = dirty.tree_state(with_mtimes=True), outside_refs(dirty)

    run_id = held(dirty)

    assert dirty.tree_state(with_mtimes=True) == before
    assert outside_refs(dirty) == refs
    assert dirty.git("rev-parse", f"refs/tidegate/keep:{run_id}/result").strip()
    code, rows, _ = cli("runs", cwd=dirty.root)
    assert code == 0 and isinstance(rows, list)
    assert (rows[0]["run_id"], rows[0]["status"], rows[0]["landing"]) == (run_id, "held", None)
    assert rows[0]["files_changed"] == 2 and rows[0]["objective"] == "edit-file: calc.py"
    listing = tidegate_cli("runs", cwd=dirty.root).stdout.split()
    assert listing[:4] == [run_id, "engine", "patch", "held"] and listing[4:6] == ["2", "file(s)"]


def test_the_report_and_diff_show_the_change_as_a_diff(dirty: Repo) -> None:
    shown = tidegate_cli(
        "run", "--hold", "--objective", FIX, "--verify", CHECK, cwd=dirty.root
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "-    return a - b\n+    return a + b\n" in shown.stdout
    assert "\x1b[" not in shown.stdout  # piped: plain, no pager
    assert "+# calc (fixed)\n" in shown.stdout

    diff = tidegate_cli("diff", cwd=dirty.root)
    assert diff.returncode == 0
    assert diff.stdout.startswith("diff --git a/README.md b/README.md\n")
    assert "+    return a + b\n" in diff.stdout
    stat = tidegate_cli("diff", "latest", "--stat", cwd=dirty.root)
    assert stat.stdout.splitlines() == [
        " README.md |    2 +-",
        " calc.py   |    2 +-",
        " 2 file(s) changed, 2 insertion(s)(+), 2 deletion(s)(-)",
    ]
    forced = tidegate_cli("diff", cwd=dirty.root, env={"FORCE_COLOR": "1", "TERM": "xterm"})
    assert "\x1b[32m+    return a + b\x1b[0m" in forced.stdout


def test_apply_lands_the_held_change_merged_with_edits_made_since(dirty: Repo) -> None:
    run_id = held(dirty)
    dirty.write("calc.py", CALC + USER_TAIL)  # the user goes on working
    before, refs = files_but(dirty, "calc.py", "README.md"), outside_refs(dirty)
    index = dirty.index_bytes()

    code, out, err = cli("apply", run_id, cwd=dirty.root)

    assert code == 0, err
    assert isinstance(out, dict) and out["action"] == "applied"
    assert sorted(out["written"]) == ["README.md", "calc.py"] and out["merged"] == ["calc.py"]
    assert dirty.read("calc.py") == CALC.replace("a - b", "a + b") + USER_TAIL
    assert dirty.read("README.md") == "# calc (fixed)\n\nunstaged notes\n"
    assert dirty.index_bytes() == index
    assert files_but(dirty, "calc.py", "README.md") == before
    assert outside_refs(dirty) == refs
    assert dirty.status().splitlines() == [
        " M README.md",
        " M calc.py",
        "A  staged.txt",
        "?? notes/untracked.txt",
    ]
    again = tidegate_cli("apply", run_id, cwd=dirty.root)
    assert again.returncode == 2
    assert again.stderr == (
        f"tidegate: error: cannot apply run {run_id}: its change was already applied; "
        f"`tidegate undo {run_id}` reverses it\n"
    )
    code, rows, _ = cli("runs", cwd=dirty.root)
    assert isinstance(rows, list) and (rows[0]["status"], rows[0]["landing"]) == (
        "held",
        "applied",
    )
    read = tidegate_cli("read", run_id, cwd=dirty.root)
    assert "  change applied 20" in read.stdout
    code, view, _ = cli("read", run_id, "--detail", cwd=dirty.root)
    assert isinstance(view, dict) and [x["action"] for x in view["landings"]] == ["applied"]


def test_apply_of_a_conflicting_held_change_changes_nothing(dirty: Repo) -> None:
    run_id = held(dirty)
    dirty.write("calc.py", CALC.replace("return a - b", "return b - a"))  # the same line
    before = dirty.tree_state(with_mtimes=True)

    code, out, _ = cli("apply", run_id, cwd=dirty.root)

    assert code == 3
    assert isinstance(out, dict) and out["action"] == "conflict"
    assert "nothing was changed" in out["message"]
    assert [p.name for p in rejects_of(dirty)] == ["calc.py.rej"]
    # Everything but the new .tidegate/rejects (and the top directory's mtime it changed).
    after = dirty.tree_state(with_mtimes=True)
    assert {k: v for k, v in after.items() if ".tidegate" not in k and k != "dir:."} == {
        k: v for k, v in before.items() if ".tidegate" not in k and k != "dir:."
    }
    code, rows, _ = cli("runs", cwd=dirty.root)
    assert isinstance(rows, list) and rows[0]["landing"] is None  # still held
    dirty.write("calc.py", CALC)  # the user backs out: now it lands
    code, out, err = cli("apply", run_id, cwd=dirty.root)
    assert code == 0, err


def test_discard_drops_the_held_change(dirty: Repo) -> None:
    run_id = held(dirty)
    before, refs = dirty.tree_state(with_mtimes=True), outside_refs(dirty)

    code, out, err = cli("discard", cwd=dirty.root)

    assert code == 0, err
    assert isinstance(out, dict) and (out["run_id"], out["action"]) == (run_id, "discarded")
    assert dirty.tree_state(with_mtimes=True) == before and outside_refs(dirty) == refs
    refused = tidegate_cli("apply", run_id, cwd=dirty.root)
    assert refused.returncode == 2
    assert refused.stderr == (
        f"tidegate: error: cannot apply run {run_id}: its change was discarded\n"
    )
    assert dirty.tree_state(with_mtimes=True) == before


def test_a_subset_is_verified_again_on_its_own_before_it_lands(dirty: Repo) -> None:
    run_id = held(dirty)
    index, refs = dirty.index_bytes(), outside_refs(dirty)
    readme = dirty.read("README.md")

    shown = tidegate_cli("apply", run_id, "--exclude", "README.md", cwd=dirty.root)

    assert shown.returncode == 0, shown.stderr
    assert "a subset was never verified on its own, so it was re-verified" in shown.stdout
    assert dirty.read("calc.py") == CALC.replace("a - b", "a + b")
    assert dirty.read("README.md") == readme
    assert dirty.index_bytes() == index and outside_refs(dirty) == refs
    code, rows, _ = cli("runs", cwd=dirty.root)
    assert isinstance(rows, list)
    subset, original = rows[0], rows[1]
    assert (original["run_id"], original["landing"]) == (run_id, "applied")
    assert subset["status"] == "succeeded" and subset["files_changed"] == 1
    # Undoing the held run reverses what its subset run landed.
    code, out, err = cli("undo", run_id, cwd=dirty.root)
    assert code == 0, err
    assert isinstance(out, dict) and out["by_run"] == subset["run_id"]
    assert dirty.read("calc.py") == CALC


def test_a_subset_that_fails_on_its_own_is_not_applied(dirty: Repo) -> None:
    run_id = held(dirty)
    before = dirty.tree_state(with_mtimes=True)

    code, out, _ = cli("apply", run_id, "--only", "README.md", cwd=dirty.root)

    assert code == 1
    assert isinstance(out, dict) and out["action"] == "failed"
    assert "did not pass" in out["message"] and "still held" in out["message"]
    assert dirty.tree_state(with_mtimes=True) == before
    code, out, err = cli("apply", run_id, cwd=dirty.root)  # the whole change still lands
    assert code == 0, err
    assert dirty.read("calc.py") == CALC.replace("a - b", "a + b")


def test_undo_reverses_a_landed_run_and_keeps_edits_made_since(dirty: Repo) -> None:
    readme = dirty.read("README.md")
    run_id = landed(dirty)
    dirty.write("calc.py", dirty.read("calc.py") + USER_TAIL)
    index, refs = dirty.index_bytes(), outside_refs(dirty)
    others = files_but(dirty, "calc.py", "README.md")

    code, out, err = cli("undo", cwd=dirty.root)

    assert code == 0, err
    assert isinstance(out, dict) and (out["run_id"], out["action"]) == (run_id, "undone")
    assert dirty.read("calc.py") == CALC + USER_TAIL  # the change gone, the user's edit kept
    assert dirty.read("README.md") == readme
    assert dirty.index_bytes() == index and outside_refs(dirty) == refs
    assert files_but(dirty, "calc.py", "README.md") == others
    code, rows, _ = cli("runs", cwd=dirty.root)
    assert isinstance(rows, list) and rows[0]["landing"] == "undone"
    again = tidegate_cli("undo", run_id, cwd=dirty.root)
    assert again.returncode == 2
    assert again.stderr == (
        f"tidegate: error: cannot undo run {run_id}: its change was applied and then undone\n"
    )


def test_undo_of_a_held_then_applied_run(dirty: Repo) -> None:
    before = dirty.tree_state()
    run_id = held(dirty)
    assert cli("apply", cwd=dirty.root)[0] == 0

    code, _out, err = cli("undo", run_id, cwd=dirty.root)

    assert code == 0, err
    assert dirty.tree_state() == before


def test_undo_last_n_reverses_the_last_landed_runs_newest_first(dirty: Repo) -> None:
    before = dirty.tree_state()
    first = landed(dirty, "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n")
    second = landed(
        dirty,
        "edit-file: calc.py\nreplace: return a * b\nwith: return b * a\n",
        f"{sys.executable} -c 'from calc import mul; assert mul(2, 3) == 6'",
    )

    code, out, err = cli("undo", "--last", "2", cwd=dirty.root)

    assert code == 0, err
    assert isinstance(out, list)
    assert [(o["run_id"], o["action"]) for o in out] == [(second, "undone"), (first, "undone")]
    assert dirty.tree_state() == before
    refused = tidegate_cli("undo", "--last", "1", cwd=dirty.root)
    assert refused.returncode == 2
    assert (
        refused.stderr
        == "tidegate: error: no applied run to undo in this work tree (`tidegate runs`)\n"
    )


def test_an_interrupted_run_lists_as_interrupted_with_its_duration(dirty: Repo) -> None:
    code, _, _ = cli(
        "run", "--objective", FIX, "--verify", CHECK, cwd=dirty.root,
        env={"TIDEGATE_FAULT": "phase.VERIFY"},
    )  # fmt: skip
    assert code < 0
    code, rows, _ = cli("runs", cwd=dirty.root)
    assert isinstance(rows, list) and rows[0]["status"] == "interrupted"
    assert rows[0]["duration_s"] > 0
    words = tidegate_cli("runs", cwd=dirty.root).stdout.split()
    assert words[3] == "interrupted" and words[6] != "0.0s"


def test_on_a_terminal_the_diff_goes_through_the_pager(dirty: Repo) -> None:
    held(dirty)
    argv = [sys.executable, "-m", "tidegate", "diff", "--stat"]
    paged = {"PAGER": "sed s/^/PAGED:/", "GIT_PAGER": None, "TIDEGATE_PAGER": None, "TERM": "xterm"}
    shown = on_a_terminal(argv, dirty.root, env=paged).decode()
    assert shown.splitlines()[0].rstrip("\r") == "PAGED: README.md |    2 +-"
    piped = tidegate_cli("diff", "--stat", cwd=dirty.root, env={"PAGER": "sed s/^/PAGED:/"})
    assert not piped.stdout.startswith("PAGED:")  # not a terminal: no pager


def test_a_store_from_before_landings_is_read_as_it_is_and_migrated_to_write(
    dirty: Repo,
) -> None:
    run_id = landed(dirty)
    path = next(state_root().glob("*/runs.sqlite3"))
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("DROP TABLE landings")
    db.execute("PRAGMA user_version = 4")
    db.close()
    stored = path.read_bytes()

    listed = tidegate_cli("runs", cwd=dirty.root)

    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[:4] == [run_id, "engine", "patch", "succeeded"]
    assert tidegate_cli("read", run_id, cwd=dirty.root).returncode == 0
    assert path.read_bytes() == stored  # read in memory, never migrated in place
    code, _, err = cli("undo", run_id, cwd=dirty.root)
    assert code == 0, err
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == 5


def test_a_subset_landing_is_undone_once_whichever_run_is_named(dirty: Repo) -> None:
    before = dirty.tree_state()
    first = held(dirty)
    assert cli("apply", first, "--exclude", "README.md", cwd=dirty.root)[0] == 0
    _, rows, _ = cli("runs", cwd=dirty.root)
    assert isinstance(rows, list)
    subset = rows[0]["run_id"]

    code, out, err = cli("undo", "--last", "1", cwd=dirty.root)  # the held run, not both

    assert code == 0, err
    assert isinstance(out, dict) and (out["run_id"], out["by_run"]) == (first, subset)
    assert dirty.tree_state() == before
    refused = tidegate_cli("undo", cwd=dirty.root)
    assert refused.returncode == 2 and "no applied run to undo" in refused.stderr

    second = held(dirty)
    assert cli("apply", second, "--only", "calc.py", cwd=dirty.root)[0] == 0
    _, rows, _ = cli("runs", cwd=dirty.root)
    assert isinstance(rows, list)
    code, _, err = cli("undo", rows[0]["run_id"], cwd=dirty.root)  # the subset run by name
    assert code == 0, err
    _, rows, _ = cli("runs", cwd=dirty.root)
    assert isinstance(rows, list)
    assert [r["landing"] for r in rows[:2]] == ["undone", "undone"]
    assert dirty.tree_state() == before
