"""Shared by the agent-loop tests: a real executor over a real repository, the shipped
scripted model, a real run store, and builders for scripted turns."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.integration.models.conftest import FAST_RETRY, KEY, MODELS, env_for
from tests.integration.models.servers import LoopbackServer, Reply
from tidegate.agent import (
    AgentSession,
    GuardLimits,
    LoopOutcome,
    SessionOptions,
    agent_report,
    default_prompt_configuration,
    resume_session,
)
from tidegate.models import ModelPort, resolve_model
from tidegate.models.pricing import ModelPricing, Price
from tidegate.models.scripted import Script, ScriptedModel
from tidegate.prompt import RunTask
from tidegate.store import StoreFaults, StoreRecorder, open_run_store, resume_ticket
from tidegate.tools.context import ToolContext, ToolLimits
from tidegate.tools.executor import ToolExecutor
from tidegate.tools.policy import ApprovalProfile, TaskMode
from tidegate.workspace.port import WorkspacePort
from tidegate.workspace.states import sha256_bytes

CHECK = f"{sys.executable} -B -c 'import calc; assert calc.add(2, 3) == 5, \"add is wrong\"'"
BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
PRICE = ModelPricing(Price(input=Decimal("1000"), output=Decimal("1000")), "test price")
"""USD 1000 per million tokens: a few thousand tokens cost a few dollars."""

_ids = itertools.count(1)


def scripted(*turns: Mapping[str, Any], **script: Any) -> ScriptedModel:
    return ScriptedModel(Script.model_validate({"turns": list(turns), **script}))


def call(name: str, call_id: str | None = None, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id or f"c{next(_ids)}", "name": name, "arguments": arguments}


def turn(*calls: dict[str, Any], text: str = "", **extra: Any) -> dict[str, Any]:
    return {"text": text, "tool_calls": list(calls), **extra}


def answer(text: str = "Done.", **extra: Any) -> dict[str, Any]:
    return {"text": text, **extra}


def digest(text: str) -> str:
    return sha256_bytes(text.encode())


def executor(
    root: Path,
    *,
    mode: TaskMode = TaskMode.PATCH,
    validation: str | None = CHECK,
    grants: frozenset[str] = frozenset(),
    limits: ToolLimits | None = None,
    task_state: Path | None = None,
) -> ToolExecutor:
    context = ToolContext(
        workspace=WorkspacePort(root),
        mode=mode,
        approval_profile=ApprovalProfile.BALANCED,
        network="denied",
        validation_command=validation,
        grants=grants,
        limits=limits or ToolLimits(),
        task_state_path=task_state,
    )
    return ToolExecutor(context)


def task(root: Path, goal: str = "Fix add() so that it adds.", **extra: Any) -> RunTask:
    return RunTask(task_id="task-1", workspace_root=str(root), goal=goal, **extra)


def session(
    model: ScriptedModel,
    ex: ToolExecutor,
    *,
    goal: str = "Fix add() so that it adds.",
    recorder: Any = None,
    limits: GuardLimits | None = None,
    pricing: ModelPricing | None = None,
    **options: Any,
) -> AgentSession:
    read_only = ex.context.mode.read_only
    return AgentSession.start(
        model=model,
        executor=ex,
        config=configuration(ex),
        task=task(ex.context.root, goal, mode="review" if read_only else "patch"),
        options=SessionOptions(guard_limits=limits or GuardLimits(), **options),
        recorder=recorder,
        pricing=pricing,
    )


def configuration(ex: ToolExecutor) -> Any:
    active = set(ex.registry.active)
    return default_prompt_configuration(
        write=not ex.context.mode.read_only, commands=bool(active & {"command.run"})
    )


class Recorded:
    """A standalone agent run recorded in the repository's real run store."""

    def __init__(
        self, root: Path, run_id: str = "agent-run-1", faults: StoreFaults | None = None
    ) -> None:
        self.root = root
        self.run_id = run_id
        self.store = open_run_store(root, None, faults=faults)
        self.recorder = StoreRecorder(self.store, task_id="task-1", kind="agent")
        self.recorder.begin(run_id, str(root), "patch", {"goal": "test"}, resumed=False)

    def finish(self, s: AgentSession, outcome: LoopOutcome) -> None:
        self.recorder.finish(agent_report(s, outcome))

    def resume(
        self,
        model: ScriptedModel,
        ex: ToolExecutor,
        *,
        limits: GuardLimits | None = None,
        goal: str = "Fix add() so that it adds.",
        **options: Any,
    ) -> AgentSession:
        """A fresh host: a new store connection and recorder, the verified ticket."""
        self.store = open_run_store(self.root, None)
        ticket = resume_ticket(self.store, self.run_id)
        self.recorder = StoreRecorder(self.store, task_id=ticket.task_id, kind="agent")
        self.recorder.begin(self.run_id, str(self.root), "patch", {}, resumed=True)
        done = {str(c["tool_call_id"]) for c in self.recorder.completed_tool_calls()}
        return resume_session(
            ticket.state,
            limits=limits,
            completed=done,
            model=model,
            executor=ex,
            config=configuration(ex),
            task=task(ex.context.root, goal),
            options=SessionOptions(**options),
            recorder=self.recorder,
        )

    def checkpoints(self) -> list[Any]:
        return self.store.checkpoints(self.run_id)


Loopback = Callable[..., tuple[LoopbackServer, ModelPort]]


@pytest.fixture(name="loopback")
def loopback_fixture() -> Iterator[Loopback]:
    """``loopback(protocol, *replies, **settings)``: a scripted provider on 127.0.0.1 and a
    model port wired to it through ``resolve_model`` (the real SDK)."""
    opened: list[tuple[LoopbackServer, ModelPort]] = []

    def start(protocol: str, *replies: Reply, **settings: Any) -> tuple[LoopbackServer, ModelPort]:
        server = LoopbackServer(replies, key=KEY, key_header="authorization").__enter__()
        merged: dict[str, object] = {"retry": dict(FAST_RETRY), **settings}
        model = resolve_model(f"{protocol}:{MODELS[protocol]}", merged, env_for(protocol, server))
        opened.append((server, model))
        return server, model

    yield start
    for server, model in opened:
        model.close()
        server.stop()
