"""Safe readers shared by the problems' dataset I/O: a restricted unpickler and checks."""

from __future__ import annotations

import codecs
import pickle
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np


def _latin1_encode(text: str, encoding: str) -> bytes:
    """`_codecs.encode` as protocol-2 numpy pickles use it, limited to latin-1."""
    if encoding.replace("-", "").lower() != "latin1":
        raise pickle.UnpicklingError(f"refused _codecs.encode with encoding {encoding!r}")
    return codecs.encode(text, "latin1")


def _safe_globals() -> dict[tuple[str, str], Any]:
    """Builtins and numpy's array/scalar rebuilders, under numpy 1.x and 2.x module names."""
    safe: dict[tuple[str, str], Any] = {
        ("builtins", "list"): list,
        ("builtins", "tuple"): tuple,
        ("builtins", "float"): float,
        ("builtins", "int"): int,
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        ("_codecs", "encode"): _latin1_encode,
    }
    for core in ("core", "_core"):
        safe[(f"numpy.{core}.multiarray", "_reconstruct")] = np.zeros(0).__reduce__()[0]
        safe[(f"numpy.{core}.multiarray", "scalar")] = np.float64(0).__reduce__()[0]
        safe[(f"numpy.{core}.numeric", "_frombuffer")] = np.zeros(1).__reduce_ex__(5)[0]
    return safe


_SAFE_GLOBALS = _safe_globals()


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickler that resolves only the globals dataset pickles need (lists, numbers, arrays).

    Used for every pickle the project reads (Kool et al. TSP and CVRP sets), so a hostile file
    cannot run code: any other global raises pickle.UnpicklingError naming the file.
    """

    def __init__(self, file: BinaryIO, path: Path) -> None:
        super().__init__(file)
        self._path = path

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _SAFE_GLOBALS:
            raise pickle.UnpicklingError(
                f"{self._path}: refused global '{module}.{name}'; dataset pickles may hold only "
                "lists, numbers and numpy arrays."
            )
        return _SAFE_GLOBALS[(module, name)]


def check_refs(refs: np.ndarray, num: int, path: Path, field: str) -> np.ndarray:
    """`refs` as float64 [num] with finite values, else ValueError."""
    if refs.dtype.kind not in "iuf" or refs.shape != (num,):
        raise ValueError(
            f"{path}: field '{field}' expected {num} numbers (one per instance), "
            f"got shape {refs.shape} of dtype {refs.dtype}."
        )
    if not np.isfinite(refs).all():
        raise ValueError(f"{path}: field '{field}' expected finite values, found NaN or inf.")
    return refs.astype(np.float64)
