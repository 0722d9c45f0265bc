"""nco-import for the published AM and POMO checkpoints (../shared/models; skipped when absent).

Each file is imported, loaded with nco.checkpoint.load and decoded on the first four Kool
test instances; the costs are those the authors' own code gives on the same instances
(attention-learn-to-route and AMDKD-POMO, run by benchmarks/light_vs_reference.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from nco import checkpoint
from nco.datasets import load_dataset
from nco.decode import decode
from nco.importing import import_reference
from nco.inference import to_instances

MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
pytestmark = pytest.mark.skipif(not MODELS.is_dir(), reason="../shared/models is absent")

# (file, model, problem, search keys, the authors' costs on kool:<problem>20_test[:4])
CASES = [
    ("am/tsp_20/epoch-99.pt", "am_tsp", "tsp", {}, [3.663830, 3.761996, 3.799976, 4.118915]),
    ("am/cvrp_20/epoch-99.pt", "am_cvrp", "cvrp", {}, [5.570552, 7.039162, 6.338326, 6.384833]),
    (
        "pomo_amdkd/checkpoint-tsp-20.pt",
        "pomo_tsp",
        "tsp",
        {"starts": 20},
        [3.649399, 3.761996, 3.779668, 4.118915],
    ),
    (
        "pomo_amdkd/checkpoint-cvrp-20.pt",
        "pomo_cvrp",
        "cvrp",
        {"starts": 1},
        [5.311077, 6.455171, 6.351904, 6.232872],
    ),
    (
        "pomo_amdkd/checkpoint-cvrp-20.pt",
        "pomo_cvrp",
        "cvrp",
        {"starts": 20},
        [5.120257, 6.073840, 6.279952, 6.100893],
    ),
]


@pytest.mark.parametrize(("file", "model", "problem", "keys", "expected"), CASES)
def test_imported_checkpoint_decodes_as_the_authors_code(
    tmp_path: Path, file: str, model: str, problem: str, keys: dict, expected: list[float]
) -> None:
    out = import_reference(MODELS / file, model, tmp_path / "best.pt", num_nodes=20)
    loaded = checkpoint.load(out)
    data = load_dataset(f"kool:{problem}20_test").head(4)
    instances = to_instances(loaded.env, data.arrays, data.name)
    sols = decode(loaded.policy, loaded.env, instances, {"method": "greedy", **keys})
    costs = loaded.env.cost(sols.best().objective)
    assert torch.allclose(costs, torch.tensor(expected, dtype=costs.dtype), atol=2e-5)


def test_wrong_model_for_the_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="init_embed_depot"):
        import_reference(MODELS / "am/tsp_20/epoch-99.pt", "am_cvrp", tmp_path / "x.pt", 20)
    with pytest.raises(ValueError, match="POMO"):
        import_reference(MODELS / "am/tsp_20/epoch-99.pt", "pomo_tsp", tmp_path / "x.pt", 20)


def test_a_bad_shape_names_the_parameter(tmp_path: Path) -> None:
    payload = torch.load(MODELS / "am/tsp_20/epoch-99.pt", map_location="cpu", weights_only=True)
    weights = dict(payload["model"])
    weights["project_out.weight"] = torch.zeros(128, 64)
    torch.save({"model": weights}, tmp_path / "bad.pt")
    with pytest.raises(ValueError, match=r"project_out.weight has shape \(128, 64\)"):
        import_reference(tmp_path / "bad.pt", "am_tsp", tmp_path / "x.pt", 20)
