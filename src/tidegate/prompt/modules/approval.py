"""The approval profile and the network and write declarations, stated as the host set them."""

from __future__ import annotations

from tidegate.prompt.modules.base import ModuleContext, PromptModule

_PROFILE = {
    "strict": (
        "Calls with side effects (writes, commands, network) wait for explicit approval, "
        "so expect pauses and keep such calls few and deliberate."
    ),
    "balanced": (
        "Reading runs freely; changes inside the workspace and ordinary project commands "
        "may run, while riskier calls such as repository scripts, network use or deletions "
        "may need approval."
    ),
    "trusted-workspace": (
        "The user trusts this workspace: workspace changes and project commands normally "
        "run without asking, while network use still follows the network setting below."
    ),
}

_ACCESS = {
    "allowed": "permitted, within the approval profile",
    "denied": "denied: do not attempt it by any tool or command",
    "policy_gated": "allowed only where the host's policy approves each call",
}


def _render(ctx: ModuleContext) -> str:
    c = ctx.config
    return (
        "# Policy for this run\n"
        f"Approval profile: {c.approval_profile}. {_PROFILE[c.approval_profile]}\n"
        f"Network access: {c.network_access} ({_ACCESS[c.network_access]}).\n"
        f"Write access: {c.write_access} ({_ACCESS[c.write_access]}).\n"
        "The host enforces these settings on every call; this text grants nothing by "
        "itself. A denied call is final: do not retry it in another form, through another "
        "tool, or as a command that does the same thing."
    )


MODULE = PromptModule(name="approval", version="1.0.0", render=_render)
