"""`nco-train`: self-improvement (Algorithm 1) or supervised training from a Hydra config.

    nco-train experiment=tsp20_quick
    nco-train experiment=tsp100_gumbeldore distributed=ray distributed.workers=16
    nco-train experiment=tsp20_quick hydra.run.dir=runs/a   # rerun the same: continues
    nco-train ckpt_path=outputs/<date>/<time>/checkpoints/last.ckpt   # resume elsewhere
    nco-train --multirun experiment=tsp_sigma_sweep

The work is `nco.training.runner.run(cfg)`; see docs/training.md.
"""

from __future__ import annotations

import gc
import sys
import warnings

import hydra
from omegaconf import DictConfig

from nco.allocator import keep_freed_memory
from nco.cli.errors import reported
from nco.paths import CONFIG_DIR
from nco.training.runner import Preempted, run

EXIT_SIGTERM = 143


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="train")
def main(cfg: DictConfig) -> float | None:
    """Hydra entry point; returns the best validation objective (for sweepers)."""
    keep_freed_memory()
    warnings.filterwarnings("ignore", ".*does not have many workers.*")
    warnings.filterwarnings("ignore", ".*IterableDataset. has .__len__. defined.*")
    # DDP: validation metrics are computed from every rank's rows, the same on every rank
    warnings.filterwarnings("ignore", ".*sync_dist=True.*when logging on epoch level.*")
    try:
        with reported("nco-train"):
            return run(cfg)["best_objective"]
    except Preempted as stop:  # SIGTERM: no traceback; 143 (128 + SIGTERM) tells the scheduler
        print(f"nco-train: {stop}", file=sys.stderr, flush=True)  # the run did not finish
        gc.freeze()  # the interpreter's final collection took 4-8 s here; the grace period is short
        sys.exit(EXIT_SIGTERM)


if __name__ == "__main__":
    main()
