"""``tidegate acp``: tidegate as an agent of the Agent Client Protocol (Zed's) on stdio.

An editor (Zed, JetBrains, any ACP client) opens a session on a repository and sends a
prompt; the prompt is the objective of a guarded model-driven run with ``hold``. Phases and
the model's tool calls stream back as ``session/update`` notifications; the verified change
comes back as a diff in ``session/request_permission``, and the client's answer lands it
(``tidegate apply``'s code) or discards it. The client is not the user: its runs have the
MCP client's origin, so their commands run contained or not at all (``tidegate.exec.guard``).
"""
