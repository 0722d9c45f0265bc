"""Import a file of scripts/ or benchmarks/ as a module in tests (neither is a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
BENCHMARKS = SCRIPTS.parent / "benchmarks"


def load_script(name: str, folder: Path | None = None) -> ModuleType:
    """scripts/<name>.py (benchmarks/<name>.py for a `bench_` name, else `folder`'s), as a fresh
    module; its folder is on sys.path while it loads, as when it runs as a script (for sibling
    imports)."""
    folder = folder or (BENCHMARKS if name.startswith("bench_") else SCRIPTS)
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(folder))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
    return module
