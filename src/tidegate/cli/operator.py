"""Operator commands: bootstrap, engineer, meeting, goal-curation, improvement-curation and
the review records (``tidegate review run|read``). Positional grammar as documented in
docs/operator.md; every command has ``--json`` with the same content as its text view.
Services live in ``tidegate.operator``; this module only parses, calls and renders."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

JsonOpt = Annotated[bool, typer.Option("--json", help="Print the view as one JSON object.")]
Topology = Annotated[str, typer.Argument(help="single-process (ray: the gym only).")]
BaseTypeArg = Annotated[str, typer.Argument(help="local-harness, openai or anthropic.")]
Objective = Annotated[str, typer.Argument(help="The objective text.")]
RootArg = Annotated[
    str | None,
    typer.Argument(help="The state root (else $TIDEGATE_STATE_ROOT, else the default)."),
]
RequiredRoot = Annotated[
    str | None,
    typer.Argument(help="The state root (required; $TIDEGATE_STATE_ROOT is not consulted)."),
]
ModelOpt = Annotated[
    str | None, typer.Option("--model", help="The model name, for base types openai/anthropic.")
]
PlannerOpt = Annotated[
    str | None, typer.Option("--planner", help="local-harness: 'structured' or 'scripted:PATH'.")
]
VerifyOpt = Annotated[
    str | None, typer.Option("--verify", help="Command run in the shadow via /bin/sh -c.")
]
RepoOpt = Annotated[Path, typer.Option("--repo", help="The repository (default: .).")]
BaseTypeOpt = Annotated[
    str, typer.Option("--base-type", help="local-harness (default), openai or anthropic.")
]


def _app(name: str, help_text: str) -> typer.Typer:
    return typer.Typer(name=name, help=help_text, no_args_is_help=True, add_completion=False)


bootstrap_app = _app("bootstrap", "Run an identity's mode with explicit values.")
engineer_app = _app("engineer", "One bounded, verified engineer action; its audit readback.")
meeting_app = _app("meeting", "Capture meeting decisions and goals; read the latest meeting.")
goals_app = _app("goal-curation", "Curate the goal register; read it.")
improvement_app = _app("improvement-curation", "Approve or defer review proposals; read them.")
review_records_app = _app(
    "review-records",  # cli.groups.OPERATOR_REVIEW: where `tidegate review run|read` go
    "Review records: run a review and persist it; read it.",
)


def operator_apps() -> list[typer.Typer]:
    return [
        bootstrap_app,
        engineer_app,
        meeting_app,
        goals_app,
        improvement_app,
        review_records_app,
    ]


def _emit(command: str, view: dict[str, Any], as_json: bool, exit_code: int = 0) -> None:
    from tidegate.operator.view import as_json as render_json
    from tidegate.operator.view import as_text

    sys.stdout.write(render_json(command, view) if as_json else as_text(command, view))
    raise typer.Exit(exit_code)


def _select(identity: str, base_type: str, topology: str, mode: str) -> Any:
    from tidegate.operator.identities import select

    return select(identity, base_type, topology, mode)


def _backend(selection: Any, model: str | None, planner: str | None) -> Any:
    from tidegate.operator.guarded import Backend

    return Backend.of(selection, model, planner)


@bootstrap_app.command("run")
def bootstrap_run(
    identity: Annotated[str, typer.Argument(help="engineer, meeting, goal-curator, ...")],
    base_type: BaseTypeArg,
    topology: Topology,
    objective: Objective,
    state_root: RootArg = None,
    repo: RepoOpt = Path("."),
    model: ModelOpt = None,
    planner: PlannerOpt = None,
    verify: VerifyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run IDENTITY's primary mode on BASE_TYPE and TOPOLOGY (every value required)."""
    from tidegate.operator.bootstrap import bootstrap

    view = bootstrap(
        identity, base_type, topology, objective, state_root, repo, model, planner, verify
    )
    _emit("bootstrap run", view, as_json, view.get("exit_code", 0))


@engineer_app.command("run")
def engineer_run(
    topology: Topology,
    workspace_root: Annotated[Path, typer.Argument(help="The repository to work in.")],
    objective: Objective,
    state_root: RootArg = None,
    base_type: BaseTypeOpt = "local-harness",
    model: ModelOpt = None,
    planner: PlannerOpt = None,
    verify: VerifyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Inspect WORKSPACE_ROOT, take one bounded action, verify it, persist the evidence."""
    from tidegate.operator.engineer import engineer_run as run

    selection = _select("engineer", base_type, topology, "engineer")
    backend = _backend(selection, model, planner)
    view = run(selection, backend, workspace_root, objective, state_root, verify=verify)
    _emit("engineer run", view, as_json, view["exit_code"])


@engineer_app.command("read")
def engineer_read(topology: Topology, state_root: RootArg = None, as_json: JsonOpt = False) -> None:
    """The latest engineer session's audit view (reads only; shows no objective text)."""
    from tidegate.operator.identities import TOPOLOGIES, select
    from tidegate.operator.readback import engineer_read as read
    from tidegate.operator.state_root import read_root

    if topology not in TOPOLOGIES:
        select("engineer", "local-harness", topology, "engineer")  # the one-line refusal
    _emit("engineer read", read(read_root(state_root), topology), as_json)


@meeting_app.command("run")
def meeting_run(
    base_type: BaseTypeArg,
    topology: Topology,
    objective: Objective,
    state_root: RootArg = None,
    as_json: JsonOpt = False,
) -> None:
    """Capture agenda/update/decision/risk/next-step/open-question/goal lines."""
    from tidegate.operator.runs import meeting_run as run

    selection = _select("meeting", base_type, topology, "meeting")
    _emit("meeting run", run(selection, objective, state_root), as_json)


@meeting_app.command("read")
def meeting_read(
    base_type: BaseTypeArg,
    topology: Topology,
    state_root: RequiredRoot = None,
    as_json: JsonOpt = False,
) -> None:
    """The latest meeting record (STATE_ROOT required)."""
    from tidegate.operator.readback import meeting_read as read
    from tidegate.operator.state_root import read_root

    _select("meeting", base_type, topology, "meeting")
    root = read_root(state_root, required=f"meeting read {base_type} {topology}")
    _emit("meeting read", read(root), as_json)


@goals_app.command("run")
def goal_curation_run(
    base_type: BaseTypeArg,
    topology: Topology,
    objective: Objective,
    state_root: RootArg = None,
    as_json: JsonOpt = False,
) -> None:
    """Add or update goals (goal: Title | priority=N | status=... | rationale=...)."""
    from tidegate.operator.runs import goal_curation_run as run

    selection = _select("goal-curator", base_type, topology, "goal-curation")
    _emit("goal-curation run", run(selection, objective, state_root), as_json)


@goals_app.command("read")
def goal_curation_read(
    base_type: BaseTypeArg, topology: Topology, state_root: RootArg = None, as_json: JsonOpt = False
) -> None:
    """The goal register: active top five, backlog by status, every change."""
    from tidegate.operator.readback import goals_read
    from tidegate.operator.state_root import read_root

    _select("goal-curator", base_type, topology, "goal-curation")
    _emit("goal-curation read", goals_read(read_root(state_root)), as_json)


@improvement_app.command("run")
def improvement_curation_run(
    base_type: BaseTypeArg,
    topology: Topology,
    objective: Objective,
    state_root: RootArg = None,
    as_json: JsonOpt = False,
) -> None:
    """Approve (approve: ID | priority=N) or defer (defer: ID | reason=...) proposals."""
    from tidegate.operator.runs import improvement_run

    selection = _select("improvement-curator", base_type, topology, "improvement-curation")
    _emit("improvement-curation run", improvement_run(selection, objective, state_root), as_json)


@improvement_app.command("read")
def improvement_curation_read(
    base_type: BaseTypeArg,
    topology: Topology,
    state_root: RequiredRoot = None,
    as_json: JsonOpt = False,
) -> None:
    """Approved and deferred proposals, goals, the latest decision (STATE_ROOT required)."""
    from tidegate.operator.readback import improvement_read
    from tidegate.operator.state_root import read_root

    _select("improvement-curator", base_type, topology, "improvement-curation")
    root = read_root(state_root, required=f"improvement-curation read {base_type} {topology}")
    _emit("improvement-curation read", improvement_read(root), as_json)


@review_records_app.command("run")
def review_run(
    base_type: BaseTypeArg,
    topology: Topology,
    objective: Objective,
    state_root: RootArg = None,
    repo: RepoOpt = Path("."),
    verify: VerifyOpt = None,
    model: ModelOpt = None,
    planner: PlannerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run the engine's review mode (changes nothing) and persist a review artifact."""
    from tidegate.operator.runs import review_run as run

    selection = _select("engineer", base_type, topology, "review")
    backend = _backend(selection, model, planner)
    view = run(selection, backend, repo, objective, state_root, verify=verify)
    _emit("review run", view, as_json, view["exit_code"])


@review_records_app.command("read")
def review_read(
    base_type: BaseTypeArg,
    topology: Topology,
    state_root: RequiredRoot = None,
    as_json: JsonOpt = False,
) -> None:
    """The latest review artifact (STATE_ROOT required)."""
    from tidegate.operator.readback import review_read as read
    from tidegate.operator.state_root import read_root

    _select("engineer", base_type, topology, "review")
    root = read_root(state_root, required=f"review read {base_type} {topology}")
    _emit("review read", read(root), as_json)


CwdOpt = Annotated[Path, typer.Option("--cwd", help="Where the shell starts (default: .).")]


def _terminal(
    topology: str,
    objective: str,
    state_root: str | None,
    cwd: Path,
    recipe: str | None,
    as_json: bool,
) -> None:
    from tidegate.operator.state_root import run_root
    from tidegate.operator.terminal import terminal_run
    from tidegate.operator.terminal_session import parse_steps

    selection = _select("engineer", "terminal-shell", topology, "terminal")
    parse_steps(objective)  # a malformed objective is refused before the root is touched
    view = terminal_run(selection, objective, run_root(state_root), cwd=cwd, recipe=recipe)
    _emit("engineer terminal", view, as_json, 0 if view["outcome"] == "success" else 1)


@engineer_app.command("terminal")
def engineer_terminal(
    topology: Topology,
    objective: Objective,
    state_root: RootArg = None,
    cwd: CwdOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """A bounded shell session on a real PTY: command:, input:, key:, wait-for:, expect:."""
    _terminal(topology, objective, state_root, cwd, None, as_json)


@engineer_app.command("terminal-file")
def engineer_terminal_file(
    topology: Topology,
    objective_file: Annotated[Path, typer.Argument(help="A UTF-8 regular file (no symlink).")],
    state_root: RootArg = None,
    cwd: CwdOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """The same session, its steps read from OBJECTIVE_FILE."""
    from tidegate.operator.records import read_text_file

    _terminal(topology, read_text_file(objective_file), state_root, cwd, None, as_json)


@engineer_app.command("terminal-recipe-list")
def terminal_recipe_list(as_json: JsonOpt = False) -> None:
    """The shipped recipes."""
    from tidegate.operator.recipes import recipe_names, recipe_summary

    _emit(
        "engineer terminal-recipe-list",
        {"recipes": {n: recipe_summary(n) for n in recipe_names()}},
        as_json,
    )


@engineer_app.command("terminal-recipe-show")
def terminal_recipe_show(
    name: Annotated[str, typer.Argument(help="A recipe name.")], as_json: JsonOpt = False
) -> None:
    """A recipe's contents (reads only)."""
    from tidegate.operator.recipes import recipe_text

    text = recipe_text(name)
    if as_json:
        _emit("engineer terminal-recipe-show", {"recipe": name, "text": text}, True)
    sys.stdout.write(text)


@engineer_app.command("terminal-recipe")
def terminal_recipe(
    topology: Topology,
    name: Annotated[str, typer.Argument(help="A recipe name.")],
    state_root: RootArg = None,
    cwd: CwdOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Run a shipped recipe as a terminal session."""
    from tidegate.operator.recipes import recipe_text

    _terminal(topology, recipe_text(name), state_root, cwd, name, as_json)


@engineer_app.command("terminal-read")
def engineer_terminal_read(
    topology: Topology, state_root: RootArg = None, as_json: JsonOpt = False
) -> None:
    """The latest terminal session's audit (reads only)."""
    from tidegate.operator.readback import terminal_read
    from tidegate.operator.state_root import read_root

    _select("engineer", "terminal-shell", topology, "terminal")
    _emit("engineer terminal-read", terminal_read(read_root(state_root), topology), as_json)


@engineer_app.command("agent-submit")
def engineer_agent_submit(
    topology: Topology,
    state_root: RootArg = None,
    agent: Annotated[
        str, typer.Option("--agent", help="The agent contract (codex, aider).")
    ] = "codex",
    model: Annotated[str | None, typer.Option("--agent-model", help="The model it uses.")] = None,
    cwd: CwdOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Launch the agent's interactive flow on a PTY, submit its one fixed payload, and
    classify the outcome: success (exit 0), unsupported with one reason code (exit 5),
    runtime-failure (exit 1)."""
    from tidegate.agents.contracts import load_contract
    from tidegate.operator.state_root import run_root
    from tidegate.operator.terminal import agent_submit_run

    selection = _select("engineer", "terminal-shell", topology, "terminal")
    load_contract(agent)  # an unknown agent is refused before the root is touched
    view = agent_submit_run(selection, agent, run_root(state_root), cwd=cwd, model=model)
    codes = {"success": 0, "unsupported": 5, "runtime-failure": 1}
    _emit("engineer agent-submit", view, as_json, codes[view["outcome"]])
