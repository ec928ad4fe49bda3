import signal

from .diagnostics import stop_quietly

# Ctrl-C while goat is still being imported: one line, no traceback
signal.signal(signal.SIGINT, stop_quietly)
signal.signal(signal.SIGTERM, stop_quietly)

from .cli import entry  # noqa: E402

entry()
