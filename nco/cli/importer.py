"""`nco-import`: a published checkpoint (weights only) as an ordinary nco checkpoint.

    nco-import src=tsp_bq_gumbeldore.pt model=bq_tsp out=best.pt
    python -m nco.cli.importer src=... model=bq_tsp out=best.pt num_nodes=100

The work is `nco.importing.import_reference`; docs/paper_checkpoints.md lists the formats.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from nco.importing import import_reference
from nco.paths import CONFIG_DIR


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR / "importer"), config_name="import")
def main(cfg: DictConfig) -> None:
    """Console entry point `nco-import` (Hydra key=value arguments)."""
    for key in ("src", "model", "out"):
        if not cfg.get(key):
            raise SystemExit(f"nco-import: {key}= is required (see configs/importer/import.yaml).")
    try:
        path = import_reference(
            cfg.src, str(cfg.model), cfg.out, int(cfg.num_nodes), cfg.get("heads")
        )
    except ValueError as err:  # a bad file or argument: one line, no traceback
        raise SystemExit(str(err)) from None
    print(f"nco-import: wrote {path} ({cfg.model} from {cfg.src})")


if __name__ == "__main__":
    main()
