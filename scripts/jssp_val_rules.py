"""The dispatching rules on a JSSP training run's validation set, against the references the
run validates with: the line a run's `val/gap` has to cross to beat a one-line rule.

    python scripts/jssp_val_rules.py --run data/jssp_cpu/gd \\
        --out data/results/jssp_cpu/val_rules.json

Rebuilds the validation instances from the run's own config (`<run>/.hydra/config.yaml`: the
same env, `val_env`, `val_instances` and `val_seed` as nco-train) and reads their reference
makespans from the run's reference cache (`<run>/cache/references/*.npz`, written by nco-train).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from nco.problems.jssp.dispatching import RULES, dispatch
from nco.problems.jssp.env import JSSPEnv
from nco.problems.jssp.types import JSSPInstances
from nco.training.runner import validation_set


def reference_costs(run: Path, num: int) -> np.ndarray:
    """The one cached reference array of `num` makespans in the run's reference cache."""
    found = []
    for path in sorted((run / "cache" / "references").glob("*.npz")):
        with np.load(path, allow_pickle=False) as data:
            if "costs" in data.files and data["costs"].shape == (num,):
                found.append(np.asarray(data["costs"], dtype=np.float64))
    if len(found) != 1:
        raise SystemExit(
            f"expected one reference file with {num} costs in "
            f"{run / 'cache' / 'references'}, found {len(found)}."
        )
    return found[0]


def run_validation(run: Path) -> tuple[DictConfig, JSSPInstances, np.ndarray]:
    """A JSSP run's config, its validation instances (rebuilt as nco-train builds them) and
    their cached reference makespans."""
    config = run / ".hydra" / "config.yaml"
    if not config.is_file():
        raise SystemExit(f"{config} not found (is {run} an nco-train run folder?)")
    cfg = OmegaConf.load(config)
    if not isinstance(cfg, DictConfig) or "training" not in cfg or "problem" not in cfg:
        raise SystemExit(f"{config} is not an nco-train config.")
    cfg.training.val_gap = False  # the references come from the run's cache, not a new solve
    instances, _ = validation_set(cfg, instantiate(cfg.problem.env))
    if not isinstance(instances, JSSPInstances):
        raise SystemExit(f"{config} is not a JSSP run ({cfg.problem.name}).")
    return cfg, instances, reference_costs(run, len(instances.durations))


def rule_makespans(instances: JSSPInstances, rule: str) -> np.ndarray:
    """Makespan of each instance scheduled by dispatching rule `rule` (non-delay)."""
    start = JSSPEnv().schedule(instances, dispatch(instances, rule))
    return (start + instances.durations).flatten(1).amax(1).to(torch.float64).numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, required=True, help="an nco-train run folder")
    parser.add_argument("--out", type=Path, required=True, help="the results JSON")
    args = parser.parse_args()
    _, instances, refs = run_validation(args.run)
    results: dict[str, object] = {
        "run": str(args.run),
        "num_instances": len(refs),
        "mean_reference": float(refs.mean()),
    }
    for rule in sorted(RULES):
        makespan = rule_makespans(instances, rule)
        gap = float(((makespan - refs) / refs).mean() * 100)
        results[rule] = {"mean_makespan": float(makespan.mean()), "mean_gap_percent": gap}
        print(f"{rule:10s} mean makespan {makespan.mean():9.2f}  gap {gap:6.2f} %")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
