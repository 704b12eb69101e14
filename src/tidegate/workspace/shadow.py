"""Shadow worktrees: a linked git work tree at T0, under the OS temp dir, where proposals
are applied and verified. Destructive git (reset --hard, clean) only ever runs here.

A run's shadow and scratch directory are claimed (``workspace.claims``) before they are
made, so that recovery removes only those of dead runs; a shadow half-made when an
interrupt arrives is removed on the way out, even if git left it locked."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from tidegate.errors import GitError
from tidegate.git import Git
from tidegate.text.paths import git_quoted
from tidegate.workspace.changes import PathChange
from tidegate.workspace.claims import Claim, all_claims, claim, release
from tidegate.workspace.repo import Repository
from tidegate.workspace.tree_walk import root_tree

SHADOW_PREFIX = "tidegate-shadow-"
POOL_PREFIX = "tidegate-pool-"
SCRATCH_PREFIX = "tidegate-run-"
POOL_FILE = "shadow-pool"
TOUCHED_FILE = "shadow-pool.touched"
"""Beside ``POOL_FILE``: what the pooled shadow's last run wrote in its work tree, recorded
when that run ended knowing it exactly (``Touched``); taken -- read and removed -- by the
next cleaning, so a run that dies leaves none and the next one cleans in full."""
UNDO_LIMIT = 1000
"""More touched paths than this: the full cleaning (the undo passes paths as arguments)."""
OWN_DIR = ".tidegate"
"""tidegate's own directory: the model planner keeps plan notes there in the shadow."""

Stamp = tuple[bytes, int, int, int]
"""The shadow's HEAD file and its index's (inode, size, mtime): git's state of the shadow."""
Marks = list[tuple[str, int]]
"""The mtimes of the shadow's root directory ("") and of the directories in it."""


@dataclass
class Touched:
    """Every path tidegate may have written in a shadow's work tree since the work tree
    was last exactly its HEAD: ``tracked``, paths HEAD has (checked out again by the undo),
    and ``untracked``, paths HEAD lacks and the new directories above them (removed with
    whatever is beneath). ``stamp`` is git's state of the shadow then: if anything else
    wrote its index or moved its HEAD since, the undo refuses and the full cleaning runs.
    ``marks``, taken when a run leaves the record for the next one, are a tripwire for
    files made or removed between runs at the top of the shadow: they must not change
    either. Deeper, the pool is trusted to be tidegate's alone (docs/architecture.md)."""

    stamp: Stamp | None
    tracked: set[str] = field(default_factory=set)
    untracked: set[str] = field(default_factory=set)
    marks: Marks | None = None

    def __len__(self) -> int:
        return len(self.tracked) + len(self.untracked)


class ShadowWorktree:
    def __init__(self, repo: Repository, path: Path, t0_commit: str, pooled: bool = False) -> None:
        self.repo = repo
        self.path = path
        self.t0 = t0_commit
        self.admin = shadow_git_dir(repo, path)
        # core.splitIndex: git keeps the shadow's index split, and re-splits it when most
        # entries changed (a fresh checkout's files are all "racily clean" once refreshed);
        # unset, a split index that grew whole is never split again.
        self.git = Git(path, git_dir=self.admin, work_tree=path, config=("core.splitIndex=true",))
        self.pooled = pooled
        self.reused = False
        self.prepared: tuple[int, int, bytes] | None = None
        """``identity()`` when the shadow was made or reset: VERIFY checks it is unchanged."""
        self.undone: int | None = None
        """How many paths the pool's cleaning undid; None: it cleaned in full."""
        self.touched: Touched | None = None
        """What tidegate wrote in the work tree since it was exactly HEAD; None: not known
        (a command wrote in it directly, or nobody cleaned it yet)."""

    @classmethod
    def acquire(
        cls,
        repo: Repository,
        t0_commit: str,
        run_id: str,
        pool: bool,
        warm: PoolCleaning | None = None,
    ) -> ShadowWorktree:
        """A shadow at T0: with ``pool``, the repository's warm shadow moved to T0 when there
        is a healthy one (only files that differ are rewritten), else a new worktree.

        ``warm`` is the pool's cleaning, started (``PoolCleaning.start``) while T0 was being
        taken; without it the cleaning runs here."""
        if not pool:
            return cls.create(repo, t0_commit, run_id)
        cleaning = warm if warm is not None else PoolCleaning.start(repo, background=False)
        shadow = cleaning.finish(t0_commit)
        if shadow is not None:
            return shadow
        path = Path(tempfile.mkdtemp(prefix=POOL_PREFIX))
        try:
            _add_worktree(repo, path, t0_commit)
        except BaseException:
            _discard(repo, path)
            raise
        (repo.runtime_dir / POOL_FILE).write_text(str(path) + "\n")
        shadow = cls(repo, path, t0_commit, pooled=True)
        # A split index: the kept shadow's index (one entry per tracked file) is rewritten
        # by every cleaning that restores a path; split, each rewrite writes only what
        # changed since the shared part (git keeps the two in the shadow's own git dir).
        shadow.git.run("update-index", "--split-index", check=False)
        shadow.prepared = shadow.identity()
        shadow.mark_clean()
        return shadow

    def release(self, keep: bool) -> None:
        """Remove the shadow, unless it is the warm pooled one or ``keep`` asks to keep it.
        The pooled one keeps what this run wrote in it, for the next run's undo."""
        if self.pooled:
            self._record_touched()
        elif not keep:
            self.remove()

    @classmethod
    def create(cls, repo: Repository, t0_commit: str, run_id: str) -> ShadowWorktree:
        path = Path(tempfile.mkdtemp(prefix=f"{SHADOW_PREFIX}{run_id}-"))
        try:
            claim(repo, run_id, shadow=str(path))
            _add_worktree(repo, path, t0_commit)
        except BaseException:
            _discard(repo, path)
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
        """Changed paths whose content or mode in the shadow is not the candidate's.

        Hashes only those paths (as ``git hash-object`` would, filters included) and never
        writes the shadow's index, so the cost does not grow with the repository."""
        regular = [c for c in changes if c.after is not None and c.after.is_regular]
        hashes = self._hash_files([c.path for c in regular])
        wrong: list[str] = []
        for change in changes:
            full = self.path / change.path
            after = change.after
            if after is None:
                if os.path.lexists(full):
                    wrong.append(change.path)
            elif after.mode == "120000":
                target = os.fsencode(os.readlink(full)) if os.path.islink(full) else None
                if target is None or self._blob_id(target) != after.blob:
                    wrong.append(change.path)
            elif after.is_regular:
                executable = os.path.isfile(full) and os.access(full, os.X_OK)
                if hashes.get(change.path) != after.blob or executable != after.executable:
                    wrong.append(change.path)
        return wrong

    def _blob_id(self, data: bytes) -> str:
        return self.git.run("hash-object", "--stdin", "--no-filters", input=data).text.strip()

    def _hash_files(self, paths: list[str]) -> dict[str, str]:
        """The blob ids of those of ``paths`` that are files, filters included, in one
        ``hash-object --stdin-paths`` (which reads a line starting with ``"`` as C-quoted:
        each path is quoted, so no name is misread)."""
        present = [p for p in paths if os.path.isfile(self.path / p)]
        if not present:
            return {}
        listing = b"".join(git_quoted(p) + b"\n" for p in present)
        ids = self.git.run("hash-object", "--stdin-paths", input=listing).text.split()
        return dict(zip(present, ids, strict=True))

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
            specs = _outermost(touched.tracked | touched.untracked | {OWN_DIR})
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
        record = self.repo.runtime_dir / TOUCHED_FILE
        touched = self.touched
        marks = self.marks()
        if touched is None or touched.stamp is None or touched.stamp != self.stamp() or not marks:
            record.unlink(missing_ok=True)
            return
        head, ino, size, mtime = touched.stamp
        data = {
            "version": 1,
            "shadow": str(self.path),
            "head": head.decode("ascii", "replace"),
            "index": [ino, size, mtime],
            "marks": marks,
            "tracked": sorted(touched.tracked),
            "untracked": sorted(touched.untracked),
        }
        tmp = record.with_name(f"{TOUCHED_FILE}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(data), encoding="utf-8", errors="surrogateescape")
            os.replace(tmp, record)
        except OSError:
            tmp.unlink(missing_ok=True)
            record.unlink(missing_ok=True)

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
            paths = _plain_changes(listing.stdout)
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
            (self.repo.runtime_dir / POOL_FILE).unlink(missing_ok=True)
            (self.repo.runtime_dir / TOUCHED_FILE).unlink(missing_ok=True)
        try:
            self.repo.git.run("worktree", "remove", "--force", "--force", str(self.path))
        except GitError:
            shutil.rmtree(self.path, ignore_errors=True)
            self.repo.git.run("worktree", "prune", check=False)


class PoolCleaning:
    """The warm shadow being cleaned to its own HEAD, in a thread while the T0 snapshot is
    taken: that cleaning is a full scan of the shadow (every tracked file's stat, every
    directory), as costly as T0's own scan of the main tree, and needs nothing from T0.
    ``finish`` then moves it to T0 by the paths that differ. The run lock is held
    throughout, so no other run uses the pool meanwhile."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self.shadow: ShadowWorktree | None = None
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def start(cls, repo: Repository, background: bool = True) -> PoolCleaning:
        cleaning = cls(repo)
        if background:
            cleaning._thread = threading.Thread(
                target=cleaning._clean, name="tidegate-pool-clean", daemon=True
            )
            cleaning._thread.start()
        else:
            cleaning._clean()
        return cleaning

    def _clean(self) -> None:
        try:
            warm = _pooled_path(self.repo)
            if warm is None:
                return
            try:
                shadow = ShadowWorktree(self.repo, warm, "", pooled=True)
            except GitError:  # not (any more) one of this repository's work trees
                _forget_pooled(self.repo, warm)
                return
            self.shadow = shadow
            touched = take_touched(self.repo, shadow)
            if touched is not None and shadow.undo(touched):
                shadow.undone = len(touched)
            else:
                shadow.clean_to_head()
        except BaseException as exc:  # reported by finish() in the caller's thread
            self.error = exc

    def wait(self) -> None:
        """Until the cleaning is over (no git left running in the pooled shadow)."""
        if self._thread is not None:
            self._thread.join()

    def finish(self, t0_commit: str) -> ShadowWorktree | None:
        """The pooled shadow at ``t0_commit``, or None when there is no healthy one (a
        broken one is removed)."""
        self.wait()
        shadow = self.shadow
        if shadow is None:
            if self.error is not None and not isinstance(self.error, GitError | OSError):
                raise self.error
            return None
        try:
            if self.error is not None:
                raise self.error
            shadow.move_to(t0_commit)
            shadow.reused = True
            shadow.prepared = shadow.identity()
            return shadow
        except (GitError, OSError):
            shadow.remove()
            return None


def take_touched(repo: Repository, shadow: ShadowWorktree) -> Touched | None:
    """The last run's record of what it wrote in the pooled ``shadow`` (removed here: it is
    true once), or None when there is none that fits this shadow as it is now."""
    record = repo.runtime_dir / TOUCHED_FILE
    try:
        text = record.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None
    record.unlink(missing_ok=True)
    try:
        data = json.loads(text)
        ino, size, mtime = (int(v) for v in data["index"])
        head = str(data["head"]).encode("ascii")
        tracked = {str(p) for p in data["tracked"]}
        untracked = {str(p) for p in data["untracked"]}
        marks = [(str(name), int(when)) for name, when in data["marks"]]
        fits = data["version"] == 1 and data["shadow"] == str(shadow.path)
    except (ValueError, KeyError, TypeError, UnicodeError):
        return None
    if not fits or not marks:
        return None  # its paths are git's to confine: pathspecs, literal, of the work tree
    return Touched((head, ino, size, mtime), tracked, untracked, marks)


def _outermost(paths: set[str]) -> list[str]:
    """``paths`` without those beneath another of them: given a directory and a file in
    it, ``git clean`` descends to the file and keeps the directory."""
    kept: list[str] = []
    for path in sorted(paths, key=lambda p: p.split("/")):
        if not kept or not path.startswith(kept[-1] + "/"):
            kept.append(path)
    return kept


def _plain_changes(listing: bytes) -> list[bytes] | None:
    """The paths of ``git status --porcelain=v2 -z`` when every entry is an ordinary change
    of a file or symlink ("1 XY N..." entries), else None."""
    paths: list[bytes] = []
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        fields = entry.split(b" ", 8)
        if len(fields) != 9 or fields[0] != b"1" or fields[2] != b"N...":
            return None
        paths.append(fields[8])
    return paths


@dataclass
class Leftovers:
    shadows: list[str] = field(default_factory=list)
    scratch: list[str] = field(default_factory=list)


def remove_stale_shadows(repo: Repository) -> list[str]:
    """``remove_leftovers``, returning the shadows it removed."""
    return remove_leftovers(repo).shadows


def remove_leftovers(repo: Repository) -> Leftovers:
    """Remove the shadows and scratch directories of runs that are no longer alive.

    A shadow whose run's claim names a live process (in this work tree or in another
    linked one) is left alone. Only paths with tidegate's own prefixes are ever removed,
    whatever a claim file says."""
    claims = all_claims(repo)
    listing = repo.git.run("worktree", "list", "--porcelain", "-z").stdout.split(b"\0")
    out = Leftovers()
    for entry in listing:
        if not entry.startswith(b"worktree "):
            continue
        path = entry[len(b"worktree ") :].decode("utf-8", "surrogateescape")
        if not os.path.basename(path).startswith(SHADOW_PREFIX):
            continue
        if Path(path).resolve() == repo.root:
            continue
        run_id = os.path.basename(path)[len(SHADOW_PREFIX) :].rsplit("-", 1)[0]
        owner = claims.get(run_id)
        if owner is not None and owner.alive:
            continue
        _discard(repo, Path(path))
        out.shadows.append(path)
        # The run's scratch directory was made beside its shadow (runs from before claims).
        for scratch in Path(path).parent.glob(f"{SCRATCH_PREFIX}{run_id}-*"):
            shutil.rmtree(scratch, ignore_errors=True)
    for owner in claims.values():
        if not owner.alive:
            _sweep(repo, owner, out)
    repo.git.run("worktree", "prune", check=False)
    return out


def _sweep(repo: Repository, owner: Claim, out: Leftovers) -> None:
    """Remove what a dead run claimed, then its claim."""
    scratch = owner.paths.get("scratch", "")
    if os.path.basename(scratch).startswith(SCRATCH_PREFIX) and os.path.lexists(scratch):
        shutil.rmtree(scratch, ignore_errors=True)
        out.scratch.append(scratch)
    shadow = owner.paths.get("shadow", "")
    if os.path.basename(shadow).startswith(SHADOW_PREFIX) and os.path.lexists(shadow):
        _discard(repo, Path(shadow))  # made, but never registered as a worktree
        out.shadows.append(shadow)
    release(repo, owner.run_id)


def make_scratch(repo: Repository, run_id: str) -> Path:
    """The run's scratch directory in the OS temp dir, claimed for this process."""
    scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{run_id}-"))
    try:
        claim(repo, run_id, scratch=str(scratch))
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return scratch


def _add_worktree(repo: Repository, path: Path, commit: str) -> None:
    # checkout.workers=0: one checkout worker per core (git >= 2.32; older gits ignore the
    # key). The full checkout is most of a cold run; on 2 cores it is ~35% shorter.
    repo.git.run(
        "-c", "checkout.workers=0", "worktree", "add", "--detach", "--quiet", str(path), commit
    )


def _discard(repo: Repository, path: Path) -> None:
    """Remove a shadow whatever state it is in (half-made and still locked by a killed
    ``git worktree add`` included), with Ctrl-C and SIGTERM held meanwhile."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        # Twice --force: also a worktree git left locked ("initializing").
        repo.git.run("worktree", "remove", "--force", "--force", str(path), check=False)
        shutil.rmtree(path, ignore_errors=True)
        repo.git.run("worktree", "prune", check=False)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _pooled_path(repo: Repository) -> Path | None:
    """The recorded warm shadow, if it is still one of this repository's worktrees."""
    record = repo.runtime_dir / POOL_FILE
    if not record.exists():
        return None
    path = Path(record.read_text().strip())
    if path.name.startswith(POOL_PREFIX) and _links_back(repo, path):
        return path
    # Not a healthy pooled shadow: whatever git still registers of it goes.
    listing = repo.git.run("worktree", "list", "--porcelain", "-z").stdout.split(b"\0")
    registered = {
        entry[len(b"worktree ") :].decode("utf-8", "surrogateescape")
        for entry in listing
        if entry.startswith(b"worktree ")
    }
    record.unlink(missing_ok=True)
    if str(path) in registered or path.exists():
        repo.git.run("worktree", "remove", "--force", "--force", str(path), check=False)
        shutil.rmtree(path, ignore_errors=True)
    repo.git.run("worktree", "prune", check=False)
    return None


def _links_back(repo: Repository, path: Path) -> bool:
    """``path`` is one of ``repo``'s linked work trees the way ``git worktree list`` reads
    them, without running git: its ``.git`` file names an admin dir of ``repo``'s
    (``shadow_git_dir``) whose ``gitdir`` file names ``path`` back. A ``.git`` rewritten
    to another work tree's admin dir fails the second half."""
    try:
        admin = shadow_git_dir(repo, path)
        back = (admin / "gitdir").read_text(encoding="utf-8").strip()
    except (GitError, OSError, UnicodeDecodeError):
        return False
    return back == f"{path}/.git"


def shadow_git_dir(repo: Repository, path: Path) -> Path:
    """The git dir of the linked work tree at ``path``, read from its ``.git`` file without
    running git, and accepted only if it is one of ``repo``'s own work tree dirs: every
    later git call in the shadow is pinned to it, so whatever a command writes in the
    shadow (a ``.git`` of its own, a rewritten link) never chooses the repository."""
    try:
        text = (path / ".git").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise GitError(["worktree"], 1, f"{path}: no readable .git file: {exc}") from exc
    if not text.startswith("gitdir: "):
        raise GitError(["worktree"], 1, f"{path}/.git is not a link to a git dir")
    target = Path(text[len("gitdir: ") :])
    target = (target if target.is_absolute() else path / target).resolve()
    if target.parent != (repo.common_dir / "worktrees").resolve():
        raise GitError(["worktree"], 1, f"{path}/.git points outside {repo.common_dir}")
    return target


def _forget_pooled(repo: Repository, path: Path) -> None:
    (repo.runtime_dir / POOL_FILE).unlink(missing_ok=True)
    repo.git.run("worktree", "remove", "--force", "--force", str(path), check=False)
    repo.git.run("worktree", "prune", check=False)
