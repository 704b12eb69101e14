"""git.exec keeps secret-shaped files withheld: git never reads them for the model.

The workspace tools withhold secret-shaped files (``workspace.secret_files``), but git
also holds the tracked ones: in commits, in the index, as loose or packed blobs. Three
rules keep them out of git.exec, each applied before git runs (containment of what git
reads, not a filter of what it prints, so an output format, a missing file name or a
yes/no search answer cannot carry them either):

1. **Path limits.** diff, log, show and grep get one pathspec exclusion per secret name
   pattern (``:(exclude,top).env``, ``:(exclude,top)*/.env`` ...), so git neither prints nor searches those
   files in any commit, tree, index or work tree. Options that make git look past its path
   limits (``--follow``, ``--full-diff``) are refused by the allowlist. Pathspecs cannot
   re-include, so templates whose names match a pattern (``.env.example``) are left out
   too; a bare-name allowance equal to a pattern (``readable_secrets = [".env"]``) drops
   that exclusion.
2. **Object names.** An operand that names a path (``HEAD:.env``, ``:.env``,
   ``:0:.npmrc``, ``HEAD^{tree}:./x/../.env``) is refused when the
   path, normalised, is withheld.
3. **Object ids.** An operand that resolves to a blob without naming its path (an id, an
   abbreviation, a tag, a ref) is shown only if git finds it at a readable path in the
   objects reachable from any ref, reflog or the index (``rev-list --objects``), which
   names each object by the first path it meets. A blob met first at a withheld path, or
   not met at all (unreachable), is refused. (git 2.39 cuts a name there at its first
   newline: a committed secret named ``x\n.env`` would be taken for ``x``.)

Tree listings (``ls-tree``, ``rev-list --objects``, ``ls-files -s``, ``status``) still
name withheld files and their blob ids, as a workspace listing names them: names, never
content.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

import msgspec

from tidegate.git.command import Git
from tidegate.tools.git_allowlist import Accepted
from tidegate.workspace.secret_files import SECRET_FILE_NAMES, SecretFiles

PATH_LIMITED = frozenset({"diff", "log", "show", "grep"})
"""Subcommands that print or search file content across paths: they get the exclusions."""
OBJECT_READERS = frozenset({"diff", "log", "show", "grep", "cat-file"})
"""Subcommands whose operands may name a blob whose content git would print."""
LEFT_OUT = (
    "secret-shaped files (.env, *.pem, id_rsa ... and templates matching those names) "
    "are left out of this output; the user allows one with readable_secrets"
)


class Withheld(Exception):
    """The argument would show a withheld file; the message names it."""


class Plan(msgspec.Struct, frozen=True):
    argv: tuple[str, ...]
    left_out: str | None
    """Why some paths are missing from the output, or None when nothing was excluded."""


def exclusions(secrets: SecretFiles) -> tuple[str, ...]:
    """Exclusion pathspecs from the repository's top, at any depth, for every withheld
    name: the secret name patterns less the user's bare-name allowances. They are plain
    (not ``glob``) pathspecs, whose ``*`` and ``?`` also match ``/``: ``*.pem`` reaches
    every depth alone, ``.env`` needs ``*/.env`` beside it; a file under a directory with
    a secret-shaped name (``x/.env.d/a.py``) is left out too. (``:(glob)**/.env`` says the
    same exactly, and makes ``git diff`` on 50,000 files take 0.2 s longer; a pattern an
    allowance was cut out of needs it, since there ``?`` must not match ``/``.) A literal
    allowance (``.env``, ``.env.local``) is cut out of each pattern exactly (``*.env``
    becomes ``?*.env``, see ``_minus``); a glob allowance drops a pattern only when it is
    that pattern or ``*``. A path allowance (``config/dev.key``) cannot be cut out of a
    pathspec, so that file stays out of path-limited output (it is readable as
    ``<rev>:<path>``)."""
    bare = [glob for glob in secrets.allowed if "/" not in glob]
    if "*" in bare:
        return ()
    literal = [name for name in bare if not _GLOB_CHARS.search(name)]
    out: list[str] = []
    for pattern in SECRET_FILE_NAMES:
        if pattern in bare:
            continue
        globs = [_tokens(pattern)]
        for name in literal:
            globs = [g2 for g in globs for g2 in (_minus(g, name) if _fits(g, name) else [g])]
        if globs != [_tokens(pattern)]:  # cut: its "?" and "[!x]" must not match "/"
            out += [f":(exclude,glob,top)**/{_render(g)}" for g in globs]
            continue
        out.append(f":(exclude,top){pattern}")
        if not pattern.startswith("*"):
            out.append(f":(exclude,top)*/{pattern}")
    return tuple(out)


# A glob as tokens: a literal character, "?" (any one), a set of characters one may not
# be ("[!...]"), or "*". Every glob here has at most one "*".
Token = str | frozenset[str]
_GLOB_CHARS = re.compile(r"[*?\[\]\\]")


def _tokens(pattern: str) -> list[Token]:
    return [frozenset() if ch == "?" else ch for ch in pattern]  # "?" is "none excluded"


def _fits(glob: list[Token], name: str) -> bool:
    if "*" not in glob:
        return len(glob) == len(name) and all(_one(t, c) for t, c in zip(glob, name, strict=True))
    star = glob.index("*")
    head, tail = glob[:star], glob[star + 1 :]
    if len(name) < len(head) + len(tail):
        return False
    end = name[len(name) - len(tail) :] if tail else ""
    return _fits(head, name[: len(head)]) and _fits(tail, end)


def _one(token: Token, ch: str) -> bool:
    return ch not in token if isinstance(token, frozenset) else token == ch


def _minus(glob: list[Token], name: str) -> list[list[Token]]:
    """Globs that together match exactly what ``glob`` matches except ``name`` (which it
    matches): differ from ``name`` at one position, or have another length."""

    def differ(tokens: list[Token], at: int, ch: str) -> list[list[Token]]:
        token = tokens[at]
        if not isinstance(token, frozenset):
            return []  # a literal character cannot differ
        return [[*tokens[:at], token | {ch}, *tokens[at + 1 :]]]

    if "*" not in glob:
        return [g for i, ch in enumerate(name) for g in differ(glob, i, ch)]
    star = glob.index("*")
    head, tail = glob[:star], glob[star + 1 :]
    middle = name[len(head) : len(name) - len(tail)]
    tail_at = len(name) - len(tail)
    any_: Token = frozenset()
    out: list[list[Token]] = []
    for i in range(len(head)):
        out += differ(glob, i, name[i])
    for j in range(len(tail)):
        out += differ(glob, star + 1 + j, name[tail_at + j])
    out += [[*head, *[any_] * k, *tail] for k in range(len(middle))]
    out.append([*head, *[any_] * (len(middle) + 1), "*", *tail])
    for i, ch in enumerate(middle):
        rest = len(middle) - i - 1
        out.append([*head, *[any_] * i, frozenset({ch}), *[any_] * rest, *tail])
    return out


def _render(glob: list[Token]) -> str:
    def escape(ch: str) -> str:
        return "\\" + ch if ch in "*?[]\\!" else ch

    parts = []
    for token in glob:
        if isinstance(token, frozenset):
            parts.append("[!" + "".join(escape(c) for c in sorted(token)) + "]" if token else "?")
        else:
            parts.append(token if token == "*" else escape(token))
    return "".join(parts)


def plan(
    verdict: Accepted, git: Git, secrets: SecretFiles, known: dict[str, str] | None = None
) -> Plan:
    """The argv to run for ``verdict``, or ``Withheld`` when an argument would show a
    withheld file. ``known``: the repository's object -> path map, kept by the caller
    between calls (see ``Objects``)."""
    name = verdict.head[0] if verdict.head else verdict.argv[0]
    for arg in verdict.operands:
        _check_spelled(arg, secrets)
    for arg in verdict.paths or ():
        _check_path(arg, arg, secrets)
        _check_spelled(arg, secrets)  # pathspec magic: ':(glob)**/.env'
    if name not in OBJECT_READERS:
        return Plan(verdict.argv, None)
    operands = list(verdict.operands)
    objects = Objects(git, known)
    if name == "cat-file":
        revs, paths = operands, []
    elif verdict.paths is not None:
        revs, paths = operands, list(verdict.paths)
    else:
        revs, paths = _split(objects, operands)
    for rev in revs:
        if not _names_its_path(rev):
            _check_objects(objects, rev, secrets)
    if name not in PATH_LIMITED:
        return Plan(verdict.argv, None)
    excluded = exclusions(secrets)
    if not excluded:
        return Plan(verdict.argv, None)
    head = list(verdict.head)
    tail = ["--end-of-options"] if name != "grep" and revs else []
    argv = (*head, *tail, *revs, "--", *paths, *excluded)
    return Plan(argv, LEFT_OUT)


# -- object names that spell a path ------------------------------------------------------

_STAGE = re.compile(r"^:[0-3]:")
_RANGE = re.compile(r"\.\.\.?")


def _spelled_path(name: str) -> str | None:
    """The path an object name spells (``<rev>:<path>``, ``:<path>``, ``:<n>:<path>``),
    or None. ``:/<text>`` searches commit messages; a colon inside ``@{...}`` or
    ``^{...}`` is not a separator (git scans the same way)."""
    if name.startswith(":/"):
        return None
    if name.startswith(":"):
        return _STAGE.sub("", name) if _STAGE.match(name) else name[1:]
    depth = 0
    for i, ch in enumerate(name):
        if ch == "{":
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
        elif ch == ":" and not depth:
            return name[i + 1 :]
    return None


def _check_spelled(arg: str, secrets: SecretFiles) -> None:
    """The path ``arg`` spells, or ``arg`` itself read as a path. (Either end of a range
    ``A..B`` is a blob id to the check below unless the whole names one path.)"""
    spelled = _spelled_path(arg)
    _check_path(arg, arg if spelled is None else spelled, secrets)


def _check_path(arg: str, path: str, secrets: SecretFiles) -> None:
    norm = posixpath.normpath(path).lstrip("/") if path else ""
    if norm not in ("", ".") and secrets.withheld(norm):
        raise Withheld(f"{arg}: names {norm}, a secret-shaped file withheld from the "
                       "model's tools")  # fmt: skip


def _names_its_path(arg: str) -> bool:
    """One object named by its path: the path check above has already judged it."""
    return _RANGE.search(arg) is None and _spelled_path(arg) is not None


# -- object ids --------------------------------------------------------------------------


def _split(objects: Objects, operands: Sequence[str]) -> tuple[list[str], list[str]]:
    """Revisions, then paths, as git reads operands without ``--``: up to the first one
    that is not a revision, the rest are paths."""
    for i, arg in enumerate(operands):
        if not objects.resolve(arg):
            return list(operands[:i]), list(operands[i:])
    return list(operands), []


def _check_objects(objects: Objects, arg: str, secrets: SecretFiles) -> None:
    ids = objects.resolve(arg)
    if not ids:
        return
    query = "".join(f"{i}^{{}}\n" for i in ids).encode()
    res = objects.git.run("cat-file", "--batch-check", input=query, check=False)
    for line in res.stdout.decode("ascii", "replace").splitlines():
        oid, _, kind = line.partition(" ")
        if not kind.startswith("blob"):
            continue
        path = objects.path_of(oid)
        if not path:  # unreachable, or reached only as a ref's own target
            raise Withheld(f"{arg}: blob {oid[:12]} is at no path git.exec can check "
                           "(a ref's own target, or not reachable), withheld")  # fmt: skip
        if secrets.withheld(path):
            raise Withheld(f"{arg}: blob {oid[:12]} is stored at {path}, a secret-shaped "
                           "file withheld from the model's tools")  # fmt: skip


MAX_REMEMBERED = 500_000
"""Object -> path maps up to this size are kept between calls (about 100 bytes each)."""


class Objects:
    """What git says about the objects of one call: the ids an operand resolves to
    (``rev-parse --revs-only``: none when it is not a revision), and object id -> the
    first path ``rev-list --objects`` names it by, over every ref, reflog entry and the
    index. ``known`` is the map from an earlier call on the same repository: an object
    is immutable, so a path it was met at stays true; an object it lacks makes the map
    be read again (once per call)."""

    def __init__(self, git: Git, known: dict[str, str] | None = None) -> None:
        self.git = git
        self._ids: dict[str, list[str]] = {}
        self._paths = {} if known is None else known
        self._read = False

    def resolve(self, arg: str) -> list[str]:
        if arg not in self._ids:
            res = self.git.run("rev-parse", "--revs-only", arg, check=False)
            out = res.stdout.decode("ascii", "replace").split() if res.returncode == 0 else []
            self._ids[arg] = [line.lstrip("^") for line in out]
        return self._ids[arg]

    def path_of(self, oid: str) -> str | None:
        if oid not in self._paths and not self._read:
            self._read = True
            res = self.git.run(
                "rev-list", "--objects", "--all", "--reflog", "--indexed-objects", check=False
            )
            self._paths.clear()
            for line in res.stdout.decode("utf-8", "surrogateescape").splitlines():
                oid_, _, path = line.partition(" ")
                self._paths.setdefault(oid_, path)
            if len(self._paths) > MAX_REMEMBERED:
                found = self._paths.get(oid)
                self._paths.clear()
                return found
        return self._paths.get(oid)
