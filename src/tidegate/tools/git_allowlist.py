"""git.exec's allowlist: which git subcommands and options a model or client may use.

``canonical(argv)`` parses ``argv`` the way git's option parser does and answers with
either a refusal (why not) or the argv tidegate will actually run. Parsing follows git:
short options bundle (``-iO<cmd>`` is ``-i -O <cmd>``), a short option that takes a value
takes the rest of its word or the next word, ``--opt=value`` and ``--opt value``, and an
unambiguous prefix of a long option stands for it (``--open=`` for
``--open-files-in-pager=``). Every option is resolved against the subcommand's own table
below; an unknown, ambiguous or unlisted spelling is refused. Options that write files,
run programs, read files outside the repository or redirect git (``-O``, ``--output``,
``--ext-diff``, ``--textconv``, ``--contents``, ``--ignore-revs-file``, ``--no-index``,
``-c``, ``--git-dir`` ...) are simply not in any table.

The argv that runs is rebuilt from what was understood, never passed through: every
option in its full spelling with its value attached (``--max-count=5``), so git cannot
read a value as an option or resolve an abbreviation differently; operands after
``--end-of-options`` where the subcommand supports it; paths after ``--``. An operand that
starts with ``-`` outside the paths is refused (it would be read as an option), and so is
an absolute path or one that climbs out with ``..``. Some options are always added:
``--no-ext-diff --no-textconv`` where git has them, and ``--ignore-submodules=dirty`` so
git never runs inside a submodule's work tree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from tidegate.text.numbers import whole_number
from tidegate.tools.git_subcommands import SUBCOMMANDS, Opt, Subcommand

_PATH_LIMIT_ESCAPES = {
    "follow": "follows one file back across renames, past the path limits that keep "
    "withheld (secret-shaped) files out of git.exec's output; use -- <path> without it",
    "full-diff": "shows whole commits, past the path limits that keep withheld "
    "(secret-shaped) files out of git.exec's output",
}
"""Options that make git ignore the pathspec exclusions git.exec adds for secret-shaped
files (``tidegate.tools.git_secrets``): refused rather than filtered."""

_SIGNATURE_PLACEHOLDER = re.compile(r"%G|%\(signature")
"""``%G?``, ``%GS``, ... (and ref-filter's ``%(signature)``) make git run the configured
gpg program to verify signatures."""


class Refused(msgspec.Struct, frozen=True):
    reason: str


class Accepted(msgspec.Struct, frozen=True):
    argv: tuple[str, ...]
    """The argv tidegate runs (subcommand first), rebuilt from what was understood."""
    head: tuple[str, ...] = ()
    """``argv``'s subcommand and options (grep's pattern included), without operands."""
    operands: tuple[str, ...] = ()
    """The operands before ``--``: revisions, objects, trees or (without ``--``) paths."""
    paths: tuple[str, ...] | None = None
    """The paths given after ``--``, or None when there was no ``--``."""

    def __eq__(self, other: object) -> bool:
        """Two verdicts are equal when they run the same argv (the rest is read from it)."""
        return type(other) is Accepted and other.argv == self.argv

    def __hash__(self) -> int:
        return hash(self.argv)


def canonical(argv: Sequence[str]) -> Accepted | Refused:
    """Parse ``git *argv`` against the allowlist: the argv to run, or why not."""
    if not argv:
        return Refused("git.exec needs a subcommand")
    name, rest = argv[0], list(argv[1:])
    spec = SUBCOMMANDS.get(name)
    if spec is None:
        allowed = ", ".join(sorted(SUBCOMMANDS))
        return Refused(f"git {name!r} is not an allowed subcommand (allowed: {allowed})")
    try:
        parser = _Parser(name, spec)
        parsed = parser.parse(rest)
    except _Refusal as exc:
        return Refused(str(exc))
    return Accepted(parsed, *parser.parts)


class _Refusal(Exception):
    pass


class _Parser(msgspec.Struct):
    name: str
    spec: Subcommand
    options: list[str] = msgspec.field(default_factory=list)
    operands: list[str] = msgspec.field(default_factory=list)
    paths: list[str] | None = None
    parts: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...] | None] = ((), (), None)

    def parse(self, args: list[str]) -> tuple[str, ...]:
        i, only_operands = 0, False
        while i < len(args):
            arg = args[i]
            i += 1
            if arg == "--":
                self.paths = [_checked_path(p) for p in args[i:]]
                break
            if only_operands or not arg.startswith("-") or arg == "-":
                self.operands.append(_checked_operand(arg))
            elif arg == "--end-of-options":
                only_operands = True
            elif arg.startswith("--"):
                i = self._long(arg[2:], args, i)
            else:
                i = self._short(arg[1:], args, i)
        return self._layout()

    # -- options ---------------------------------------------------------------------

    def _long(self, body: str, args: list[str], i: int) -> int:
        key, eq, value = body.partition("=")
        opt = self._resolve(key)
        if opt.arity == "none":
            if eq:
                raise _Refusal(f"git {self.name} option {opt.name} takes no value")
            self._add(opt, None)
        elif opt.arity == "optional":
            self._add(opt, value if eq else None)
        else:
            if not eq:
                if i >= len(args):
                    raise _Refusal(f"git {self.name} option {opt.name} needs a value")
                value, i = args[i], i + 1
            self._add(opt, value)
        return i

    def _resolve(self, key: str) -> Opt:
        table = self.spec.by_long
        if key in table:
            return table[key]
        hits = [name for name in table if name.startswith(key)] if key else []
        if len(hits) == 1:
            return table[hits[0]]
        if len(hits) > 1:
            raise _Refusal(f"git {self.name} option --{key} is ambiguous: {', '.join(hits)}")
        raise _Refusal(f"git {self.name} option --{key} is not allowed")

    def _short(self, bundle: str, args: list[str], i: int) -> int:
        if self.spec.numeric_max_count and whole_number(bundle) is not None:
            self._add(self.spec.by_long["max-count"], bundle)
            return i
        pos = 0
        while pos < len(bundle):
            letter = bundle[pos]
            opt = self.spec.by_short.get(letter)
            if opt is None:
                raise _Refusal(f"git {self.name} option -{letter} is not allowed")
            pos += 1
            if opt.arity == "none":
                self._add(opt, None)
                continue
            value: str | None = bundle[pos:] or None
            if value is None and opt.arity == "required":
                if i >= len(args):
                    raise _Refusal(f"git {self.name} option -{letter} needs a value")
                value, i = args[i], i + 1
            self._add(opt, value)
            break
        return i

    def _add(self, opt: Opt, value: str | None) -> None:
        if value is not None and "\0" in value:
            raise _Refusal(f"git {self.name} option {opt.name}: a value may not hold NUL")
        if opt.long in _PATH_LIMIT_ESCAPES:
            raise _Refusal(f"git {self.name} {opt.name}: {_PATH_LIMIT_ESCAPES[opt.long]}")
        if opt.long in ("format", "pretty") and value and _SIGNATURE_PLACEHOLDER.search(value):
            raise _Refusal(f"git {self.name}: %G placeholders would run a signature program")
        self.options.extend(opt.emit(value))

    # -- the argv that runs ------------------------------------------------------------

    def _layout(self) -> tuple[str, ...]:
        spec, paths = self.spec, self.paths
        operands = list(self.operands)
        has_e = any(o.startswith("-e") for o in self.options)
        pattern = operands.pop(0) if spec.operands == "grep" and operands and not has_e else None
        operands = [_checked_path(o) for o in operands]  # revisions, trees and paths
        if pattern is not None:  # grep's first operand is a pattern, not a place
            operands.insert(0, pattern)
        if spec.max_operands is not None and len(operands) > spec.max_operands:
            raise _Refusal(f"git {self.name} takes at most {spec.max_operands} operands")
        head = [self.name, *spec.forced, *self.options]
        if pattern is not None and spec.operands == "grep":
            self.parts = ((*head, "-e" + pattern), tuple(operands[1:]), _tuple(paths))
        else:
            self.parts = (tuple(head), tuple(operands), _tuple(paths))
        if spec.operands == "paths":
            every = operands + (paths or [])
            return (*head, *(["--", *every] if every else []))
        if spec.operands == "grep":
            return self._grep(head, operands, paths)
        if spec.operands == "blame":
            return self._blame(head, operands, paths)
        if spec.operands == "branch":
            return self._branch(head, operands, paths)
        if paths is not None and spec.operands == "revs":
            raise _Refusal(f"git {self.name} takes no paths")
        tail = ["--end-of-options"] if spec.end_of_options and (operands or paths) else []
        if paths is not None and not spec.dashdash:
            return (*head, *tail, *operands, *paths)
        return (*head, *tail, *operands, *(["--", *paths] if paths is not None else []))

    def _grep(
        self, head: list[str], operands: list[str], paths: list[str] | None
    ) -> tuple[str, ...]:
        if not any(o.startswith("-e") for o in self.options):
            if not operands:
                raise _Refusal("git grep needs a pattern")
            head.append("-e" + operands.pop(0))
        return (*head, *operands, *(["--", *paths] if paths is not None else []))

    def _blame(
        self, head: list[str], operands: list[str], paths: list[str] | None
    ) -> tuple[str, ...]:
        if paths is None:
            if not operands:
                raise _Refusal("git blame needs a file")
            paths = [operands.pop()]
        if len(operands) > 1 or len(paths) != 1:
            raise _Refusal("git blame takes at most one revision and exactly one file")
        return (*head, *operands, "--", *paths)

    def _branch(
        self, head: list[str], operands: list[str], paths: list[str] | None
    ) -> tuple[str, ...]:
        if paths is not None:
            raise _Refusal("git branch takes no paths")
        if "--show-current" in self.options:
            if operands or len(self.options) > 1:
                raise _Refusal("git branch --show-current takes nothing else")
            return tuple(head)
        listing = any(o.startswith(_BRANCH_LISTING) for o in self.options)
        if operands and not listing:
            raise _Refusal("git branch may only list branches: patterns need --list")
        # --list makes every operand a pattern to match, never a branch to create
        return (*head, *([] if "--list" in self.options else ["--list"]), *operands)


_BRANCH_LISTING = (
    "--list",
    "--contains=",
    "--no-contains=",
    "--merged=",
    "--no-merged=",
    "--points-at=",
)


def _tuple(paths: list[str] | None) -> tuple[str, ...] | None:
    return None if paths is None else tuple(paths)


def _checked_operand(arg: str) -> str:
    if arg.startswith("-") and arg != "-":
        raise _Refusal(f"{arg!r} would be read as an option; paths go after '--'")
    if arg == "-":
        raise _Refusal("'-' (standard input) is not allowed")
    if "\0" in arg:
        raise _Refusal("an argument may not hold NUL")
    return arg


_MAGIC = re.compile(r"^:(\([^)]*\)|[/!^]*)")


def _checked_path(arg: str) -> str:
    """Refuse what names a place outside the repository: absolute, ``~``, or climbing out."""
    if "\0" in arg:
        raise _Refusal("an argument may not hold NUL")
    plain = _MAGIC.sub("", arg, count=1) if arg.startswith(":") else arg
    if plain.startswith(("/", "~")) and not arg.startswith(":/"):
        raise _Refusal(f"{arg!r} names a place outside the repository")
    depth = 0
    for part in plain.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                raise _Refusal(f"{arg!r} climbs out of the workspace")
        elif part not in ("", "."):
            depth += 1
    return arg
