"""Many runs on one dirty repository at once, as real processes: each has its own T0 and
shadow and verifies in parallel; only the landing is one at a time, each merged against the
work tree as it is then (the user's edits and what other runs landed since its T0).

Through every test the index, HEAD and the refs outside ``refs/tidegate/`` stay
byte-identical, and the user's staged, unstaged and untracked work survives.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests._pool import pool_paths, remove_pool
from tests.conftest import Repo, tidegate_cli

N = 8
DEADLINE_S = 120.0
_LAUNCHED: list[subprocess.Popen[bytes]] = []


@pytest.fixture(autouse=True)
def _reap_launched() -> Iterator[None]:
    """A failing test leaves its runs' pipes open; unreaped, they fail whichever test is
    running when they are collected (an unclosed-file warning). Kill and close them here."""
    yield
    while _LAUNCHED:
        proc = _LAUNCHED.pop()
        if proc.poll() is None:
            proc.kill()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        proc.wait()


def _lines(tag: str, count: int = 12) -> str:
    return "".join(f"{tag} line {i}\n" for i in range(count))


@pytest.fixture
def shared(repo: Repo) -> Repo:
    """Eight committed files, then the user's own work on top: a staged file, an unstaged
    edit in a file the runs change too (far from their lines), an untracked file."""
    for i in range(N):
        repo.write(f"f{i}.txt", _lines(f"f{i}"))
    repo.write("shared.txt", _lines("shared", 40))
    repo.write("README.md", "# shared\n")
    repo.commit_all("initial")
    repo.write("README.md", "# shared (staged by the user)\n")
    repo.git("add", "README.md")
    repo.write("shared.txt", repo.read("shared.txt").replace("shared line 20", "USER line 20"))
    repo.write("notes.txt", "untracked, the user's\n")
    return repo


def _guarded(repo: Repo) -> dict[str, object]:
    """What no run may change: the index, HEAD, the refs outside refs/tidegate/."""
    refs = [
        line
        for line in repo.git("for-each-ref", "--format=%(refname) %(objectname)").splitlines()
        if not line.startswith("refs/tidegate/")
    ]
    return {
        "index": (repo.root / ".git" / "index").read_bytes(),
        "head": (repo.root / ".git" / "HEAD").read_bytes(),
        "head_commit": repo.git("rev-parse", "HEAD"),
        "refs": refs,
        "staged": repo.git("diff", "--cached"),
        "untracked": (repo.root / "notes.txt").read_bytes(),
    }


@dataclass
class Launched:
    proc: subprocess.Popen[bytes]
    go: Path | None

    def finish(self) -> tuple[int, dict[str, object]]:
        out, err = self.proc.communicate(timeout=DEADLINE_S)
        assert b"Traceback" not in err, err.decode()
        return self.proc.returncode, json.loads(out)


def _launch(
    repo: Repo,
    path: str,
    old: str,
    new: str,
    sync: Path | None = None,
    env: dict[str, str] | None = None,
    verify: str = "sleep 1",
    extra: tuple[str, ...] = (),
) -> Launched:
    """A real ``tidegate run`` editing one line. With ``sync``, its VERIFY announces itself
    in ``sync/<name>.ready`` and waits for ``sync/<name>.go``."""
    go = None
    if sync is not None:
        name = f"{path}-{new}".replace("/", "_").replace(" ", "_")
        ready, go = sync / f"{name}.ready", sync / f"{name}.go"
        verify = (
            f"touch {shlex.quote(str(ready))}; "
            f"while [ ! -f {shlex.quote(str(go))} ]; do sleep 0.02; done"
        )
    objective = f"edit-file: {path}\nreplace: {old}\nwith: {new}\n"
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "tidegate", "run", "--repo", str(repo.root),
            "--objective", objective, "--verify", verify, "--verify-timeout", "60",
            # uncontained: the verify command talks to the test through files outside the
            # shadow; what is tested is how the runs share the repository
            "--containment", "none", "--max-attempts", "1", *extra, "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    _LAUNCHED.append(proc)
    return Launched(proc, go)


def _wait_for(path: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not path.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the run ended before VERIFY: {out.decode()} {err.decode()}")
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def _ready(launched: Launched) -> Path:
    assert launched.go is not None
    return launched.go.with_suffix(".ready")


def test_eight_runs_on_disjoint_files_all_land(shared: Repo) -> None:
    before = _guarded(shared)
    runs = [_launch(shared, f"f{i}.txt", f"f{i} line 3", f"RUN{i} line 3") for i in range(N)]
    results = [r.finish() for r in runs]
    for code, report in results:
        assert code == 0, report["message"]
        assert report["status"] == "succeeded"
    for i in range(N):
        assert shared.read(f"f{i}.txt") == _lines(f"f{i}").replace(f"f{i} line 3", f"RUN{i} line 3")
    assert _guarded(shared) == before
    assert "USER line 20" in shared.read("shared.txt")
    # Each landed once, in an order; a run names exactly the runs that landed between its
    # T0 and its own landing, and those all landed before it.
    landings = {str(r["run_id"]): r["landing"] for _, r in results}
    order = sorted(landings, key=lambda run: landings[run]["seq"])  # type: ignore[index]
    assert sorted(lan["seq"] for lan in landings.values()) == list(range(1, N + 1))  # type: ignore[index]
    for run_id, landing in landings.items():
        assert isinstance(landing, dict)
        earlier = order[: order.index(run_id)]
        assert set(landing["landed_between"]) <= set(earlier)
        assert landing["held_s"] >= 0 and landing["waited_s"] >= 0
    # `runs` shows the landing order.
    listing = tidegate_cli("runs", "--repo", str(shared.root), "--json")
    shown = {r["run_id"]: r["landed_seq"] for r in json.loads(listing.stdout)}
    assert shown == {run: landings[run]["seq"] for run in landings}  # type: ignore[index]
    text = tidegate_cli("runs", "--repo", str(shared.root)).stdout
    for run in landings:
        assert f"succeeded #{landings[run]['seq']}" in text  # type: ignore[index]
    # Nothing of the runs is left alive or behind.
    assert (
        json.loads(tidegate_cli("status", "--repo", str(shared.root), "--json").stdout)["runs"]
        == []
    )
    worktrees = shared.git("worktree", "list", "--porcelain")
    assert "tidegate-shadow-" not in worktrees


def test_concurrent_runs_each_get_a_warm_shadow_of_the_pool(shared: Repo, tmp_path: Path) -> None:
    """With the warm pool, runs that overlap each take a slot: four runs parked in VERIFY
    together make four pooled shadows; the next four together reuse all four (none
    checks out a shadow of its own), and every change lands on the dirty tree."""
    before = _guarded(shared)
    try:
        for rnd in range(2):
            sync = tmp_path / f"sync{rnd}"
            sync.mkdir()
            runs = [
                _launch(shared, f"f{i}.txt", f"f{i} line {3 + rnd}", f"R{rnd}-{i}", sync,
                        extra=("--warm-shadow",))
                for i in range(4)
            ]  # fmt: skip
            for run in runs:
                _wait_for(_ready(run), run.proc)
            for run in runs:
                assert run.go is not None
                run.go.touch()
            results = [run.finish() for run in runs]
            for code, report in results:
                assert code == 0, report["message"]
                reused = any("reused the warm shadow" in n for n in report["notes"])  # type: ignore[union-attr]
                assert reused == (rnd == 1), report["notes"]
            slots = pool_paths(shared)
            assert sorted(slots) == [0, 1, 2, 3]
            assert len(set(slots.values())) == 4
            listed = shared.git("worktree", "list", "--porcelain")
            assert "tidegate-shadow-" not in listed and listed.count("tidegate-pool-") == 4
        for i in range(4):
            assert f"R0-{i}" in shared.read(f"f{i}.txt") and f"R1-{i}" in shared.read(f"f{i}.txt")
        assert _guarded(shared) == before
    finally:
        remove_pool(shared)


def test_overlapping_runs_merge_or_conflict_and_the_user_wins(shared: Repo, tmp_path: Path) -> None:
    """Four runs on shared.txt, parked in VERIFY together: two change lines far apart
    (both land, merged), two change the same line (the second to land conflicts, writes
    nothing and explains in .rej); the user edits the file meanwhile and keeps the edit."""
    sync = tmp_path / "sync"
    sync.mkdir()
    before = _guarded(shared)
    far_a = _launch(shared, "shared.txt", "shared line 5", "RUN-A line 5", sync)
    far_b = _launch(shared, "shared.txt", "shared line 35", "RUN-B line 35", sync)
    same_c = _launch(shared, "shared.txt", "shared line 10", "RUN-C line 10", sync)
    same_d = _launch(shared, "shared.txt", "shared line 10", "RUN-D line 10", sync)
    runs = [far_a, far_b, same_c, same_d]
    for run in runs:
        _wait_for(_ready(run), run.proc)
    # All four are verifying at once; the user edits the same file meanwhile.
    status = json.loads(tidegate_cli("status", "--repo", str(shared.root), "--json").stdout)
    assert sorted(r["pid"] for r in status["runs"]) == sorted(r.proc.pid for r in runs)
    assert {r["phase"] for r in status["runs"]} == {"VERIFY"}
    shared.write("shared.txt", shared.read("shared.txt").replace("shared line 28", "USER 28"))
    results = []
    for run in runs:  # landing order: A, B, C, D
        assert run.go is not None
        run.go.touch()
        results.append(run.finish())
    (code_a, a), (code_b, b), (code_c, c), (code_d, d) = results
    assert (code_a, code_b, code_c) == (0, 0, 0), [r["message"] for _, r in results]
    assert code_d == 3 and d["status"] == "conflict"
    assert d["applied_files"] == [] and d["rejects"]
    rej = Path(d["rejects_dir"]) / "shared.txt.rej"  # type: ignore[arg-type]
    assert "RUN-D line 10" in rej.read_text()
    text = shared.read("shared.txt")
    for kept in ("RUN-A line 5", "RUN-B line 35", "RUN-C line 10", "USER line 20", "USER 28"):
        assert kept in text
    assert "RUN-D" not in text
    # D's record names the runs that landed between its T0 and its landing.
    assert d["landing"]["landed_between"] == [a["run_id"], b["run_id"], c["run_id"]]
    assert _guarded(shared) == before


def test_rebase_reapplies_on_a_fresh_t0_and_lands(shared: Repo, tmp_path: Path) -> None:
    """Two runs change adjacent lines of one file: a three-way merge calls that a conflict.
    With --rebase the second re-applies its proposal on a fresh T0 (which holds the first
    run's change), verifies again, and lands."""
    sync = tmp_path / "sync"
    sync.mkdir()
    first = _launch(shared, "f1.txt", "f1 line 4", "FIRST line 4", sync)
    second = _launch(shared, "f1.txt", "f1 line 5", "SECOND line 5", sync, extra=("--rebase",))
    for run in (first, second):
        _wait_for(_ready(run), run.proc)
    assert first.go is not None and second.go is not None
    first.go.touch()
    code1, r1 = first.finish()  # landed first; the second's T0 predates it
    second.go.touch()
    code2, r2 = second.finish()
    assert code1 == 0, r1["message"]
    assert code2 == 0, r2["message"]
    assert r2["rebased_from"], r2
    text = shared.read("f1.txt")
    assert "FIRST line 4" in text and "SECOND line 5" in text


def test_killed_runs_are_recovered_while_others_run(shared: Repo, tmp_path: Path) -> None:
    """One run dies in the middle of its apply-back (a journal is left, one file written),
    one dies in VERIFY; `recover` runs while two others are still verifying: it finishes
    the dead apply-back, removes the dead runs' shadows and scratch, and leaves the live
    runs alone, which then land."""
    sync = tmp_path / "sync"
    sync.mkdir()
    before = _guarded(shared)
    live = [_launch(shared, f"f{i}.txt", f"f{i} line 7", f"LIVE{i} line 7", sync) for i in (1, 2)]
    for run in live:
        _wait_for(_ready(run), run.proc)
    in_verify = _launch(shared, "f3.txt", "f3 line 7", "DEAD3 line 7", sync)
    _wait_for(_ready(in_verify), in_verify.proc)
    mid_write = _launch(
        shared,
        "f4.txt",
        "f4 line 7",
        "HALF4 line 7",
        env={"TIDEGATE_FAULT": "apply_back.after_write:1"},
    )
    mid_write.proc.communicate(timeout=DEADLINE_S)
    assert mid_write.proc.returncode == -signal.SIGKILL
    in_verify.proc.send_signal(signal.SIGKILL)
    in_verify.proc.communicate(timeout=DEADLINE_S)
    live_shadows = {
        r["run_id"]: r
        for r in json.loads(tidegate_cli("status", "--repo", str(shared.root), "--json").stdout)[
            "runs"
        ]
    }
    assert len(live_shadows) == 2  # the dead ones are not listed
    rec = tidegate_cli("recover", "--repo", str(shared.root), "--json")
    assert rec.returncode == 0, rec.stdout + rec.stderr
    summary = json.loads(rec.stdout)
    assert [j["action"] for j in summary["journals"]] == ["completed"]
    assert summary["killed_groups"]  # the dead run's uncontained verify command
    assert len(summary["removed_shadows"]) >= 1  # the run killed in VERIFY
    assert shared.read("f4.txt").count("HALF4 line 7") == 1  # finished, exactly once
    for run in live:
        assert run.go is not None
        run.go.touch()
        code, report = run.finish()
        assert code == 0, report["message"]
    for i in (1, 2):
        assert f"LIVE{i} line 7" in shared.read(f"f{i}.txt")
    assert "DEAD3" not in shared.read("f3.txt")
    assert _guarded(shared) == before


@pytest.mark.slow
@pytest.mark.parametrize("round_", range(int(os.environ.get("TIDEGATE_CONCURRENCY_ROUNDS", "3"))))
def test_rounds_of_concurrent_runs_with_random_kills(shared: Repo, round_: int) -> None:
    """Eight runs at once, two of them SIGKILLed at a random moment, then `recover`; the
    survivors land, the killed ones leave nothing half-written, the user's work stays. A
    victim killed in the middle of its own landing leaves its journal: every landing after
    it refuses, writing nothing, until `recover` has dealt with it (as designed)."""
    rng = random.Random(round_)
    before = _guarded(shared)
    runs = [
        _launch(shared, f"f{i}.txt", f"f{i} line 3", f"RUN{i} line 3", verify="sleep 0.5")
        for i in range(N)
    ]
    victims = set(rng.sample(range(N), 2))
    time.sleep(rng.uniform(0.2, 2.5))
    for i in victims:
        runs[i].proc.send_signal(signal.SIGKILL)
    refused = []
    for i, run in enumerate(runs):
        if i in victims:
            run.proc.communicate(timeout=DEADLINE_S)
            continue
        code, report = run.finish()
        if code != 0:
            assert "interrupted by a crash is pending" in report["message"], report["message"]
            refused.append(i)
    rec = tidegate_cli("recover", "--repo", str(shared.root), "--json")
    assert rec.returncode == 0, rec.stdout + rec.stderr
    if refused:
        assert json.loads(rec.stdout)["journals"], "a landing refused, but no journal was left"
    for i in range(N):
        text = shared.read(f"f{i}.txt")
        original = _lines(f"f{i}")
        assert text in (original, original.replace(f"f{i} line 3", f"RUN{i} line 3"))
        if i in refused:
            assert text == original  # refused: nothing of it written
        elif i not in victims:
            assert f"RUN{i} line 3" in text
    assert _guarded(shared) == before
    assert "tidegate-shadow-" not in shared.git("worktree", "list", "--porcelain")
