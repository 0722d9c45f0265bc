"""`nco-baseline`: run a classical solver over a dataset, print the table, write the results JSON.

    nco-baseline problem=tsp solver=lkh data=kool:tsp100_test limit=100 time_limit=10 \\
        workers=2 out=r.json
    python -m nco.cli.baseline problem=jssp solver=cpsat data=taillard:ta01 time_limit=60

The work is `nco.baselines.run(cfg)`; solvers come from each problem's descriptor.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from nco.baselines import run
from nco.cli.errors import reported
from nco.paths import CONFIG_DIR


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="baseline")
def main(cfg: DictConfig) -> None:
    """Console entry point `nco-baseline` (Hydra key=value overrides)."""
    with reported("nco-baseline"):
        run(cfg)


if __name__ == "__main__":
    main()
