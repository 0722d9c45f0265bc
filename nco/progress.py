"""Progress bars that appear only where someone watches: never as redraw lines in a log file."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tqdm.auto import tqdm


def progress_bar(iterable: Iterable | None = None, enabled: bool = True, **kwargs: Any) -> tqdm:
    """A tqdm bar when `enabled` and stderr is a terminal; silent otherwise (tqdm's
    `disable=None` checks the terminal)."""
    return tqdm(iterable, disable=None if enabled else True, **kwargs)
