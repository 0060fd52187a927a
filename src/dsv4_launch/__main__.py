"""``python -m dsv4_launch`` is ``dsv4-launch``."""

import sys

from .commands.cli import main

if __name__ == "__main__":
    sys.exit(main())
