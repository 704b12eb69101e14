"""What tidegate keeps of finished runs in the user's object store: one ref.

While a run runs, its objects are pinned by refs of its own under
``refs/tidegate/runs/<run-id>/`` (T0's two commits, the request and proposal blobs, the
candidate trees, the result commit). When it ends they are folded into
``refs/tidegate/keep``: ONE parentless commit whose tree has a directory per retained run
(``<run-id>/t0``, ``index``, ``result``: trees; ``request``, ``attempt-N/proposal``:
blobs; ``attempt-N/candidate``: trees), so ``git log --all`` and ``gitk --all`` show one
commit of tidegate's, not one per run. A run dropped from that tree leaves its objects
unreachable, for ``git gc`` to reclaim.

Several runs may end at once on one repository, so every move of the ref is a
compare-and-swap (``update-ref --stdin``: the keep ref from the value read, each per-run
ref deleted only at the value read) in one transaction, retried when another process
moved it first. Only the runs named are folded; the refs of a run nobody names (a live
one, a paused one) are left as they are.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection

import msgspec

from tidegate.errors import GitError
from tidegate.workspace.loose import write_commit, write_tree
from tidegate.workspace.repo import Repository
from tidegate.workspace.tree_walk import read_tree

KEEP_REF = "refs/tidegate/keep"
RUNS_PREFIX = "refs/tidegate/runs"
_TRIES = 8
_TREE = "40000"
_MODES = {"tree": "40000", "blob": "100644"}


class Kept(msgspec.Struct):
    """The keep commit and its runs, and the per-run refs, as read at one moment."""

    commit: str | None
    runs: dict[str, str]
    """run id -> the tree of what is kept of it."""
    refs: dict[str, dict[str, tuple[str, str, str]]] = msgspec.field(default_factory=dict)
    """run id -> {name under the run: (the ref's value, the object to keep, its mode)}:
    a commit is kept as its tree."""


class KeepChange(msgspec.Struct):
    folded: list[str] = msgspec.field(default_factory=list)
    dropped: list[str] = msgspec.field(default_factory=list)
    refs_deleted: int = 0


def read_kept(repo: Repository) -> Kept:
    """The keep commit's runs and every per-run ref (one for-each-ref; the keep tree read
    as ``_kept_runs`` says)."""
    fmt = "%(refname)%00%(objectname)%00%(objecttype)%00%(tree)"
    out = repo.git.run("for-each-ref", f"--format={fmt}", KEEP_REF, RUNS_PREFIX).text
    commit = tree = None
    refs: dict[str, dict[str, tuple[str, str, str]]] = {}
    for line in out.splitlines():
        name, oid, kind, peeled = line.split("\0")
        if name == KEEP_REF:
            commit, tree = oid, peeled
            continue
        run_id, _, rest = name[len(RUNS_PREFIX) + 1 :].partition("/")
        if rest:
            kept = (oid, peeled, _TREE) if kind == "commit" else (oid, oid, _MODES.get(kind, ""))
            refs.setdefault(run_id, {})[rest] = kept
    return Kept(commit, _kept_runs(repo, tree) if tree else {}, refs)


def _kept_runs(repo: Repository, tree: str) -> dict[str, str]:
    """run id -> its directory's tree in the keep commit's ``tree``: read through the
    run's kept ``cat-file`` when there is one, else by one ``ls-tree``."""
    with contextlib.suppress(ValueError, IndexError):  # one that does not parse: git's word
        entries = read_tree(repo.git, tree)
        if entries is not None:
            return {name: oid for name, (mode, oid) in entries.items() if int(mode, 8) == 0o40000}
    runs: dict[str, str] = {}
    listing = repo.git.run("ls-tree", "-z", tree).text
    for entry in filter(None, listing.split("\0")):
        meta, _, run_id = entry.partition("\t")
        _, kind, oid = meta.split(" ")
        if kind == "tree":
            runs[run_id] = oid
    return runs


def kept_spec(run_id: str, name: str) -> str:
    """The revision that names ``name`` of an ended run (``git show <spec>:<path>``)."""
    return f"{KEEP_REF}:{run_id}/{name}"


def kept_object(repo: Repository, run_id: str, name: str) -> str | None:
    """The object kept as ``name`` of ``run_id`` (``t0``, ``result``: trees): from the
    run's own ref while it has one, else from the keep commit; None when neither has it
    (never kept, or pruned)."""
    for spec in (f"{RUNS_PREFIX}/{run_id}/{name}^{{tree}}", f"{KEEP_REF}:{run_id}/{name}"):
        res = repo.git.run("rev-parse", "--verify", "--quiet", spec, check=False)
        if res.returncode == 0:
            return res.text.strip()
    return None


Plan = Callable[[Kept], tuple[Collection[str], Collection[str]]]
"""What to do, decided on what was just read: (the runs to fold in, the runs to drop)."""


def update_kept(repo: Repository, plan: Plan, dry_run: bool = False) -> KeepChange:
    """Fold the per-run refs of the runs ``plan`` names first into the keep commit, and
    drop those it names second (their entry and their per-run refs), in one
    compare-and-swap transaction; when another process moved a ref first, read again,
    plan again (``plan`` sees every read) and retry."""
    for _ in range(_TRIES):
        kept = read_kept(repo)
        fold, drop = plan(kept)
        change, runs, deleted = _plan(repo, kept, set(fold), set(drop), write=not dry_run)
        if dry_run or (runs == kept.runs and not deleted):
            return change
        try:
            _commit(repo, kept.commit, runs, deleted)
        except GitError:
            continue  # another run moved the keep ref (or one of these) meanwhile: again
        return change
    raise GitError(["update-ref", KEEP_REF], 1, "the keep ref kept moving; try again")


def fold_only(*run_ids: str) -> Plan:
    return lambda _kept: (run_ids, ())


def _plan(
    repo: Repository, kept: Kept, fold: set[str], drop: set[str], write: bool = True
) -> tuple[KeepChange, dict[str, str], list[tuple[str, str]]]:
    """The change, the keep commit's runs after it and the per-run refs to delete (with
    their values); ``write``: False writes no object (a dry run)."""
    change = KeepChange()
    runs = dict(kept.runs)
    deleted: list[tuple[str, str]] = []
    for run_id, refs in sorted(kept.refs.items()):
        if run_id not in fold and run_id not in drop:
            continue
        if run_id not in drop:
            objects = {n: (mode, obj) for n, (_, obj, mode) in refs.items() if mode}
            runs[run_id] = _run_tree(repo, objects) if write else ""
            change.folded.append(run_id)
        deleted += [(f"{RUNS_PREFIX}/{run_id}/{n}", ref[0]) for n, ref in refs.items()]
    for run_id in sorted((set(runs) | set(kept.refs)) & drop):
        runs.pop(run_id, None)
        change.dropped.append(run_id)
    change.refs_deleted = len(deleted)
    return change, runs, deleted


def _run_tree(repo: Repository, objects: dict[str, tuple[str, str]]) -> str:
    """The tree of one run's kept objects (``attempt-1/proposal``: a subdirectory)."""
    top: dict[str, tuple[str, str]] = {}
    nested: dict[str, dict[str, tuple[str, str]]] = {}
    for name, entry in objects.items():
        head, _, rest = name.partition("/")
        if rest:
            nested.setdefault(head, {})[rest] = entry
        else:
            top[name] = entry
    for head, inner in nested.items():
        top[head] = (_TREE, _run_tree(repo, inner))
    return write_tree(repo, top)


def _commit(
    repo: Repository, old: str | None, runs: dict[str, str], deleted: list[tuple[str, str]]
) -> None:
    zero = "0" * len(repo.head)
    lines = [f"delete {ref}\0{value}\0" for ref, value in deleted]
    if runs:
        tree = write_tree(repo, {run_id: (_TREE, oid) for run_id, oid in runs.items()})
        message = f"tidegate: what is kept of {len(runs)} run(s) (see `tidegate gc`)"
        commit = write_commit(repo, tree, None, message)
        lines.append(f"update {KEEP_REF}\0{commit}\0{old or zero}\0")
    elif old is not None:
        lines.append(f"delete {KEEP_REF}\0{old}\0")
    repo.git.run("update-ref", "-z", "--stdin", input="".join(lines).encode())


def drop_kept(repo: Repository, run_id: str) -> KeepChange:
    """Drop what is kept of one run (its refs and its entry in the keep commit)."""
    return update_kept(repo, lambda _kept: ((), (run_id,)))
