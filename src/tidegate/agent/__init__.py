"""The agent loop and what it consults: guards (guards.py) and the evidence ledger
(evidence.py)."""
