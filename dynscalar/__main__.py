"""``python -m dynscalar``: the command line (demo, doctor, specializations), kept with the
tools in ``dynscalar/tools/cli.py``."""

import sys

from .tools.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
