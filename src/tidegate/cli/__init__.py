"""The ``tidegate`` command line. Thin: parse, call a service, render."""

from tidegate.cli.app import app, main

__all__ = ["app", "main"]
