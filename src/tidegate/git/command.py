"""``Git``: git bound to one directory, every call built the same way (argv, scrubbed
environment, safety overrides; see the ``tidegate.git`` package doc) and run in a process
group of its own."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

import msgspec

from tidegate.errors import GitError
from tidegate.git.env import _SAFETY_CONFIG, scrubbed_env
from tidegate.git.kept import _BatchReader, _Kept, _RefWriter
from tidegate.git.settings import CORE_SETTINGS, FILTER_KEYS, UNTRUSTED_ENV, last_value

_K = TypeVar("_K", bound=_Kept)


def run_group(
    argv: list[str], cwd: Path | None, env: Mapping[str, str], input: bytes | None, args: list[str]
) -> tuple[int, bytes, bytes]:
    """Run git in a process group of its own and wait for it; interrupted (Ctrl-C, the
    SIGTERM handler, any exception while waiting), kill the whole group before raising.

    Killing git alone is not enough: ``worktree add`` runs ``git reset --hard`` as a
    child, which runs the repository's filters, and an orphaned checkout would go on
    writing the shadow after the run has removed it."""
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            process_group=0,
        )
    except OSError as exc:
        raise GitError(args, -1, f"cannot run git: {exc}") from exc
    with proc:
        try:
            stdout, stderr = proc.communicate(input)
        except BaseException:
            with contextlib.suppress(OSError):  # the group may be gone already
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
    return proc.returncode, stdout, stderr


class GitResult(msgspec.Struct, frozen=True):
    argv: list[str]
    returncode: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", errors="surrogateescape")


class Git:
    """git bound to one working directory (a work tree or a git dir).

    ``git_dir``/``work_tree`` pin the repository (no discovery); ``config``: ``key=value``
    settings for every call (``-c``); ``filters=False``
    neutralises every filter driver the configuration defines; ``untrusted`` also reads
    only the repository's own configuration (see the module doc); ``prefix`` is an argv
    that launches git (a sandbox).
    """

    def __init__(
        self,
        cwd: Path,
        *,
        git_dir: Path | None = None,
        work_tree: Path | None = None,
        untrusted: bool = False,
        filters: bool = True,
        prefix: Sequence[str] = (),
        config: Sequence[str] = (),
    ) -> None:
        self.cwd = cwd
        self.config = tuple(arg for item in config for arg in ("-c", item))
        self.git_dir = git_dir
        self.work_tree = work_tree
        self.untrusted = untrusted
        self.filters = filters and not untrusted
        self.prefix = tuple(prefix)
        self._kept: dict[str, _Kept] | None = None
        self._kept_lock = threading.Lock()
        self._settings: dict[str, list[str | None]] | None = None
        self._settings_lock = threading.Lock()

    def core_settings(self) -> dict[str, list[str | None]]:
        """The ``core.ignorecase``, ``core.precomposeunicode``, ``core.autocrlf`` and
        ``core.eol`` values of the configuration (each key's values in git's order; None
        for a key given without a value), read once per ``Git``. A run reads them beside
        its scan (``tidegate.workspace.snapshot``): the settings the user had when the run
        began, not whatever a command run since has left in the repository's config."""
        with self._settings_lock:
            if self._settings is None:
                out = self.run("config", "-z", "--get-regexp", CORE_SETTINGS, check=False).text
                settings: dict[str, list[str | None]] = {}
                for item in out.split("\0"):
                    if item:
                        key, sep, value = item.partition("\n")
                        settings.setdefault(key, []).append(value if sep else None)
                self._settings = settings
            return self._settings

    @contextlib.contextmanager
    def kept_processes(self) -> Iterator[None]:
        """Within, this Git's object reads (``blob_bytes``, ``read_blobs``, ``blob_sizes``,
        ``kept_object``) and ref updates (``update_ref``, ``create_refs``) each go through
        one long-lived git process (``cat-file --batch-command``, ``update-ref --stdin``),
        started at its first use, instead of one process a call:
        a run does both in several phases. Nested uses share them; they end (their groups
        killed if need be) when the outermost use does. Thread-safe.

        Only commands whose answers cannot depend on the work tree are kept: a long-lived
        ``hash-object --stdin-paths`` would go on applying the ``.gitattributes`` it read
        first after a candidate or a command changed them."""
        if self._kept is not None:
            yield
            return
        self._kept = {}
        try:
            yield
        finally:
            with self._kept_lock:
                kept, self._kept = self._kept, None
            for helper in kept.values():
                helper.close()

    def _helper(self, kind: type[_K], *args: str) -> _K | None:
        """The kept ``kind`` process (``git ARGS``), started now if it is not yet; None
        outside ``kept_processes``."""
        with self._kept_lock:
            if self._kept is None:
                return None
            helper = self._kept.get(kind.__name__)
            if helper is None:
                env = self._env()
                helper = self._kept[kind.__name__] = kind(
                    self._argv(list(args), env), self.cwd, env
                )
            assert isinstance(helper, kind)
            return helper

    def update_ref(self, ref: str, oid: str) -> None:
        """``git update-ref REF OID``: each update its own transaction, done on return."""
        refs = self._helper(_RefWriter, "update-ref", "--stdin")
        if refs is not None and refs.update(ref, oid):
            return
        self.run("update-ref", ref, oid)

    def create_refs(self, refs: Sequence[tuple[str, str]]) -> None:
        """Create every ``(ref, oid)`` in one transaction; none may exist yet (a GitError,
        in git's words, when one does)."""
        kept = self._helper(_RefWriter, "update-ref", "--stdin")
        if kept is not None and kept.transaction([("create", ref, oid) for ref, oid in refs]):
            return
        commands = "".join(f"create {ref}\0{oid}\0" for ref, oid in refs)
        self.run("update-ref", "-z", "--stdin", input=commands.encode())

    def _env(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        return scrubbed_env({**self.pinned_env(), **(env or {})})

    def _argv(self, args: Sequence[str], env: Mapping[str, str]) -> list[str]:
        """The argv of a call with ``env`` (the full environment, ``_env``)."""
        extra = [] if self.filters else self._no_filters(env)
        if self.untrusted:
            extra += ["-c", f"core.attributesFile={os.devnull}"]
        return [*self.prefix, "git", "--no-pager", *_SAFETY_CONFIG, *self.config, *extra, *args]

    def pinned_env(self) -> dict[str, str]:
        env = dict(UNTRUSTED_ENV) if self.untrusted else {}
        if self.git_dir is not None:
            env["GIT_DIR"] = str(self.git_dir)
        if self.work_tree is not None:
            env["GIT_WORK_TREE"] = str(self.work_tree)
        return env

    def run(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        input: bytes | None = None,
        check: bool = True,
        ok_codes: Sequence[int] = (0,),
    ) -> GitResult:
        full_env = self._env(env)
        argv = self._argv(args, full_env)
        returncode, stdout, stderr = run_group(argv, self.cwd, full_env, input, list(args))
        result = GitResult(list(args), returncode, stdout, stderr.decode("utf-8", "replace"))
        if check and returncode not in ok_codes:
            raise GitError(list(args), returncode, result.stderr)
        return result

    def _no_filters(self, env: Mapping[str, str]) -> list[str]:
        """Overrides that leave the repository's filter drivers without a program.

        The driver names are read from the configuration git will use (``git config``
        runs nothing); reading it again on every call means a driver added since is
        still neutralised."""
        try:
            proc = subprocess.run(
                ["git", "config", "--null", "--name-only", "--get-regexp", r"^filter\."],
                cwd=self.cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                check=False,
            )
        except OSError as exc:
            raise GitError(["config"], -1, f"cannot run git: {exc}") from exc
        names = {
            key[len("filter.") : key.rindex(".")]
            for key in proc.stdout.decode("utf-8", "surrogateescape").split("\0")
            if key.count(".") >= 2
        }
        out = []
        for name in sorted(names):
            for key in FILTER_KEYS:
                out += ["-c", f"filter.{name}.{key}"]
        return out

    def out(self, *args: str, env: Mapping[str, str] | None = None) -> str:
        """Run and return stdout as text with the trailing newline removed."""
        return self.run(*args, env=env).text.rstrip("\n")

    def rev_parse(self, rev: str) -> str | None:
        res = self.run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
        return res.text.strip() if res.returncode == 0 else None

    def blob_bytes(self, blob: str) -> bytes:
        reader = self._helper(_BatchReader, "cat-file", "--batch-command")
        if reader is not None and (kept := reader.read([blob], only=b"blob")) is not None:
            return kept[blob]
        return self.run("cat-file", "blob", blob).stdout

    def kept_object(self, oid: str, kind: bytes) -> bytes | None:
        """The object ``oid`` of type ``kind`` (``b"tree"``, ``b"commit"``) through the kept
        reader, or None: outside ``kept_processes``, not a full id, of another type, or any
        trouble (the caller asks git itself). A missing object is a GitError."""
        reader = self._helper(_BatchReader, "cat-file", "--batch-command")
        if reader is None:
            return None
        got = reader.read([oid], only=kind)
        return None if got is None else got[oid]

    def read_blobs(self, blobs: Sequence[str]) -> dict[str, bytes]:
        """Raw contents of many objects through one ``git cat-file --batch``."""
        if not blobs:
            return {}
        unique = list(dict.fromkeys(blobs))
        reader = self._helper(_BatchReader, "cat-file", "--batch-command")
        if reader is not None and (kept := reader.read(unique)) is not None:
            return kept
        out = self.run(
            "cat-file", "--batch", input="".join(b + "\n" for b in unique).encode()
        ).stdout
        contents: dict[str, bytes] = {}
        pos = 0
        for blob in unique:
            end = out.index(b"\n", pos)
            header = out[pos:end].split()
            if len(header) < 3:
                raise GitError(["cat-file", "--batch"], 0, f"{blob}: {out[pos:end].decode()}")
            size = int(header[2])
            contents[blob] = out[end + 1 : end + 1 + size]
            pos = end + 1 + size + 1
        return contents

    def blob_sizes(self, blobs: Sequence[str]) -> dict[str, int]:
        """Sizes of many objects through one ``git cat-file --batch-check``."""
        if not blobs:
            return {}
        unique = list(dict.fromkeys(blobs))
        reader = self._helper(_BatchReader, "cat-file", "--batch-command")
        if reader is not None and (kept := reader.sizes(unique)) is not None:
            return kept
        out = self.run(
            "cat-file", "--batch-check", input="".join(b + "\n" for b in unique).encode()
        ).text
        return {b: int(line.split()[2]) for b, line in zip(unique, out.splitlines(), strict=True)}

    def worktree_contents(self, items: Sequence[tuple[str, str]]) -> dict[tuple[str, str], bytes]:
        """Many ``(blob, path)`` pairs in work-tree form. Paths that no attribute or setting
        converts are read raw in one batch; the others one by one through git's filters."""
        if not items:
            return {}
        converted = self._converted_paths([path for _, path in items])
        raw = self.read_blobs([blob for blob, path in items if path not in converted])
        return {
            (blob, path): self.worktree_bytes(blob, path) if path in converted else raw[blob]
            for blob, path in items
        }

    def _converted_paths(self, paths: Sequence[str]) -> set[str]:
        """Paths whose checkout may differ from the raw blob (filters, eol, encoding)."""
        settings = self.core_settings()
        autocrlf = last_value(settings, "core.autocrlf").strip().lower()
        eol = last_value(settings, "core.eol").strip().lower()
        if autocrlf in ("true", "1", "yes", "on") or eol == "crlf":
            return set(paths)
        payload = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
        out = self.run(
            "check-attr",
            "-z",
            "--stdin",
            "filter",
            "ident",
            "working-tree-encoding",
            "eol",
            "crlf",
            input=payload,
        ).stdout.split(b"\0")
        converted: set[str] = set()
        for i in range(0, len(out) - 2, 3):
            path, attr, value = out[i], out[i + 1], out[i + 2]
            if value in (b"unspecified", b"unset") or (attr == b"eol" and value == b"lf"):
                continue
            converted.add(path.decode("utf-8", "surrogateescape"))
        return converted

    def worktree_bytes(self, blob: str, path: str) -> bytes:
        """A blob as it would be checked out at ``path`` (smudge filters, eol conversion)."""
        return self.run("cat-file", "--filters", f"--path={path}", blob).stdout

    def hash_worktree_file(self, file: Path, path: str) -> str:
        """The blob id git would record for ``file`` at ``path`` (clean filters applied)."""
        return self.out("hash-object", f"--path={path}", "--", str(file))
