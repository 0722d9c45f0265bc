"""`nco-solve`: solve one instance file with a checkpoint or a classical solver; JSON and PNG out.

    nco-solve instance=berlin52.tsp checkpoint=best.pt search=beam search.beam_width=16 out=b.json
    nco-solve instance=X-n101-k25.vrp solver=hgs time_limit=10 out=x.json
    nco-solve instance=ta01.txt solver=cpsat time_limit=60 out=ta01.json
    python -m nco.cli.solve instance=my.txt problem=jssp checkpoint=jssp.pt

The work is `nco.solving.run(cfg)`; see docs/evaluation.md.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from nco.allocator import keep_freed_memory
from nco.cli.errors import reported
from nco.paths import CONFIG_DIR
from nco.solving import run


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="solve")
def main(cfg: DictConfig) -> None:
    """Console entry point `nco-solve` (Hydra key=value overrides)."""
    keep_freed_memory()
    with reported("nco-solve"):
        run(cfg)


if __name__ == "__main__":
    main()
