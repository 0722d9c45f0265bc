"""A user's mistake in a Hydra command (a bad file, override or checkpoint) as one line on
stderr and exit status 2, instead of Hydra's chained traceback; `HYDRA_FULL_ERROR=1` keeps it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

EXIT_USAGE = 2
USER_ERRORS = (ValueError, FileNotFoundError)


@contextmanager
def reported(command: str) -> Iterator[None]:
    """Run the block; a ValueError or FileNotFoundError ends the command with its message."""
    try:
        yield
    except USER_ERRORS as err:
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        message = str(err)
        if not message.startswith(command):
            message = f"{command}: {message}"
        print(f"{message}\n(HYDRA_FULL_ERROR=1 shows the traceback)", file=sys.stderr, flush=True)
        sys.exit(EXIT_USAGE)
