"""Shell completion (``tidegate completion bash|zsh|fish``) and "did you mean" for a mistyped
command, from the command line's shape in ``cli.completion_table``, without typer or the
engine.

The printed script asks ``tidegate __complete -- WORD...`` (the words after ``tidegate``, the
one being completed last) for candidates, one a line: sub-commands, options, an option's
choices, and after a command that takes one, the run ids of the repository's runs that
command applies to (read from the run store as ``tidegate runs`` reads them). No candidate
(a path, a free value): the shell completes file names.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # the fast path does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

SHELLS = ("bash", "zsh", "fish")
_HELP = ("-h", "--help")

_BASH = """\
# tidegate completion for bash: add to ~/.bashrc
#   eval "$(tidegate completion bash)"
_tidegate_complete() {
    local IFS=$'\\n'
    COMPREPLY=($(tidegate __complete -- "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _tidegate_complete tidegate
"""
_ZSH = """\
# tidegate completion for zsh: add to ~/.zshrc, after compinit
#   eval "$(tidegate completion zsh)"
_tidegate() {
    local -a found
    found=("${(@f)$(tidegate __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    if [[ -n ${found[1]} ]]; then
        compadd -- "${found[@]}"
    else
        _files
    fi
}
compdef _tidegate tidegate
"""
_FISH = """\
# tidegate completion for fish: save as ~/.config/fish/completions/tidegate.fish
#   tidegate completion fish > ~/.config/fish/completions/tidegate.fish
function __tidegate_complete
    set -l words (commandline -opc)
    set -e words[1]
    set -l found (tidegate __complete -- $words (commandline -ct) 2>/dev/null)
    if set -q found[1]
        printf '%s\\n' $found
    else
        __fish_complete_path (commandline -ct)
    end
end
complete -c tidegate -f -a '(__tidegate_complete)'
"""


def script(shell: str) -> str:
    """The completion script for ``shell`` (one of ``SHELLS``)."""
    return {"bash": _BASH, "zsh": _ZSH, "fish": _FISH}[shell]


def shape(path: str) -> tuple[list[str], dict[str, tuple[str, ...] | None], bool]:
    """A command's sub-commands (hidden ones ``!``-marked), options (None: a flag, else its
    choices, () for any value) and whether it takes a run id."""
    from tidegate.cli.completion_table import COMMANDS

    entry = COMMANDS[path]
    words = " ".join(entry if isinstance(entry, tuple) else (entry,)).split()
    options: dict[str, tuple[str, ...] | None] = dict.fromkeys(_HELP)
    subs: list[str] = []
    for word in words:
        if word.startswith("-"):
            name, eq, choices = word.partition("=")
            options[name] = (tuple(choices.split("|")) if choices else ()) if eq else None
        elif word != "RUN":
            subs.append(word)
    return subs, options, "RUN" in words


def complete(words: Sequence[str], runs: Callable[[str, str | None], list[str]]) -> list[str]:
    """The candidates for the last of ``words`` (the command line after ``tidegate``);
    ``runs(command, repo)``: the run ids a command applies to."""
    *before, current = list(words) or [""]
    path, value_of, positional, repo = "", None, 0, None
    for word in before:
        subs, options, _ = shape(path)
        if value_of is not None:
            repo = word if value_of == "--repo" else repo
            value_of = None
        elif word in options:
            value_of = None if options[word] is None else word
        elif word in subs or "!" + word in subs:
            path = f"{path} {word}".strip()
        elif not word.startswith("-"):
            positional += 1
    subs, options, takes_run = shape(path)
    if value_of is not None:
        found = list(options[value_of] or ())
    elif current.startswith("-"):
        found = list(options)
    else:
        found = [s for s in subs if not s.startswith("!")]
        if takes_run and positional == 0:
            found += runs(path, repo)
    return [f for f in found if f.startswith(current)]


def misspelt(args: Sequence[str]) -> str | None:
    """The error line for a command line whose command (or a group's sub-command) is not
    one, as git says it; None when every command word is known."""
    path = ""
    for word in args:
        subs, _, _ = shape(path)
        if word.startswith("-") or not subs:
            return None
        if word not in subs and "!" + word not in subs:
            break
        path = f"{path} {word}".strip()
    else:
        return None
    from difflib import get_close_matches

    where = " ".join(("tidegate", path)).strip()
    close = get_close_matches(word, [s for s in subs if not s.startswith("!")])
    if not close:
        return f"tidegate: '{word}' is not a {where} command. See '{where} --help'."
    said = "command is" if len(close) == 1 else "commands are"
    return f"tidegate: '{word}' is not a {where} command. The most similar {said} " + ", ".join(
        close
    )


def _any(row: dict[str, Any]) -> bool:
    return True


_WANTED: dict[str, Callable[[dict[str, Any]], bool]] = {
    "apply": lambda row: row["status"] == "held" and row["landing"] is None,
    "discard": lambda row: row["status"] == "held" and row["landing"] is None,
    "undo": lambda row: (
        row["landing"] == "applied" or (row["status"] == "succeeded" and row["landing"] is None)
    ),
    "resume": lambda row: row["status"] in ("paused", "interrupted"),
}


def run_ids(command: str, repo: str | None) -> list[str]:
    """The newest run ids of the repository ``command`` applies to, ``latest`` first; none
    when there is no repository or no store (completion never fails)."""
    try:
        from tidegate.store.locate import repository, repository_store
        from tidegate.store.views import listing

        root, common = repository(repo or ".")
        store = repository_store(None, root, common)
        rows = [] if store is None else listing(store, 50)
    except Exception:
        return []
    wanted = _WANTED.get(command, _any)
    return ["latest", *(row["run_id"] for row in rows if wanted(row))]


def complete_command(rest: Sequence[str]) -> int:
    """``tidegate __complete -- WORD...``: the candidates, one a line."""
    words = list(rest[1:] if rest[:1] == ["--"] else rest)
    sys.stdout.write("".join(f"{found}\n" for found in complete(words, run_ids)))
    return 0
