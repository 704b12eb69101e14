"""The agent: one tool-calling loop over a model port and the tool executor.

- :mod:`.session`: the session's state and checkpoints (:mod:`.session_options`: phase
  tool sets, options, runtime, run id; :mod:`.session_tools`: the tools a phase shows;
  :mod:`.session_resume`: continuing from a checkpoint; :mod:`.session_prompt`;
  :mod:`.session_report`)
- :mod:`.loop`: ``run_loop`` -- budgets, context, the request, the round, finalization
  (:mod:`.loop_outcome`: how it ended; :mod:`.session_compaction`: compacting a session)
- :mod:`.guards`: repeat / cycle / failure / budget decisions (pure, checkpointable)
- :mod:`.evidence`: the ledger of host-attested writes, validations and diffs
- :mod:`.compaction`: fitting the context window; the host-written summary
- :mod:`.transcript`: turns, tool calls, usage and cost (no model prose)
- :mod:`.dispatch`: ``agent_dispatch``, a session tool handing a sub-task to an isolated
  sub-agent (:mod:`.sub_session`, :mod:`.sub_profile`, :mod:`.sub_settings`,
  :mod:`.sub_audit`: what it records in the parent's trace)
"""

from tidegate.agent.dispatch import SubAgentDispatch
from tidegate.agent.evidence import EvidenceLedger
from tidegate.agent.guards import Budget, GuardLimits, LoopGuards
from tidegate.agent.loop import run_loop
from tidegate.agent.loop_outcome import LoopOutcome
from tidegate.agent.session import AgentSession, SessionTool
from tidegate.agent.session_options import (
    AGENT_PHASE,
    READ_ONLY_PHASES,
    READ_ONLY_TOOLS,
    SUB_AGENT_PHASE,
    LoopRecorder,
    LoopSettings,
    ResumeRefused,
    SessionOptions,
    SessionRuntime,
    phase_tools,
)
from tidegate.agent.session_prompt import default_prompt_configuration
from tidegate.agent.session_report import agent_report
from tidegate.agent.session_resume import resume_session
from tidegate.agent.session_tools import SessionToolRun
from tidegate.agent.sub_settings import DispatchSettings
from tidegate.agent.transcript import ToolRecord, Transcript, TurnRecord

__all__ = [
    "AGENT_PHASE",
    "READ_ONLY_PHASES",
    "READ_ONLY_TOOLS",
    "SUB_AGENT_PHASE",
    "AgentSession",
    "Budget",
    "DispatchSettings",
    "EvidenceLedger",
    "GuardLimits",
    "LoopGuards",
    "LoopOutcome",
    "LoopRecorder",
    "LoopSettings",
    "ResumeRefused",
    "SessionOptions",
    "SessionRuntime",
    "SessionTool",
    "SessionToolRun",
    "SubAgentDispatch",
    "ToolRecord",
    "Transcript",
    "TurnRecord",
    "agent_report",
    "default_prompt_configuration",
    "phase_tools",
    "resume_session",
    "run_loop",
]
