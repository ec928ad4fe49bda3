import os
import signal


def _stop_quietly(signum, frame):       # Ctrl-C while goat is still being imported
    os.write(2, b"goat: terminated\n" if signum == signal.SIGTERM else b"goat: interrupted\n")
    os._exit(143 if signum == signal.SIGTERM else 130)


signal.signal(signal.SIGINT, _stop_quietly)
signal.signal(signal.SIGTERM, _stop_quietly)

from .cli import entry  # noqa: E402

entry()
