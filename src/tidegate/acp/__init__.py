"""``tidegate acp``: tidegate as an agent of the Agent Client Protocol (Zed's) on stdio.

An editor (Zed, JetBrains, any ACP client) opens a session on a repository and sends a
prompt; the prompt is the objective of a guarded model-driven run with ``hold``. Phases,
the model's tool calls and the proposal stream back as ``session/update`` notifications
(``updates``); the verified change comes back as a diff in ``session/request_permission``,
and the client's answer lands it (``tidegate apply``'s code) or discards it.
``session/cancel`` stops a run as Ctrl-C does (``foreground``); ``session/load`` replays a
session's runs from the run store (``history``). The client is not the user: its runs
have the MCP client's origin, so their commands run contained or not at all
(``tidegate.exec.guard``).
"""
