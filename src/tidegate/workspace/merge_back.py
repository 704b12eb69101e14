"""APPLY_BACK planning: three-way merge of every changed path, before any write.

For each path the verified change touched we have three versions: base (T0), ours (the
user's main work tree now) and theirs (the shadow after the change). The outcome per path:

* ours == base          -> take theirs (write, create or delete)
* ours == theirs        -> nothing to do
* all three are text    -> ``git merge-file``; a clean merge is written, markers are a conflict
* anything else         -> conflict (both sides created, deleted or changed a binary, ...)

The git index is never read for writing, never written. Staged content stays staged
because only work-tree files change. Untracked and ignored files are never in a change
set unless the change itself created the path, and then an existing file is a conflict.
"""

from __future__ import annotations

import difflib
import hashlib
import os
from pathlib import Path

import msgspec
from msgspec.structs import replace

from tidegate.git.command import Git
from tidegate.workspace.changes import PathChange, Version, worktree_forms
from tidegate.workspace.fs import Entry, UnsafePathError, WorkspaceFS, creation_mode

_CREATED = "you created this path since the run started, with different content"


class PlannedOp(msgspec.Struct, frozen=True):
    """One write of an apply-back: ``new`` None means delete."""

    path: str
    old: Entry
    new: Entry
    merged: bool = False


class Conflict(msgspec.Struct, frozen=True):
    path: str
    reason: str
    rejected_diff: str


class MergePlan(msgspec.Struct):
    ops: list[PlannedOp] = msgspec.field(default_factory=list)
    conflicts: list[Conflict] = msgspec.field(default_factory=list)
    unchanged: list[str] = msgspec.field(default_factory=list)
    forms: dict[tuple[str, str], bytes] = msgspec.field(default_factory=dict)
    """Both sides of every change in work-tree form (``worktree_forms``), for the report."""


IGNORED_IN_THE_WAY = (
    "a file git ignores is already at this path; ignored files are not in the T0 snapshot, "
    "so the change was made without it. It is left as it is: move it away (or stop "
    "ignoring it) and run again"
)


def plan_merge(git: Git, fs: WorkspaceFS, changes: list[PathChange], scratch: Path) -> MergePlan:
    """Compute every path's outcome. Pure with respect to the work tree: only reads."""
    forms = worktree_forms(git, changes)
    plan = MergePlan(forms=forms)
    for change in changes:
        _plan_one(git, fs, change, scratch, plan, forms)
    _name_ignored_files(git, plan)
    return plan


def _name_ignored_files(git: Git, plan: MergePlan) -> None:
    """A path the change creates that holds a file now is the user's new file, unless git
    ignores it: then it may well have been there all along, unseen, since T0 leaves
    ignored files out. Say so instead of blaming an edit made during the run."""
    created = [c.path for c in plan.conflicts if c.reason == _CREATED]
    if not created:
        return
    listing = b"".join(os.fsencode(p) + b"\0" for p in created)
    res = git.run("check-ignore", "-z", "--stdin", input=listing, check=False)
    ignored = {os.fsdecode(p) for p in res.stdout.split(b"\0") if p}
    plan.conflicts = [
        replace(c, reason=IGNORED_IN_THE_WAY) if c.reason == _CREATED and c.path in ignored else c
        for c in plan.conflicts
    ]


def _plan_one(
    git: Git,
    fs: WorkspaceFS,
    change: PathChange,
    scratch: Path,
    plan: MergePlan,
    forms: dict[tuple[str, str], bytes],
) -> None:
    path = change.path
    base = _materialise(forms, change.before, path)
    theirs = _materialise(forms, change.after, path)
    rejected = _rejected_diff(path, base, theirs)

    def conflict(reason: str) -> None:
        if own := tidegate_artefact(path):
            # Not the user's doing: say whose file is in the way.
            reason = f"the path holds {own}, not an edit of yours; move it away and run again"
        plan.conflicts.append(Conflict(path, reason, rejected))

    if any(v is not None and v.mode == "160000" for v in (change.before, change.after)):
        conflict("submodule changes are not applied back")
        return
    try:
        ours = fs.read(path)
    except UnsafePathError as exc:
        conflict(f"unsafe path in the work tree: {exc}")
        return

    # "Untouched since T0" needs the very bytes T0's version checks out as: a clean filter
    # can make different bytes hash to the same blob, and those bytes are the user's.
    if _same(git, fs, ours, change.before, base, path, exact=True):
        if theirs.kind == "missing":
            plan.ops.append(PlannedOp(path, ours, Entry("missing")))
        else:
            plan.ops.append(PlannedOp(path, ours, _with_mode(theirs, ours)))
        return
    if _same(git, fs, ours, change.after, theirs, path):
        plan.unchanged.append(path)
        return
    outcome = _both_changed(git, path, ours, base, theirs, scratch)
    if outcome is None:
        plan.unchanged.append(path)
    elif isinstance(outcome, str):
        conflict(outcome)
    else:
        plan.ops.append(outcome)


def _both_changed(
    git: Git, path: str, ours: Entry, base: Entry, theirs: Entry, scratch: Path
) -> PlannedOp | str | None:
    """The user and the change both changed ``path`` since T0: the op that merges them,
    why they conflict, or None when the merge leaves the user's version as it is."""
    if ours.kind == "missing":
        return "you deleted this file since the run started; the change edits it"
    if base.kind == "missing":
        return _CREATED  # or an ignored file T0 left out: _name_ignored_files
    if theirs.kind == "missing":
        return "you changed this file since the run started; the change deletes it"
    if not (ours.kind == base.kind == theirs.kind == "file"):
        return "changed on both sides and not a regular file on every side"
    assert ours.content is not None and base.content is not None and theirs.content is not None
    if base.content == theirs.content:
        # The change only flipped the executable bit; the user edited the content.
        new_exec = theirs.executable
        return PlannedOp(path, ours, _file(ours.content, ours, new_exec))
    if any(b"\0" in c[:8000] for c in (ours.content, base.content, theirs.content)):
        return "binary file changed both by you and by the change"
    merged, clean = _merge_file(git, ours.content, base.content, theirs.content, scratch)
    if not clean:
        return "your edits since the run started overlap the change"
    new_exec = theirs.executable if ours.executable == base.executable else ours.executable
    if merged == ours.content and new_exec == ours.executable:
        return None
    return PlannedOp(path, ours, _file(merged, ours, new_exec), merged=True)


def tidegate_artefact(path: str) -> str | None:
    """What tidegate itself keeps at ``path`` (its ``.tidegate/`` directory of rejects and
    recovered files, or a temp file of an atomic write), or None for the user's paths."""
    parts = path.split("/")
    if parts[0] == ".tidegate":
        kind = {"rejects": "a .rej file", "recovered": "a recovered version"}.get(
            parts[1] if len(parts) > 1 else "", "a file"
        )
        return f"{kind} tidegate wrote under .tidegate/"
    if any(p.startswith(".tidegate-tmp-") for p in parts):
        return "a temporary file an interrupted tidegate write left"
    return None


def _materialise(forms: dict[tuple[str, str], bytes], version: Version | None, path: str) -> Entry:
    """A T0 or shadow version of a path in work-tree form (filters and eol applied)."""
    if version is None:
        return Entry("missing")
    if version.mode == "120000":
        return Entry("symlink", forms[(version.blob, path)])
    if version.mode == "160000":
        return Entry("other")
    mode = 0o755 if version.executable else 0o644
    return Entry("file", forms[(version.blob, path)], mode)


def _same(
    git: Git,
    fs: WorkspaceFS,
    ours: Entry,
    version: Version | None,
    wt: Entry,
    path: str,
    exact: bool = False,
) -> bool:
    """Is the work tree's entry the given version? With ``exact``, files must hold its
    work-tree bytes; otherwise they compare the way git does: by the blob their cleaned
    content would hash to, plus the executable bit."""
    if version is None or wt.kind == "missing":
        return ours.kind == "missing"
    if ours.kind != wt.kind:
        return False
    if ours.kind == "symlink":
        return ours.content == wt.content
    if ours.kind != "file":
        return False
    if ours.executable != version.executable:
        return False
    if ours.content == wt.content:
        return True
    return not exact and git.hash_worktree_file(fs.root / path, path) == version.blob


def _with_mode(theirs: Entry, ours: Entry) -> Entry:
    if theirs.kind != "file":
        return theirs
    assert theirs.content is not None
    return _file(theirs.content, ours, theirs.executable)


def _file(content: bytes, ours: Entry, executable: bool) -> Entry:
    """A file entry keeping the user's permission bits, with the executable bits as decided."""
    if ours.kind == "file" and ours.mode is not None:
        mode = ours.mode
        if executable and not ours.executable:
            mode |= (mode & 0o444) >> 2  # grant x where r is granted, as chmod +x does
        elif not executable and ours.executable:
            mode &= ~0o111
    else:
        mode = creation_mode(executable)
    return Entry("file", content, mode)


def _merge_file(
    git: Git, ours: bytes, base: bytes, theirs: bytes, scratch: Path
) -> tuple[bytes, bool]:
    digest = hashlib.sha256(ours + base + theirs).hexdigest()[:16]
    files = []
    for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
        f = scratch / f"merge-{digest}.{name}"
        f.write_bytes(data)
        files.append(str(f))
    res = git.run(
        "merge-file",
        "-p",
        "-L",
        "yours",
        "-L",
        "T0",
        "-L",
        "tidegate",
        *files,
        check=False,
    )
    for name in files:
        Path(name).unlink(missing_ok=True)
    return res.stdout, res.returncode == 0


def _rejected_diff(path: str, base: Entry, theirs: Entry) -> str:
    """The change for one path as a unified diff, for the ``.rej`` file."""
    if base.kind not in ("file", "missing") or theirs.kind not in ("file", "missing"):
        return f"# {path}: {base.kind} -> {theirs.kind} (not shown as text)\n"
    old = base.content or b""
    new = theirs.content or b""
    if b"\0" in old[:8000] or b"\0" in new[:8000]:
        return (
            f"# {path}: binary file, sha256 {hashlib.sha256(old).hexdigest()} -> "
            f"{hashlib.sha256(new).hexdigest()}\n"
        )
    a = "/dev/null" if base.kind == "missing" else f"a/{path}"
    b = "/dev/null" if theirs.kind == "missing" else f"b/{path}"
    lines = difflib.unified_diff(
        _lines(old.decode("utf-8", "surrogateescape")),
        _lines(new.decode("utf-8", "surrogateescape")),
        a,
        b,
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _lines(text: str) -> list[str]:
    """Lines split at "\n" only, each keeping its newline (and any \r before it)."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines
