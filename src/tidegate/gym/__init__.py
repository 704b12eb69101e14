"""The gym: the same tasks, the same guard, host-measured facts, honest numbers.

``scenarios`` (package-data scenarios, validated), ``seed`` (deterministic seed
repositories), ``contestants`` (who proposes: local-harness, scripted, a model, an agent),
``checks`` (named correctness checks), ``scorecard`` (figures from observed facts only;
``unmeasured`` where a fact was not observed), ``runner`` (one isolated scenario run and its
artifacts), ``compare`` (the latest two runs: improved / unchanged / regressed), ``suite``
(many runs on a process pool or on Ray).
"""
