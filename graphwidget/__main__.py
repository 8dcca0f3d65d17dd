"""``python -m graphwidget demo`` / ``build-native``: see graphwidget.cli."""
import sys

from .cli import main

sys.exit(main())
