"""Hostile-input tests: each is written from the attacker's side and must fail when the
mechanism it attacks is removed."""
