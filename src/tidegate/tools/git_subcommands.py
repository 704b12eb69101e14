"""git.exec's tables: the subcommands a model or client may run, each with the options it
accepts (and their value arity) and how its canonical argv is laid out. Anything not in
a table is refused (``tidegate.tools.git_allowlist`` parses against them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import msgspec

Arity = Literal["none", "required", "optional"]


class Opt(msgspec.Struct, frozen=True):
    """One option: its long name (without ``--``), short letter, and value arity."""

    long: str | None
    short: str | None
    arity: Arity

    def emit(self, value: str | None) -> list[str]:
        """Full spelling, value attached; an empty value of a short-only option stays a
        word of its own so that git cannot take the next word as the value."""
        if self.long is not None:
            return [f"--{self.long}" if value is None else f"--{self.long}={value}"]
        assert self.short is not None
        if value is None:
            return [f"-{self.short}"]
        return [f"-{self.short}", ""] if value == "" else [f"-{self.short}{value}"]

    @property
    def name(self) -> str:
        return f"--{self.long}" if self.long else f"-{self.short}"


def _opts(*specs: str) -> tuple[Opt, ...]:
    """Whitespace-separated specs: ``-p|--patch``, ``--stat=?`` (optional value),
    ``-U|--unified=`` (required value)."""
    out = []
    for spec in " ".join(specs).split():
        arity: Arity = "none"
        if spec.endswith("=?"):
            arity, spec = "optional", spec[:-2]
        elif spec.endswith("="):
            arity, spec = "required", spec[:-1]
        short = long = None
        for part in spec.split("|"):
            if part.startswith("--"):
                long = part[2:]
            else:
                short = part[1:]
        out.append(Opt(long, short, arity))
    return tuple(out)


Operands = Literal["revs", "paths", "revs-then-paths", "grep", "blame", "branch"]


class Subcommand(msgspec.Struct, frozen=True):
    """What one subcommand accepts and how its canonical argv is laid out."""

    options: tuple[Opt, ...]
    operands: Operands
    forced: tuple[str, ...] = ()
    end_of_options: bool = True
    """Whether git's parser of this subcommand understands ``--end-of-options``."""
    dashdash: bool = True
    """Whether paths follow ``--`` (ls-tree takes them as plain operands)."""
    numeric_max_count: bool = False
    """``-5`` means ``--max-count=5`` (log-like commands)."""
    max_operands: int | None = None
    by_long: Mapping[str, Opt] = msgspec.field(default_factory=dict)
    """The options by long name (made from ``options``, whatever is passed)."""
    by_short: Mapping[str, Opt] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        longs = {o.long: o for o in self.options if o.long}
        shorts = {o.short: o for o in self.options if o.short}
        if len(longs) != sum(1 for o in self.options if o.long) or len(shorts) != sum(
            1 for o in self.options if o.short
        ):
            raise ValueError("an option table names one option twice")
        msgspec.structs.force_setattr(self, "by_long", longs)
        msgspec.structs.force_setattr(self, "by_short", shorts)


_NO_PROGRAMS = ("--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty")

DIFF = _opts(
    "-p|--patch -u -s|--no-patch -U|--unified= --raw --patch-with-raw "
    "--patch-with-stat --stat=? --numstat --shortstat --dirstat=? "
    "--cumulative --dirstat-by-file=? --summary --compact-summary "
    "--name-only --name-status --color=? --no-color --word-diff=? "
    "--word-diff-regex= --color-words=? --color-moved=? --no-color-moved "
    "--no-renames --check --full-index --binary --abbrev=? "
    "-B|--break-rewrites=? -M|--find-renames=? -C|--find-copies=? "
    "--find-copies-harder -D|--irreversible-delete -l= --diff-filter= -S= "
    "-G= --pickaxe-all --pickaxe-regex -R --relative=? --no-relative "
    "-a|--text --ignore-cr-at-eol --ignore-space-at-eol "
    "-b|--ignore-space-change -w|--ignore-all-space --ignore-blank-lines "
    "-I|--ignore-matching-lines= --inter-hunk-context= "
    "-W|--function-context --exit-code --quiet --minimal --patience "
    "--histogram --anchored= --diff-algorithm= --indent-heuristic "
    "--no-indent-heuristic --src-prefix= --dst-prefix= --no-prefix "
    "--line-prefix= --ita-invisible-in-index -z --no-ext-diff --no-textconv"
)
REVS = _opts(
    "-n|--max-count= --skip= --since= --after= --until= --before= --author= "
    "--committer= --grep= --all-match --invert-grep -i|--regexp-ignore-case "
    "-E|--extended-regexp -F|--fixed-strings -P|--perl-regexp "
    "--basic-regexp --merges --no-merges --min-parents= --max-parents= "
    "--first-parent --all --branches=? --tags=? --remotes=? --glob= "
    "--exclude= --not --ancestry-path --simplify-by-decoration "
    "--full-history --dense --sparse --simplify-merges --left-right "
    "--left-only --right-only --cherry-pick --cherry-mark --cherry "
    "--boundary --topo-order --date-order --author-date-order --reverse "
    "--no-walk=? --do-walk"
)
FORMAT = _opts(
    "--oneline --pretty=? --format= --abbrev-commit --no-abbrev-commit "
    "--encoding= --no-notes --date= --relative-date --parents --children "
    "--graph --decorate=? --no-decorate --source --use-mailmap --follow "
    "--log-size -m -c --cc --diff-merges= --no-diff-merges --full-diff -t "
    "-r --root"
)

SUBCOMMANDS: Mapping[str, Subcommand] = {
    "status": Subcommand(
        _opts(
            "-s|--short -b|--branch --show-stash --porcelain=? --long -z "
            "-u|--untracked-files=? --ignored=? --ahead-behind --no-ahead-behind "
            "--renames --no-renames --find-renames=? --no-column"
        ),
        "paths",
        forced=("--ignore-submodules=dirty",),
        end_of_options=False,
    ),
    "diff": Subcommand(
        DIFF + _opts("--cached --staged --merge-base -1|--base -2|--ours -3|--theirs"),
        "revs-then-paths",
        forced=_NO_PROGRAMS,
    ),
    "log": Subcommand(
        REVS + FORMAT + DIFF, "revs-then-paths", forced=_NO_PROGRAMS, numeric_max_count=True
    ),
    "show": Subcommand(
        REVS + FORMAT + DIFF, "revs-then-paths", forced=_NO_PROGRAMS, numeric_max_count=True
    ),
    "rev-list": Subcommand(
        REVS + _opts("--count --parents --children --objects --timestamp"),
        "revs-then-paths",
        numeric_max_count=True,
    ),
    "shortlog": Subcommand(
        REVS + _opts("--numbered --summary -e|--email --group= --format="),
        "revs-then-paths",
        numeric_max_count=True,
    ),
    "rev-parse": Subcommand(
        _opts(
            "--verify -q|--quiet --short=? --abbrev-ref=? --symbolic "
            "--symbolic-full-name --all --branches=? --tags=? --remotes=? "
            "--show-toplevel --show-prefix --show-cdup --is-inside-work-tree "
            "--is-inside-git-dir --is-bare-repository --is-shallow-repository "
            "--git-dir --absolute-git-dir --git-common-dir --show-object-format=? "
            "--since= --until= --revs-only --no-revs --flags --no-flags --not"
        ),
        "revs",
        end_of_options=False,
    ),
    "ls-files": Subcommand(
        _opts(
            "-c|--cached -d|--deleted -m|--modified -o|--others -i|--ignored "
            "-s|--stage -u|--unmerged -k|--killed --directory --no-empty-directory "
            "--exclude-standard -x|--exclude= -z -t -v -f --full-name "
            "--error-unmatch --eol --deduplicate --abbrev=? --sparse --format= "
            "--with-tree="
        ),
        "paths",
        end_of_options=False,
    ),
    "ls-tree": Subcommand(
        _opts(
            "-d -r -t -l|--long -z --name-only --name-status --object-only "
            "--full-name --full-tree --abbrev=? --format="
        ),
        "revs-then-paths",
        dashdash=False,
    ),
    "cat-file": Subcommand(_opts("-t -s -e -p"), "revs", max_operands=2),
    "blame": Subcommand(
        _opts(
            "-b --root --show-stats -f|--show-name -n|--show-number -p|--porcelain "
            "--line-porcelain -c -t -l -s -e|--show-email -w --abbrev=? -L= -M=? "
            "-C=? --first-parent --reverse= --since= --date= --incremental "
            "--ignore-rev= --color-lines --color-by-age --minimal --no-textconv"
        ),
        "blame",
        forced=("--no-textconv",),
        end_of_options=False,
    ),
    "grep": Subcommand(
        _opts(
            "-i|--ignore-case -I -w|--word-regexp -v|--invert-match "
            "-n|--line-number --column -l|--files-with-matches --name-only "
            "-L|--files-without-match -c|--count -h -H --full-name "
            "-E|--extended-regexp -G|--basic-regexp -F|--fixed-strings "
            "-P|--perl-regexp -e= --and --or --not --all-match -q|--quiet -z|--null "
            "-o|--only-matching --heading --break -p|--show-function "
            "-W|--function-context -A|--after-context= -B|--before-context= "
            "-C|--context= --max-depth= -r|--recursive --no-recursive --cached "
            "-a|--text --threads= -m|--max-count= --exclude-standard "
            "--no-exclude-standard --no-textconv"
        ),
        "grep",
        forced=("--no-textconv",),
        end_of_options=False,
    ),
    "describe": Subcommand(
        _opts(
            "--all --tags --contains --abbrev=? --candidates= --exact-match --debug "
            "--long --match= --exclude= --always --first-parent"
        ),
        "revs",
    ),
    "merge-base": Subcommand(
        _opts("-a|--all --octopus --independent --is-ancestor --fork-point"), "revs"
    ),
    "branch": Subcommand(
        _opts(
            "--list -a|--all -r|--remotes -v|--verbose --show-current --contains= "
            "--no-contains= --merged= --no-merged= --points-at= --sort= --format= "
            "--no-color --no-column"
        ),
        "branch",
    ),
}
