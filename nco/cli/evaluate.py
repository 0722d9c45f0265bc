"""`nco-eval`: decode a dataset with a checkpoint's policy; print the table, write the results JSON.

    nco-eval checkpoint=best.pt data=kool:tsp100_test search=greedy limit=100 batch_size=64 \\
        device=cpu out=r.json
    nco-eval checkpoint=best.pt data=taillard:15x15 search=gumbeldore search.beam_width=32 \\
        search.rounds=4 search.p_min=0.8 search.sigma=0.05
    python -m nco.cli.evaluate checkpoint=best.pt data=my.npz search=beam search.beam_width=16

The work is `nco.evaluation.run(cfg)`; see docs/evaluation.md.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from nco.allocator import keep_freed_memory
from nco.cli.errors import reported
from nco.evaluation import run
from nco.paths import CONFIG_DIR


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="evaluate")
def main(cfg: DictConfig) -> None:
    """Console entry point `nco-eval` (Hydra key=value overrides)."""
    keep_freed_memory()
    with reported("nco-eval"):
        run(cfg)


if __name__ == "__main__":
    main()
