"""Grow a trained checkpoint into a deeper / wider model that computes the same policy.

    python scripts/grow_checkpoint.py data/checkpoints/cvrp20/best.pt --layers 9 --ff-dim 512 \\
        --out data/generated/grown/cvrp20_l9_ff512.pt

Added layers start as the identity and added feed-forward units with zero output weights
(`nco.models.growth`). The script checks that both policies give the same greedy objectives on
generated instances of the checkpoint's problem before it writes the file, whose `meta.grown`
names the source (path and SHA-256) and the sizes before and after. Fine-tune it with
`reproduction.py finetune --init <out>`, which trains the checkpoint's own architecture.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import torch

import nco.models  # noqa: F401  (registers the policy classes)
from nco import checkpoint, registry
from nco.decode import decode
from nco.models.growth import grow_into

SIZES = ("layers", "ff_dim")


def grow(source: Path, sizes: dict[str, int], out: Path, seed: int = 0, check: int = 64) -> dict:
    """Write the grown checkpoint to `out`; return its `meta.grown` record. The added weights
    are drawn from `seed`, so the same command writes the same weights."""
    loaded = checkpoint.load(source)
    missing = [k for k in sizes if k not in loaded.model]
    if missing:
        raise SystemExit(f"{source}: field 'model' has no {missing}; this model cannot grow")
    shrunk = [k for k, v in sizes.items() if v < loaded.model[k]]
    if shrunk:
        raise SystemExit(
            f"--{shrunk[0].replace('_', '-')}: smaller than the checkpoint's "
            f"{loaded.model[shrunk[0]]}; growth only adds"
        )
    model = {**loaded.model, **sizes}
    torch.manual_seed(seed)
    big = registry.build("policy", model, "grown model")
    try:
        grow_into(loaded.policy.state_dict(), big)
    except ValueError as err:
        raise SystemExit(f"{source}: {err}") from err
    big.eval()
    instances = loaded.env.generate(check, torch.Generator().manual_seed(0))
    with torch.no_grad():
        before = decode(loaded.policy, loaded.env, instances, {"method": "greedy"}).best()
        after = decode(big, loaded.env, instances, {"method": "greedy"}).best()
    same = float((before.objective - after.objective).abs().max())
    if same > 1e-4:
        raise SystemExit(f"grow: the grown policy decodes differently (max difference {same})")
    record = {
        "source": str(source),
        "sha256": hashlib.sha256(source.read_bytes()).hexdigest(),
        "seed": seed,
        "before": {k: loaded.model[k] for k in sizes},
        "after": sizes,
        "parameters": [sum(p.numel() for p in m.parameters()) for m in (loaded.policy, big)],
        "greedy_check": f"{check} generated instances, max objective difference {same:.2g}",
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    checkpoint.save(out, big, model, loaded.problem, {**loaded.meta, "grown": record})
    return record


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint", type=Path, help="a best.pt written by nco-train")
    parser.add_argument("--layers", type=int, default=None, help="encoder layers after growth")
    parser.add_argument("--ff-dim", type=int, default=None, help="feed-forward width after")
    parser.add_argument("--out", type=Path, required=True, help="where to write the grown file")
    parser.add_argument("--seed", type=int, default=0, help="draws the added weights")
    args = parser.parse_args(argv)
    sizes = {k: getattr(args, k) for k in SIZES if getattr(args, k) is not None}
    if not sizes:
        raise SystemExit("nothing to grow: give --layers and/or --ff-dim")
    if not args.checkpoint.is_file():
        raise SystemExit(f"{args.checkpoint}: no such checkpoint file")
    record = grow(args.checkpoint, sizes, args.out, args.seed)
    params = record["parameters"]
    print(
        f"{args.out}: {record['before']} -> {record['after']}, {params[0]:,} -> {params[1]:,} "
        f"parameters; {record['greedy_check']}"
    )
    return record


if __name__ == "__main__":
    main()
