"""``python -m graphwidget``: see graphwidget/entry/cli.py."""
import sys

from .entry.cli import main

sys.exit(main())
