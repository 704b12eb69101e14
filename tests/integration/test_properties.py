"""Property tests: ARCHITECTURE.md's invariants over random dirty states and random edits.

Each example builds a fresh real git repository (inside the test body, so no state leaks
between examples): a few committed text files, then a random dirty state the way a user
makes one (staged edits, unstaged edits, both, staged and unstaged deletions, a staged new
file, untracked files, ignored files), then one random structured-objective edit. A
read-only review run must change nothing at all (mtimes included); the patch run must
leave the index and the staged diff byte-identical, never touch ignored files, and either
apply exactly the edit or change nothing.

A second property lets the user edit the main work tree *during* the run (the verify
command, which runs in the shadow, writes into the main tree the way an editor would):
a user edit is never overwritten, and a conflict writes nothing outside ``.tidegate/``.

Some dirty states end with a same-size edit made right after ``git add`` and the run
starting in a later second: git's stat cache can only see such an edit through the index
file's mtime ("racily clean" entries), so T0 must be built from an index copy that keeps
that mtime. ``test_t0_sees_a_same_size_edit_made_right_after_git_add`` pins the case down.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from tests.conftest import Repo
from tidegate.records.modes import Mode

COMMITTED_POOL = (
    "a.txt",
    "b.md",
    "docs/c.txt",
    "docs/guide/d.txt",
    "src/e.cfg",
    "src/pkg/deep/f.txt",
    "g.txt",
)
UNTRACKED_POOL = ("notes.txt", "docs/draft.txt", "src/new/untracked.txt")
STAGED_NEW_POOL = ("added.md", "src/added.txt")
IGNORED_POOL = ("debug.log", "build/out.txt", "docs/trace.log")
FRESH_POOL = ("created.txt", "docs/created.md", "src/fresh/dir/new.txt", "build/gen.txt")
GITIGNORE = "*.log\nbuild/\n"
ACTIONS = ("clean", "staged", "unstaged", "both", "deleted", "staged-deleted")
VERIFIES = (None, "true", "false", "echo artefact > verify-artefact.txt")

SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Every example is one or two real tidegate runs on a fresh repository, and some sleep up
# to a second to cross a second boundary; shrinking a failure would replay a thousand of
# them (minutes), so the properties report their first failing example as drawn: each
# assertion message describes the whole scenario (dirty state, edit, verify command,
# concurrent action).
NO_SHRINK = settings(SETTINGS, phases=(Phase.explicit, Phase.reuse, Phase.generate))

Tree = dict[str, object]


# ---------------------------------------------------------------------------------------
# Text model: files are lists of unique lines "<n> words"; the token <n> never repeats, so
# any line (or its token alone) occurs exactly once in the file that holds it.


@dataclass
class Text:
    lines: list[str]
    eol: bool = True

    def render(self) -> str:
        return "\n".join(self.lines) + ("\n" if self.eol and self.lines else "")

    def copy(self) -> Text:
        return Text(list(self.lines), self.eol)


class Tokens:
    def __init__(self) -> None:
        self.n = 0

    def next(self) -> int:
        self.n += 1
        return self.n


WORDS = st.lists(st.text("abcdefgh", min_size=1, max_size=6), min_size=1, max_size=2).map(" ".join)


def new_line(draw: st.DrawFn, tokens: Tokens) -> str:
    return f"<{tokens.next()}> {draw(WORDS)}"


def new_text(draw: st.DrawFn, tokens: Tokens, min_lines: int = 1, max_lines: int = 5) -> Text:
    count = draw(st.integers(min_lines, max_lines))
    return Text([new_line(draw, tokens) for _ in range(count)], eol=draw(st.booleans()))


def modify(draw: st.DrawFn, tokens: Tokens, text: Text, same_size: bool = False) -> Text:
    """One user edit of ``text``; ``same_size`` keeps the byte length (upper-cases a line's
    words), the edit git's stat cache can only tell apart by mtime."""
    out = text.copy()
    i = draw(st.integers(0, len(out.lines) - 1))
    if same_size:
        token, _, words = out.lines[i].partition(" ")
        out.lines[i] = f"{token} {words.upper()}"
        return out
    op = draw(st.sampled_from(("replace", "insert", "drop")))
    if op == "replace":
        out.lines[i] = new_line(draw, tokens)
    elif op == "insert":
        out.lines.insert(draw(st.integers(0, len(out.lines))), new_line(draw, tokens))
    elif len(out.lines) > 1:
        del out.lines[i]
    else:
        out.lines.append(new_line(draw, tokens))
    return out


# ---------------------------------------------------------------------------------------
# Scenario: what is committed, what the user did since, and what T0 should hold.


@dataclass
class FileState:
    action: str
    staged: Text | None = None  # content staged by `git add` (staged / both)
    work: Text | None = None  # final work-tree content (None: deleted)
    racy_line: str | None = None  # a same-size edit made right after `git add`


@dataclass
class Scenario:
    head: dict[str, Text]
    files: dict[str, FileState]
    untracked: dict[str, Text]
    staged_new: dict[str, Text]
    ignored: dict[str, Text]
    cross_second: bool
    tokens: Tokens = field(repr=False)

    @property
    def work(self) -> dict[str, str]:
        """Every non-ignored file in the work tree: exactly what T0 must capture."""
        out = {p: f.work.render() for p, f in self.files.items() if f.work is not None}
        out.update({p: t.render() for p, t in self.untracked.items()})
        out.update({p: t.render() for p, t in self.staged_new.items()})
        return out

    @property
    def ignored_text(self) -> dict[str, str]:
        return {p: t.render() for p, t in self.ignored.items()}

    @property
    def every_path(self) -> list[str]:
        paths = set(self.head) | set(self.untracked) | set(self.staged_new) | set(self.ignored)
        return sorted(paths)


@st.composite
def scenarios(draw: st.DrawFn, racy_edits: bool = True) -> Scenario:
    tokens = Tokens()
    committed = draw(st.lists(st.sampled_from(COMMITTED_POOL), min_size=2, max_size=6, unique=True))
    head = {p: new_text(draw, tokens) for p in committed}
    files: dict[str, FileState] = {}
    racy = False
    for path in committed:
        action = draw(st.sampled_from(ACTIONS))
        state = FileState(action, work=head[path])
        if action in ("staged", "both"):
            state.staged = modify(draw, tokens, head[path])
            state.work = state.staged
        if action in ("unstaged", "both"):
            same_size = racy_edits and action == "both" and draw(st.booleans())
            racy = racy or same_size
            previous = state.work or head[path]
            state.work = modify(draw, tokens, previous, same_size)
            if same_size:
                state.racy_line = next(x for x in state.work.lines if x not in previous.lines)
        if action in ("deleted", "staged-deleted"):
            state.work = None
        files[path] = state
    untracked = {
        p: new_text(draw, tokens)
        for p in draw(st.lists(st.sampled_from(UNTRACKED_POOL), max_size=2, unique=True))
    }
    staged_new = {
        p: new_text(draw, tokens)
        for p in draw(st.lists(st.sampled_from(STAGED_NEW_POOL), max_size=1, unique=True))
    }
    ignored = {
        p: new_text(draw, tokens)
        for p in draw(st.lists(st.sampled_from(IGNORED_POOL), min_size=1, max_size=2, unique=True))
    }
    # Crossing a second boundary between the last `git add` and the run is what a user
    # does all the time; it matters for same-size edits (git's racy-clean detection).
    cross_second = racy
    return Scenario(head, files, untracked, staged_new, ignored, cross_second, tokens)


def materialise(repo: Repo, sc: Scenario) -> None:
    repo.git("init", "-q")
    repo.write(".gitignore", GITIGNORE)
    for path, text in sc.head.items():
        repo.write(path, text.render())
    repo.commit_all("initial")
    to_stage: list[str] = []
    for path, fs in sc.files.items():
        if fs.staged is not None:
            repo.write(path, fs.staged.render())
            to_stage.append(path)
    for path, text in sc.staged_new.items():
        repo.write(path, text.render())
        to_stage.append(path)
    if to_stage:
        repo.git("add", "--", *to_stage)
    removed = [p for p, fs in sc.files.items() if fs.action == "staged-deleted"]
    if removed:
        repo.git("rm", "-q", "--", *removed)
    for path, fs in sc.files.items():
        if fs.action in ("unstaged", "both"):
            assert fs.work is not None
            repo.write(path, fs.work.render())
        elif fs.action == "deleted":
            (repo.root / path).unlink()
    for path, text in {**sc.untracked, **sc.ignored}.items():
        repo.write(path, text.render())
    if sc.cross_second:
        time.sleep(1.02 - time.time() % 1)


# ---------------------------------------------------------------------------------------
# Edits and their expected outcome, from the model alone.


@dataclass
class Edit:
    kind: str  # edit / create / delete
    path: str
    old: str = ""
    new: str = ""
    content: str = ""

    def objective(self) -> str:
        if self.kind == "edit":
            return f"edit-file: {self.path}\nreplace: {self.old}\nwith: {self.new}\n"
        if self.kind == "create":
            return f"create-file: {self.path}\ncontent: <<<\n{self.content}>>>\n"
        return f"delete-file: {self.path}\n"


@st.composite
def edits(draw: st.DrawFn, sc: Scenario) -> Edit:
    work = sc.work
    racy = {p: f.racy_line for p, f in sc.files.items() if f.racy_line}
    if sc.cross_second and racy and draw(st.booleans()):
        # Aim at the line git's stat cache cannot see changing: T0 must still hold it.
        path = draw(st.sampled_from(sorted(racy)))
        if draw(st.booleans()):
            return Edit("delete", path)
        return Edit("edit", path, old=racy[path], new=new_line(draw, sc.tokens))
    kind = draw(st.sampled_from(("edit", "edit", "create", "delete")))
    if kind == "edit":
        path = draw(st.sampled_from(sc.every_path))
        source = draw(st.sampled_from(("work", "work", "work", "head", "nowhere")))
        if source == "work" and path in work:
            old = draw(st.sampled_from([line for line in work[path].split("\n") if line]))
        elif source == "head" and path in sc.head:
            old = draw(st.sampled_from(sc.head[path].lines))
        else:
            old = "<999999> nowhere"
        if draw(st.booleans()):
            old = old.split(" ")[0]  # the token alone: a part of a line
        new = draw(st.sampled_from(("line", "line", "empty", "same")))
        replacement = {"line": new_line(draw, sc.tokens), "empty": "", "same": old}[new]
        return Edit("edit", path, old=old, new=replacement)
    if kind == "create":
        path = draw(st.sampled_from(sorted(set(FRESH_POOL) | set(sc.every_path))))
        if path in sc.ignored and draw(st.booleans()):
            content = sc.ignored[path].render()
        else:
            content = new_text(draw, sc.tokens, 1, 3).render()
        if not content.endswith("\n"):
            content += "\n"  # a <<< block always ends its last line
        return Edit("create", path, content=content)
    path = draw(st.sampled_from(sorted(set(FRESH_POOL) | set(sc.every_path))))
    return Edit("delete", path)


def expected_status(sc: Scenario, edit: Edit, verify: str | None) -> str:
    work, ignored = sc.work, sc.ignored_text
    if edit.kind == "edit":
        ok = edit.path in work and work[edit.path].count(edit.old) == 1 and edit.old != edit.new
        status = "succeeded" if ok else "failed"
    elif edit.kind == "create":
        if edit.path in work:
            status = "failed"  # the file exists at T0
        elif edit.path in ignored and ignored[edit.path] != edit.content:
            status = "conflict"  # the user's ignored file is in the way
        else:
            status = "succeeded"
    else:
        status = "succeeded" if edit.path in work else "failed"
    if status != "failed" and verify == "false":
        status = "failed"  # VERIFY fails before APPLY_BACK could conflict
    return status


def expected_content(sc: Scenario, edit: Edit) -> str | None:
    """The changed path's content after a successful run (None: deleted)."""
    if edit.kind == "edit":
        return sc.work[edit.path].replace(edit.old, edit.new, 1)
    if edit.kind == "create":
        return edit.content
    return None


# ---------------------------------------------------------------------------------------
# Observations of the real repository.


def quiet_git(root: Path, *args: str) -> bytes:
    """A read-only git call that cannot refresh the index (GIT_OPTIONAL_LOCKS=0)."""
    res = subprocess.run(
        ["git", *args],
        cwd=root,
        env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        capture_output=True,
        check=True,
    )
    return res.stdout


def staged_diff(root: Path) -> bytes:
    return quiet_git(root, "diff", "--cached", "--binary", "--no-color", "--no-ext-diff")


def without_runtime(tree: Tree) -> Tree:
    """The tree minus tidegate's own ``.tidegate/`` directory (rejects)."""
    return {
        k: v
        for k, v in tree.items()
        if not (
            k.removeprefix("dir:") == ".tidegate" or k.removeprefix("dir:").startswith(".tidegate/")
        )
    }


def files_of(tree: Tree) -> Tree:
    return {k: v for k, v in tree.items() if not k.startswith("dir:")}


def dirs_of(tree: Tree) -> set[str]:
    return {k.removeprefix("dir:") for k in tree if k.startswith("dir:")}


def ancestors(path: str) -> set[str]:
    parts = path.split("/")
    return {"/".join(parts[:i]) for i in range(1, len(parts))}


def new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return stat.S_IFREG | (0o666 & ~umask)


def describe(sc: Scenario, edit: Edit, verify: str | None) -> str:
    lines = [f"edit: {edit.objective()!r}", f"verify: {verify!r}"]
    lines += [f"  {p}: {fs.action}" for p, fs in sc.files.items()]
    lines += [f"  untracked {sorted(sc.untracked)} staged-new {sorted(sc.staged_new)}"]
    lines += [f"  ignored {sorted(sc.ignored)} cross_second={sc.cross_second}"]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# Property 1: random dirty state x random edit.


@NO_SHRINK
@given(data=st.data())
def test_invariants_over_dirty_states_and_edits(data: st.DataObject) -> None:
    sc = data.draw(scenarios(), label="scenario")
    edit = data.draw(edits(sc), label="edit")
    verify = data.draw(st.sampled_from(VERIFIES), label="verify")
    with tempfile.TemporaryDirectory(prefix="tidegate-prop-") as tmp:
        repo = Repo(Path(tmp) / "work")
        repo.root.mkdir()
        materialise(repo, sc)
        context = describe(sc, edit, verify)

        index = repo.index_bytes()
        cached = staged_diff(repo.root)
        before = repo.tree_state()
        before_mtimes = repo.tree_state(with_mtimes=True)

        # (f) review mode is read-only: nothing changes, not even an mtime.
        review = repo.run(edit.objective(), verify=verify, mode=Mode.REVIEW, max_attempts=1)
        assert review.status == "succeeded", f"{review.message}\n{context}"
        assert repo.tree_state(with_mtimes=True) == before_mtimes, context
        assert repo.index_bytes() == index, context

        report = repo.run(edit.objective(), verify=verify, max_attempts=2)
        after = repo.tree_state()

        # (a) the index file, byte for byte; (b) the staged diff.
        assert repo.index_bytes() == index, context
        assert staged_diff(repo.root) == cached, context
        # (c) ignored files are never touched.
        for path in sc.ignored:
            assert after.get(path) == before[path], f"ignored {path} changed\n{context}"

        want = expected_status(sc, edit, verify)
        assert report.status == want, f"{report.status}: {report.message}\n{context}"
        if report.status == "succeeded":
            # (d) exactly the edit, nothing else.
            expected = files_of(before)
            content = expected_content(sc, edit)
            if content is None:
                del expected[edit.path]
            else:
                old = before.get(edit.path)
                mode = old[0] if isinstance(old, tuple) else new_file_mode()
                expected[edit.path] = (mode, content.encode(), None)
            assert files_of(after) == expected, context
            changed_dirs = dirs_of(before) ^ dirs_of(after)
            assert changed_dirs <= ancestors(edit.path), f"{changed_dirs}\n{context}"
            for d in ancestors(edit.path) & dirs_of(after):
                assert os.listdir(repo.root / d), f"empty directory {d} left behind\n{context}"
            assert not (repo.root / ".tidegate").exists(), context
        else:
            # (e) a failed or conflicting run changes nothing outside .tidegate/.
            assert without_runtime(after) == before, context
            if report.status == "conflict":
                rej = repo.root / ".tidegate" / "rejects" / report.run_id / f"{edit.path}.rej"
                assert rej.is_file(), context


# ---------------------------------------------------------------------------------------
# Property 2: the user edits the main work tree while the run is verifying.

CONCURRENT = ("same-line", "other-line", "delete-same", "other-file", "new-file", "rewrite")


@NO_SHRINK
@given(data=st.data())
def test_user_edits_during_the_run_are_never_overwritten(data: st.DataObject) -> None:
    # Same-size edits right after `git add` have their own property (above) and test (below).
    sc = data.draw(scenarios(racy_edits=False), label="scenario")
    work = sc.work
    assume(work)
    path = data.draw(st.sampled_from(sorted(work)), label="path")
    lines = work[path].split("\n")
    eol = work[path].endswith("\n")
    if eol:
        lines.pop()
    j = data.draw(st.integers(0, len(lines) - 1), label="edited line")
    edit = Edit("edit", path, old=lines[j], new=new_line(data.draw, sc.tokens))
    action = data.draw(st.sampled_from(CONCURRENT), label="concurrent action")
    other = sorted(set(work) - {path})
    if action == "other-line" and len(lines) < 2:
        action = "same-line"
    if action == "other-file" and not other:
        action = "new-file"

    user_lines = list(lines)
    target, payload = path, None  # payload None: the user deletes target
    i = j
    if action in ("same-line", "other-line"):
        if action == "other-line":
            i = data.draw(st.sampled_from([k for k in range(len(lines)) if k != j]), label="i")
        user_lines[i] = new_line(data.draw, sc.tokens)
        payload = "\n".join(user_lines) + ("\n" if eol else "")
    elif action == "other-file":
        target = data.draw(st.sampled_from(other), label="other")
        payload = work[target] + f"<{sc.tokens.next()}> late user line\n"
    elif action == "new-file":
        target, payload = "late/user.txt", "written while tidegate ran\n"
    elif action == "rewrite":
        payload = work[path]  # the editor saves the same bytes again

    with tempfile.TemporaryDirectory(prefix="tidegate-prop-") as tmp:
        repo = Repo(Path(tmp) / "work")
        repo.root.mkdir()
        materialise(repo, sc)
        dest = repo.root / target
        if payload is None:
            verify = f"rm {shlex.quote(str(dest))}"
        else:
            src = Path(tmp) / "payload"
            src.write_text(payload, encoding="utf-8", newline="")
            mkdir = f"mkdir -p {shlex.quote(str(dest.parent))} && " if action == "new-file" else ""
            verify = f"{mkdir}cp {shlex.quote(str(src))} {shlex.quote(str(dest))}"
        context = describe(sc, edit, verify) + f"\n  concurrent {action} on {target} (i={i}, j={j})"

        index = repo.index_bytes()
        cached = staged_diff(repo.root)
        before = repo.tree_state()

        # What the main tree holds once the user's concurrent edit is in.
        post = dict(before)
        if payload is None:
            del post[target]
        elif target in post:
            old = post[target]
            assert isinstance(old, tuple)
            post[target] = (old[0], payload.encode(), None)
        else:
            post[target] = (new_file_mode(), payload.encode(), None)

        # Uncontained: the verify command stands in for the user editing the main tree,
        # which a contained command cannot do.
        report = repo.run(edit.objective(), verify=verify, max_attempts=1, containment="none")
        after = repo.tree_state()
        if action == "new-file":
            post["dir:late"] = after.get("dir:late")  # made by the user's `mkdir -p`

        assert repo.index_bytes() == index, context
        assert staged_diff(repo.root) == cached, context
        merged_lines = list(user_lines)
        merged_lines[j] = edit.new
        merged = ("\n".join(merged_lines) + ("\n" if eol else "")).encode()

        if action in ("same-line", "delete-same"):
            want: tuple[str, ...] = ("conflict",)
        elif action == "other-line" and abs(i - j) == 1:
            want = ("conflict", "succeeded")  # adjacent hunks: git merge-file may refuse
        else:
            want = ("succeeded",)
        assert report.status in want, f"{report.status}: {report.message}\n{context}"

        if report.status == "succeeded":
            expected = dict(post)
            old = expected[path]
            assert isinstance(old, tuple)
            if action in ("same-line", "other-line"):
                expected[path] = (old[0], merged, None)
            else:
                content = work[path].replace(edit.old, edit.new, 1).encode()
                expected[path] = (old[0], content, None)
            assert files_of(after) == files_of(expected), context
            assert dirs_of(after) == dirs_of(expected), context
        else:
            # Nothing written; the user's concurrent edit is intact.
            assert without_runtime(after) == post, context
            rej = repo.root / ".tidegate" / "rejects" / report.run_id / f"{path}.rej"
            assert rej.is_file(), context


# ---------------------------------------------------------------------------------------
# The racy-git case the first property can hit, as a plain deterministic test.


def test_t0_sees_a_same_size_edit_made_right_after_git_add() -> None:
    """Stage a file, change it again without changing its size in the same second, run a
    second later: T0 must hold the work tree's content, not the staged one."""
    with tempfile.TemporaryDirectory(prefix="tidegate-racy-") as tmp:
        repo = Repo(Path(tmp) / "work")
        repo.root.mkdir()
        repo.git("init", "-q")
        repo.write("f.txt", "line one\nline two\n")
        repo.commit_all("initial")
        time.sleep(1.02 - time.time() % 1)  # start a fresh second: stage and edit inside it
        repo.write("f.txt", "line ONE\nline two\n")
        repo.git("add", "f.txt")
        repo.write("f.txt", "line one\nline TWO\n")  # same size, same second as the index
        index = repo.index_bytes()
        time.sleep(1.02 - time.time() % 1)  # the run starts in a later second
        report = repo.run("edit-file: f.txt\nreplace: line TWO\nwith: line 2\n")
        assert repo.index_bytes() == index
        assert report.status == "succeeded", report.message
        assert repo.read("f.txt") == "line one\nline 2\n"
