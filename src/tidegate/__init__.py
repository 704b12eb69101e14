"""tidegate: a guarded runtime for AI coding agents working on a real git repository."""

__version__ = "0.1.0"
