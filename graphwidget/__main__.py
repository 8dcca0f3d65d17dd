"""``python -m graphwidget``: see graphwidget/entry/cli.py."""
import sys

from .entry.cli import main
from .entry.exits import EXIT, silence_stdout

status = main()
try:
    sys.stdout.flush()  # what is still buffered: a reader that left (| head) shows here, not as a message at exit
except BrokenPipeError:
    silence_stdout()
    status = EXIT["output closed"]
sys.exit(status)
