import sys

from tidegate.cli import entry

sys.exit(entry())
