"""Operator modes over one explicit state root: bootstrap, engineer run/read, meeting,
goal curation, review records and improvement curation (``docs/operator.md``).

Modules: ``identities`` (roles, base types, topologies as data), ``state_root`` (the
validation contract), ``records`` (versioned atomic JSON documents), ``handoff`` (mode-
scoped handoffs, fail-closed precedence), ``grounding`` and ``engineer`` (one bounded,
verified action through the guarded engine), ``meeting``, ``goals``, ``review``,
``improvement``, ``runs`` and ``readback`` (the commands' services), ``view`` (sanitised
text and JSON rendering).
"""
