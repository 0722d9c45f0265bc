"""Expert trajectories for supervised TSP training: solver tours as TSPEnv action sequences."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from nco.problems.tsp.types import TSPInstances


def tours_to_actions(tours: torch.Tensor | np.ndarray) -> torch.Tensor:
    """TSPEnv actions Long[N, n-1] from tours [N, n] (0-based node permutations).

    Each tour is rotated to start at node 0, the start of every TSPEnv episode, and that node is
    dropped; the direction is kept.
    """
    tours = torch.as_tensor(np.asarray(tours)).long()
    if tours.dim() != 2 or tours.shape[1] < 3:
        raise ValueError(f"Expected tours of shape [N, n] with n >= 3, got {tuple(tours.shape)}.")
    n = tours.shape[1]
    if not bool((tours.sort(1).values == torch.arange(n)).all()):
        raise ValueError(f"Expected every tour to be a permutation of 0..{n - 1}.")
    start = (tours == 0).long().argmax(1, keepdim=True)
    rotated = tours.gather(1, (start + torch.arange(n)) % n)
    return rotated[:, 1:]


def load_expert(path: str | os.PathLike) -> tuple[TSPInstances, torch.Tensor]:
    """Instances and expert actions from an .npz with `coords` [N, n, 2] and `actions` [N, n-1]
    (TSPEnv order, starting after node 0) or `tours` [N, n] (0-based, any rotation)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: expert data file not found.")
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    if "coords" not in arrays:
        raise ValueError(f"{path}: field 'coords' is missing; expected [N, n, 2] floats.")
    coords = arrays["coords"]
    if coords.ndim != 3 or coords.shape[2] != 2 or coords.shape[1] < 3:
        raise ValueError(
            f"{path}: field 'coords' must be [N, n, 2] with n >= 3, got {coords.shape}."
        )
    if not np.isfinite(coords).all():
        raise ValueError(f"{path}: field 'coords' must be finite.")
    num, n = coords.shape[:2]
    if "actions" in arrays:
        field, expected = "actions", (num, n - 1)
    elif "tours" in arrays:
        field, expected = "tours", (num, n)
    else:
        raise ValueError(f"{path}: field 'actions' [N, n-1] or 'tours' [N, n] is missing.")
    seqs = arrays[field]
    if seqs.shape != expected or not np.issubdtype(seqs.dtype, np.integer):
        raise ValueError(
            f"{path}: field {field!r} must be integers of shape {expected}, "
            f"got {seqs.dtype} {seqs.shape}."
        )
    tours = seqs
    if field == "actions":
        tours = np.concatenate([np.zeros((num, 1), dtype=seqs.dtype), seqs], 1)
    try:
        actions = tours_to_actions(tours)
    except ValueError as err:
        raise ValueError(f"{path}: field {field!r}: {err}") from err
    return TSPInstances(coords=torch.from_numpy(coords.astype(np.float64))), actions
