"""Matrix 20: a trusted git.exec diff review is classified as a diff observation.

After a real edit, the model runs ``git diff``: the host's git adapter attests a complete
diff, and the loop records it in the evidence ledger with the digest of exactly the bytes
git produced. A truncated diff, a ``--stat`` summary and a ``git log`` are inspections
only, and a model's claim in prose that it reviewed the diff counts for nothing.
"""

from __future__ import annotations

import subprocess

from tests.conformance._agent import answer, call, digest, executor, scripted, session, turn
from tests.conftest import CALC, Repo, requires_containment
from tidegate.agent import run_loop
from tidegate.workspace.states import sha256_bytes


def edit() -> dict[str, object]:
    return call("workspace_edit", path="calc.py", old="a - b", new="a + b", expect=digest(CALC))


def git_diff(repo: Repo) -> bytes:
    return subprocess.run(
        ["git", "diff", "--no-ext-diff", "--no-textconv"],
        cwd=repo.root,
        capture_output=True,
        check=True,
    ).stdout


def test_a_complete_git_diff_is_a_diff_observation(committed_repo: Repo) -> None:
    committed_repo.write("big.txt", "line\n" * 400)
    committed_repo.commit_all("big file")
    model = scripted(
        turn(
            edit(),
            call(
                "workspace_write",
                path="big.txt",
                content="changed\n" * 400,
                expect=digest("line\n" * 400),
            ),
        ),
        turn(call("git_exec", args=["diff", "--stat"]), call("git_exec", args=["log", "-1"])),
        turn(call("git_exec", args=["diff"], max_bytes=1000)),
        answer("I reviewed the diff carefully."),
    )
    with executor(committed_repo.root) as ex:
        s = session(model, ex)
        outcome = run_loop(s)
    assert outcome.status == "completed"
    assert s.ledger.state.diffs == {}, "summaries, logs and truncated diffs are not diffs"

    model = scripted(turn(call("git_exec", "d1", args=["diff"])), answer("done"))
    with executor(committed_repo.root) as ex:
        s2 = session(model, ex)
        run_loop(s2)
    (observed,) = s2.ledger.state.diffs.values()
    assert observed.complete
    assert observed.diff_hash == sha256_bytes(git_diff(committed_repo))
    record = s2.transcript.tools[0]
    assert record.effects["diff_review"]["diff_sha256"] == observed.diff_hash
    assert sorted(record.effects["diff_review"]["paths"]) == ["big.txt", "calc.py"]


@requires_containment
def test_the_diff_certifies_only_writes_before_it(committed_repo: Repo) -> None:
    model = scripted(
        turn(edit()),
        turn(call("project_validate")),
        turn(call("git_exec", args=["diff"])),
        answer("done"),
    )
    with executor(committed_repo.root) as ex:
        s = session(model, ex)
        run_loop(s)
    (observed,) = s.ledger.state.diffs.values()
    assert observed.covered_writes == 1
    assert observed.sequence > s.ledger.last_write_sequence  # type: ignore[operator]
    assert s.ledger.is_complete()
