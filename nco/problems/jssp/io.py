"""JSSP instance files: Taillard's text format, the OR-Library format and the project's `.npz`.

- Taillard: blocks of a header line ("Nb of jobs, Nb of Machines, ..."), a line whose first two
  numbers are J and M, "Times" with J rows of M durations, "Machines" with J rows of M 1-based
  machines. A file may hold several instances of one size.
- OR-Library: optional comment lines, a line "J M", then J lines of M pairs "machine duration"
  with 0-based machines. One instance per file.
- `.npz`: `durations [N, J, M]`, `machines [N, J, M]` (0-based), optional `reference_costs [N]`
  and `reference_source` (str); expert files add `actions [N, J*M]` or `starts [N, J, M]`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from nco.problems.jssp.schedule import check_schedule, schedule_to_sequence
from nco.problems.jssp.types import JSSPInstances, make_instances


def _ints(line: str, path: Path) -> list[int]:
    try:
        return [int(tok) for tok in line.split()]
    except ValueError:
        raise ValueError(f"{path}: expected a line of integers, got {line.strip()!r}.") from None


def _rows(
    lines: list[str], at: int, count: int, width: int, path: Path, what: str
) -> list[list[int]]:
    rows = [_ints(line, path) for line in lines[at : at + count]]
    if len(rows) != count or any(len(r) != width for r in rows):
        raise ValueError(f"{path}: expected {count} rows of {width} integers under {what!r}.")
    return rows


def read_taillard(path: str | Path) -> JSSPInstances:
    """All instances in a Taillard-format text file (machines converted to 0-based)."""
    path = Path(path)
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    durations: list[list[list[int]]] = []  # (instances, jobs, machines)
    machines: list[list[list[int]]] = []
    shape: tuple[int, int] | None = None
    i = 0
    while i < len(lines):
        head = lines[i].strip().lower()
        if head.startswith("nb of jobs"):
            numbers = _ints(lines[i + 1], path) if i + 1 < len(lines) else []
            if len(numbers) < 2:
                raise ValueError(f"{path}: expected a line 'J M ...' after {lines[i].strip()!r}.")
            size = (numbers[0], numbers[1])
            if shape not in (None, size):
                raise ValueError(f"{path}: expected instances of one size, got {shape} and {size}.")
            shape = size
            i += 2
        elif head in ("times", "machines"):
            if shape is None:
                raise ValueError(f"{path}: {lines[i].strip()!r} block before the size line.")
            block = _rows(lines, i + 1, shape[0], shape[1], path, lines[i].strip())
            (durations if head == "times" else machines).append(block)
            i += 1 + shape[0]
        else:
            raise ValueError(f"{path}: unexpected line {lines[i].strip()!r}.")
    if not durations or len(durations) != len(machines):
        raise ValueError(f"{path}: expected matching 'Times' and 'Machines' blocks.")
    return make_instances(durations, np.asarray(machines) - 1, source=str(path))


def write_taillard(path: str | Path, instances: JSSPInstances) -> None:
    """Write integer-duration instances in Taillard's format (1-based machines)."""
    durations = _integer_durations(instances, path)
    machines = instances.machines.cpu().numpy() + 1
    _, jobs, num_machines = durations.shape
    out = []
    for d, m in zip(durations, machines, strict=True):
        out.append("Nb of jobs, Nb of Machines")
        out.append(f"{jobs} {num_machines}")
        out.append("Times")
        out.extend(" ".join(str(x) for x in row) for row in d)
        out.append("Machines")
        out.extend(" ".join(str(x) for x in row) for row in m)
    Path(path).write_text("\n".join(out) + "\n")


def read_orlib(path: str | Path) -> JSSPInstances:
    """The instance in an OR-Library-format file as a batch of one."""
    path = Path(path)
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        tokens = line.split()
        if len(tokens) == 2 and all(t.isdigit() for t in tokens):
            jobs, num_machines = int(tokens[0]), int(tokens[1])
            rows = np.asarray(_rows(lines, i + 1, jobs, 2 * num_machines, path, line.strip()))
            return make_instances(rows[:, 1::2], rows[:, 0::2], source=str(path))
    raise ValueError(f"{path}: expected a line 'J M' followed by J rows of 'machine duration'.")


def write_orlib(path: str | Path, instances: JSSPInstances) -> None:
    """Write a batch of one integer-duration instance in the OR-Library format."""
    if instances.batch_size != 1:
        raise ValueError(f"{path}: the OR-Library format holds one instance, got {len(instances)}.")
    durations = _integer_durations(instances, path)[0]
    machines = instances.machines[0].cpu().numpy()
    out = [f"{durations.shape[0]} {durations.shape[1]}"]
    for d, m in zip(durations, machines, strict=True):
        out.append(" ".join(f"{mm} {dd}" for mm, dd in zip(m, d, strict=True)))
    Path(path).write_text("\n".join(out) + "\n")


def read_npz(path: str | Path) -> tuple[JSSPInstances, torch.Tensor | None, str | None]:
    """Instances, reference makespans (float64) or None, and their source or None."""
    with np.load(path, allow_pickle=False) as data:
        missing = {"durations", "machines"} - set(data.files)
        if missing:
            raise ValueError(f"{path}: missing field(s) {sorted(missing)}.")
        instances = make_instances(data["durations"], data["machines"], source=str(path))
        refs = None
        if "reference_costs" in data.files:
            refs = torch.as_tensor(data["reference_costs"].astype(np.float64))
            if refs.shape != (instances.batch_size,):
                raise ValueError(
                    f"{path}: field reference_costs must have shape ({instances.batch_size},), "
                    f"got {tuple(refs.shape)}."
                )
        source = str(data["reference_source"]) if "reference_source" in data.files else None
    return instances, refs, source


def write_npz(
    path: str | Path,
    instances: JSSPInstances,
    reference_costs: torch.Tensor | np.ndarray | None = None,
    reference_source: str | None = None,
) -> None:
    """Write instances (integer durations stored as int64) and optional reference makespans."""
    d = instances.durations.cpu().numpy()
    arrays: dict[str, np.ndarray] = {
        "durations": d.astype(np.int64) if np.array_equal(d, np.rint(d)) else d,
        "machines": instances.machines.cpu().numpy().astype(np.int64),
    }
    if reference_costs is not None:
        refs = np.asarray(torch.as_tensor(reference_costs).cpu(), dtype=np.float64)
        if refs.shape != (instances.batch_size,):
            raise ValueError(
                f"{path}: reference_costs must have shape ({instances.batch_size},), "
                f"got {refs.shape}."
            )
        arrays["reference_costs"] = refs
    if reference_source is not None:
        arrays["reference_source"] = np.asarray(reference_source)
    np.savez(path, allow_pickle=False, **arrays)


def load_jssp(path: str | os.PathLike) -> tuple[JSSPInstances, np.ndarray | None]:
    """Instances and optional reference makespans from an .npz, Taillard or OR-Library file.

    Text files hold no references; a Taillard file is recognized by its "Nb of jobs" header.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: dataset file not found.")
    if path.suffix.lower() == ".npz":
        instances, refs, _ = read_npz(path)
        return instances, None if refs is None else refs.numpy()
    if "nb of jobs" in path.read_text().lower():
        return read_taillard(path), None
    return read_orlib(path), None


def load_jssp_expert(path: str | os.PathLike) -> tuple[JSSPInstances, torch.Tensor]:
    """Instances and expert job sequences Long[N, J*M] from an .npz for supervised training.

    Besides `durations` and `machines` the file holds either `actions [N, J*M]` (job sequences,
    each job M times) or `starts [N, J, M]` (start times of feasible schedules, e.g. from CP-SAT),
    which are checked and turned into sequences replaying to schedules at least as short.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: expert data file not found.")
    instances, _, _ = read_npz(path)
    n, jobs, num_machines = instances.durations.shape
    with np.load(path, allow_pickle=False) as data:
        if "actions" in data.files:
            actions = torch.as_tensor(data["actions"].astype(np.int64))
        elif "starts" in data.files:
            starts = data["starts"]
            if starts.shape != (n, jobs, num_machines):
                raise ValueError(
                    f"{path}: field starts must have shape {(n, jobs, num_machines)}, "
                    f"got {starts.shape}."
                )
            durations, machines = instances.durations.numpy(), instances.machines.numpy()
            for i in range(n):
                try:
                    check_schedule(durations[i], machines[i], starts[i])
                except ValueError as err:
                    raise ValueError(f"{path}: field starts, instance {i}: {err}") from None
            actions = torch.as_tensor(np.stack([schedule_to_sequence(s) for s in starts]))
        else:
            raise ValueError(f"{path}: expected a field 'actions' [N, J*M] or 'starts' [N, J, M].")
    expected = torch.arange(jobs).repeat_interleave(num_machines).expand(n, -1)
    if actions.shape != (n, jobs * num_machines) or not torch.equal(
        actions.sort(dim=1).values, expected
    ):
        raise ValueError(
            f"{path}: field actions must hold, per instance, each job index {num_machines} times."
        )
    return instances, actions


def _integer_durations(instances: JSSPInstances, path: str | Path) -> np.ndarray:
    d = instances.durations.cpu().numpy()
    if not np.array_equal(d, np.rint(d)):
        raise ValueError(f"{path}: text formats need integer durations.")
    return d.astype(np.int64)
