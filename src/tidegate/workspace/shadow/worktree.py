"""A shadow worktree: a linked git work tree at T0, under the OS temp dir, where proposals
are applied and verified; what tidegate wrote in it, and its undo. Destructive git (reset
--hard, clean) only ever runs here.

A run's shadow and scratch directory are claimed (``workspace.claims``) before they are
made, so that recovery removes only those of dead runs; a shadow half-made when an
interrupt arrives is removed on the way out, even if git left it locked."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from tidegate.git.command import Git
from tidegate.workspace.changes import PathChange
from tidegate.workspace.claims import claim
from tidegate.workspace.lock import PoolLock, pool_name
from tidegate.workspace.repo import Repository
from tidegate.workspace.shadow.content import mismatched_paths
from tidegate.workspace.shadow.touched import (
    OWN_DIR,
    TOUCHED,
    UNDO_LIMIT,
    Marks,
    Stamp,
    Touched,
    outermost,
    plain_changes,
    record_touched,
)
from tidegate.workspace.shadow.worktrees import (
    SHADOW_PREFIX,
    add_worktree,
    discard,
    shadow_git_dir,
)
from tidegate.workspace.tree_walk import root_tree


class ShadowWorktree:
    def __init__(
        self, repo: Repository, path: Path, t0_commit: str, pooled: bool = False, slot: int = 0
    ) -> None:
        self.repo = repo
        self.path = path
        self.t0 = t0_commit
        self.admin = shadow_git_dir(repo, path)
        # core.splitIndex: git keeps the shadow's index split, and re-splits it when most
        # entries changed (a fresh checkout's files are all "racily clean" once refreshed);
        # unset, a split index that grew whole is never split again.
        self.git = Git(path, git_dir=self.admin, work_tree=path, config=("core.splitIndex=true",))
        self.pooled = pooled
        self.slot = slot
        """The pool slot a pooled shadow is kept in (``workspace.lock.pool_name``)."""
        self.pool_lock: PoolLock | None = None
        """Held while this run uses the warm shadow (released with the shadow)."""
        self.reused = False
        self.prepared: tuple[int, int, bytes] | None = None
        """``identity()`` when the shadow was made or reset: VERIFY checks it is unchanged."""
        self.undone: int | None = None
        """How many paths the pool's cleaning undid; None: it cleaned in full."""
        self.touched: Touched | None = None
        """What tidegate wrote in the work tree since it was exactly HEAD; None: not known
        (a command wrote in it directly, or nobody cleaned it yet)."""

    def release(self, keep: bool) -> None:
        """Remove the shadow, unless it is the warm pooled one or ``keep`` asks to keep it.
        The pooled one keeps what this run wrote in it, for the next run's undo."""
        if self.pooled:
            try:
                self._record_touched()
            finally:
                if self.pool_lock is not None:
                    self.pool_lock.release()
                    self.pool_lock = None
        elif not keep:
            self.remove()

    @classmethod
    def create(cls, repo: Repository, t0_commit: str, run_id: str) -> ShadowWorktree:
        path = Path(tempfile.mkdtemp(prefix=f"{SHADOW_PREFIX}{run_id}-"))
        try:
            claim(repo, run_id, shadow=str(path))
            add_worktree(repo, path, t0_commit)
        except BaseException:
            discard(repo, path)
            raise
        shadow = cls(repo, path, t0_commit)
        shadow.prepared = shadow.identity()
        shadow.mark_clean()
        return shadow

    def identity(self) -> tuple[int, int, bytes]:
        """What makes this the shadow tidegate prepared: the directory's device and inode,
        and its ``.git`` link to its own admin directory (which must still exist)."""
        st = os.stat(self.path)
        link = (self.path / ".git").read_bytes()
        # Relative to the shadow when git writes relative links (worktree.useRelativePaths).
        admin = self.path / os.fsdecode(link.removeprefix(b"gitdir:").strip())
        if not (admin / "HEAD").is_file():
            raise FileNotFoundError(f"{admin}: the shadow's git directory is gone")
        return st.st_dev, st.st_ino, link

    def lost(self, changes: list[PathChange]) -> str | None:
        """Why this is no longer the shadow holding the candidate ``changes`` (it vanished,
        was replaced, or its files differ), or None when it still is."""
        try:
            if self.prepared is not None and self.identity() != self.prepared:
                return "was replaced by another directory"
        except OSError:
            return "vanished"
        wrong = self.mismatched_paths(changes)
        if wrong:
            return f"no longer holds the candidate at {', '.join(wrong[:5])}"
        return None

    def mismatched_paths(self, changes: list[PathChange]) -> list[str]:
        """Changed paths whose content or mode in the shadow is not the candidate's (see
        ``content.mismatched_paths``: only those paths hashed, the index never written)."""
        return mismatched_paths(self.git, self.path, changes)

    # -- what tidegate writes, and its undo ------------------------------------------------

    def stamp(self) -> Stamp | None:
        try:
            head = (self.admin / "HEAD").read_bytes()
            st = os.stat(self.admin / "index")
        except OSError:
            return None
        return head, st.st_ino, st.st_size, st.st_mtime_ns

    def head_file(self) -> str | None:
        """The commit a detached HEAD names, read from its file; None: not that shape."""
        try:
            text = (self.admin / "HEAD").read_text("ascii").strip()
        except (OSError, UnicodeError):
            return None
        return (
            text if len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text) else None
        )

    def marks(self) -> Marks | None:
        try:
            found = [("", os.lstat(self.path).st_mtime_ns)]
            with os.scandir(self.path) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        found.append((entry.name, entry.stat(follow_symlinks=False).st_mtime_ns))
        except OSError:
            return None
        return sorted(found)

    def mark_clean(self) -> None:
        """The work tree is exactly HEAD now: from here on, what is written is tracked."""
        self.touched = Touched(self.stamp())

    def unknown(self) -> None:
        """Something is about to write the work tree that tidegate cannot follow (a command
        run on it directly): the next cleaning must be the full one."""
        self.touched = None

    def will_write(self, changes: list[PathChange]) -> None:
        """Before APPLY writes ``changes`` (T0 -> candidate, T0 being HEAD): record them, and
        for a new path the topmost directory above it that HEAD's work tree lacks."""
        touched = self.touched
        if touched is None:
            return
        for change in changes:
            sides = [v for v in (change.before, change.after) if v is not None]
            if any(v.mode == "160000" for v in sides):
                self.unknown()  # a submodule's work tree is not ours to undo path by path
                return
            if change.before is not None:
                touched.tracked.add(change.path)
            else:
                self.will_create(change.path)

    def will_create(self, rel: str) -> None:
        """Before tidegate creates ``rel``, a path HEAD lacks (its parent dirs made as needed)."""
        touched = self.touched
        if touched is None:
            return
        touched.untracked.add(rel)
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            above = "/".join(parts[:depth])
            try:
                is_dir = stat.S_ISDIR(os.lstat(self.path / above).st_mode)
            except OSError:
                is_dir = False
            if not is_dir:
                touched.untracked.add(above)
                return

    def reset(self) -> int | None:
        """Back to T0, whatever state the last attempt left (conflicts, untracked files):
        by undoing what tidegate wrote when that is known (returns how many paths), else
        in full (returns None)."""
        touched = self.touched
        if touched is not None and self.undo(touched):
            return len(touched)
        self.git.run("reset", "--quiet", "--hard", self.t0)
        self.git.run("clean", "-ffdxq")
        self.mark_clean()
        return None

    def undo(self, touched: Touched) -> bool:
        """Back to HEAD by ``touched`` alone: what is beneath its paths that git does not
        track goes (``clean`` limited to them, tidegate's own directory included), its
        tracked paths get HEAD's version. False, with nothing worse than before, when that
        is not certain to give HEAD: the caller then cleans in full."""
        if touched.stamp is None or touched.stamp != self.stamp() or len(touched) > UNDO_LIMIT:
            return False
        if touched.marks is not None and touched.marks != self.marks():
            return False
        if self._needs_clean(touched):
            specs = outermost(touched.tracked | touched.untracked | {OWN_DIR})
            cleaned = self.git.run(
                "--literal-pathspecs", "clean", "-ffdxq", "--", *specs, check=False
            )
            if cleaned.returncode != 0:
                return False
        restore = sorted(touched.tracked)
        if os.path.lexists(self.path / OWN_DIR):
            restore.append(OWN_DIR)  # it holds tracked files (a committed policy)
        if restore and not self._restore([os.fsencode(p) for p in restore]):
            return False
        self.mark_clean()
        return True

    def _needs_clean(self, touched: Touched) -> bool:
        """Whether the undo's ``clean`` could remove anything: not when APPLY wrote no path
        HEAD lacks (a file that became a directory has new paths beneath it) and
        tidegate's own directory is absent, since git never cleans a tracked path. The
        clean reads the whole index; an edit of tracked files, the usual run, needs none."""
        return bool(touched.untracked) or os.path.lexists(self.path / OWN_DIR)

    def _record_touched(self) -> None:
        """Leave ``touched`` for the next run's cleaning, when it is known and still true."""
        touched = self.touched
        marks = self.marks()
        if touched is None or touched.stamp is None or touched.stamp != self.stamp() or not marks:
            (self.repo.runtime_dir / pool_name(self.slot, TOUCHED)).unlink(missing_ok=True)
            return
        record_touched(self.repo, self.slot, self.path, touched, touched.stamp, marks)

    def clean_to_head(self) -> None:
        """Back to the shadow's own HEAD, whatever a run left (edits, staged or unmerged
        entries, untracked and ignored files). Needs no T0, so it can run while T0 is taken.

        The clean always runs (it removes every untracked and ignored file and directory,
        empty ones included). Then a read-only look at the tracked files (``git status``):
        after most runs it reports only the last candidate's paths, which get their HEAD
        version back (``checkout --no-overlay``: index and file, a path HEAD lacks removed)
        instead of the reset, whose full rewrite of the index costs twice the look. Anything
        else it reports (unmerged entries, submodules, output it does not know) gets the
        full reset."""
        self.git.run("clean", "-ffdxq")
        listing = self.git.run(
            "status",
            "--porcelain=v2",
            "-z",
            "--untracked-files=no",
            "--ignore-submodules=none",
            "--no-renames",
            check=False,
        )
        if listing.returncode == 0:
            paths = plain_changes(listing.stdout)
            if paths == [] or (paths is not None and self._restore(paths)):
                self.mark_clean()
                return
        self.git.run("reset", "--quiet", "--hard", "HEAD")
        self.git.run("clean", "-ffdxq")  # what the reset un-tracked (files staged as new)
        self.mark_clean()

    def _restore(self, paths: list[bytes]) -> bool:
        """``paths`` (tracked, changed) back to HEAD's version; False: git refused."""
        result = self.git.run(
            "--literal-pathspecs",
            "checkout",
            "--quiet",
            "--no-overlay",
            "HEAD",
            "--pathspec-from-file=-",
            "--pathspec-file-nul",
            input=b"".join(p + b"\0" for p in paths),
            check=False,
        )
        return result.returncode == 0

    def move_to(self, t0_commit: str) -> None:
        """From a clean checkout of HEAD (``clean_to_head``) to ``t0_commit``, rewriting only
        the paths whose content differs between the two trees: a two-way merge, so the rest
        of the work tree and its stat cache stay as they are."""
        head = self.head_file()
        # Through the repository's kept reader when there is one (the shadow shares its
        # objects): no process; else, or for a HEAD a command made symbolic, rev-parse.
        known = (
            (root_tree(self.repo.git, head), root_tree(self.repo.git, t0_commit)) if head else None
        )
        if known is not None and known[0] is not None and known[1] is not None:
            head_tree, t0_tree = known
        else:
            head_tree, t0_tree = self.git.out(
                "rev-parse", "HEAD^{tree}", f"{t0_commit}^{{tree}}"
            ).split()
        if head_tree != t0_tree:
            self.git.run("read-tree", "-m", "-u", "HEAD", t0_commit)
        # --no-deref: HEAD is detached at T0 even if a command made it a symbolic ref.
        self.git.run("update-ref", "--no-deref", "HEAD", t0_commit)
        self.t0 = t0_commit
        if self.touched is not None:
            self.mark_clean()  # git's state moved with the work tree: still exactly HEAD

    def remove(self) -> None:
        if self.pooled:
            (self.repo.runtime_dir / pool_name(self.slot)).unlink(missing_ok=True)
            (self.repo.runtime_dir / pool_name(self.slot, TOUCHED)).unlink(missing_ok=True)
        discard(self.repo, self.path)
