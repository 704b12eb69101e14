"""A phase of a review run tries to write the user's work tree.

The attacker is a buggy or hostile phase: before each real phase of a review runs, it
writes, symlinks and deletes through the workspace file system the run handed it
(``state.workspace``). Review mode promises more than an ``fs_mode: read-only`` label:
every one of those writes must raise, and the main tree must come out byte- and
mtime-identical, index included. The same attacker in patch mode does write, so the
attack is real and the difference is the file system review wires in.

The phases are wrapped in the engine's own phase table (``tidegate.flow.phases.PHASES``):
each wrapper runs its attack and then the real phase, so the run itself is real (real git
repository, real shadow, real verify subprocess).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable

import pytest

from tests.conftest import Repo
from tidegate.flow.phases import PHASES, PhaseFn
from tidegate.flow.state import RunState
from tidegate.records.modes import MODE_PHASES, Mode, Phase

VERIFY = f"{shlex.quote(sys.executable)} -c 'from calc import add; assert add(2, 3) == 5'"

Attempts = dict[Phase, list[str]]


def _attack(state: RunState) -> list[str]:
    """Every write the workspace port offers; each outcome as 'wrote' or the exception."""
    outcomes = []
    writes: list[Callable[[], object]] = [
        lambda: state.workspace.write_file("calc.py", b"pwned = True\n", 0o644, ".tg-evil-1"),
        lambda: state.workspace.write_file("new/planted.py", b"x = 1\n", 0o644, ".tg-evil-2"),
        lambda: state.workspace.write_symlink("escape", b"/etc/passwd", ".tg-evil-3"),
        lambda: state.workspace.remove("README.md"),
    ]
    for write in writes:
        try:
            write()
            outcomes.append("wrote")
        except PermissionError:
            outcomes.append("PermissionError")
    return outcomes


def _wrap_phases(monkeypatch: pytest.MonkeyPatch, mode: Mode) -> Attempts:
    seen: Attempts = {}
    for phase, _ in MODE_PHASES[mode]:
        real = PHASES[phase]

        def attacked(state: RunState, phase: Phase = phase, real: PhaseFn = real) -> str:
            seen.setdefault(phase, []).extend(_attack(state))
            return real(state)

        monkeypatch.setitem(PHASES, phase, attacked)
    return seen


@pytest.fixture
def project(committed_repo: Repo) -> Repo:
    repo = committed_repo
    repo.write("README.md", "# calc\n\nunstaged edit\n")
    repo.write("staged.txt", "staged\n")
    repo.git("add", "staged.txt")
    repo.write("scratch/untracked.txt", "untracked\n")
    return repo


def test_every_review_phase_gets_a_file_system_that_refuses_writes(
    project: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = project.tree_state(with_mtimes=True)
    index = project.index_bytes()
    seen = _wrap_phases(monkeypatch, Mode.REVIEW)

    report = project.run("Review calc.py", verify=VERIFY, mode=Mode.REVIEW)

    assert set(seen) == {phase for phase, _ in MODE_PHASES[Mode.REVIEW]}
    for phase, outcomes in seen.items():
        assert outcomes and set(outcomes) == {"PermissionError"}, (phase, outcomes)
    assert project.tree_state(with_mtimes=True) == before
    assert project.index_bytes() == index
    assert report.status == "succeeded", report.message
    assert report.fs_mode == "read-only"


def test_the_same_attack_writes_in_patch_mode(
    project: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control: with a writable workspace the attack lands, so the review test above
    can only pass because review wires in a read-only file system."""
    seen = _wrap_phases(monkeypatch, Mode.PATCH)
    project.run(
        "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n",
        verify=VERIFY,
        mode=Mode.PATCH,
        max_attempts=1,
    )
    assert seen[Phase.PREFLIGHT][:2] == ["wrote", "wrote"]
    assert (project.root / "new" / "planted.py").read_bytes() == b"x = 1\n"
