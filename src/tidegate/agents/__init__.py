"""External coding agents under tidegate's guard: checked-in flow contracts
(``contracts/*.json``), an isolated workspace of T0 for each attempt, and the contained
launch. ``tidegate run --agent NAME`` uses them through ``AgentPlanner``;
``tidegate engineer agent-submit`` drives an agent's interactive contract on a PTY."""
