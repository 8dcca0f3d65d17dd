"""``python -m graphwidget demo``: see graphwidget.demo."""
import sys

from .demo import main

sys.exit(main())
