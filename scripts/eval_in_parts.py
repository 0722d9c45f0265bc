"""A long `nco-eval` run in resumable parts: rerunning the same command decodes only the parts
not yet written, and the parts are merged into one results JSON when all are there.

Each part is an `nco-eval` results JSON in `<out>.parts/`; commit that folder to carry a run that
outlives a session to another machine (nco.study.parts.decode_in_parts does the work).

    python scripts/eval_in_parts.py --checkpoint shipped:pomo_tsp100 --data kool:tsp100_test \
        --chunk 250 --out data/results/light/pomo_tsp100_aug8ms_all.json -- \
        search=greedy search.augment=8 search.starts=100 batch_size=20
"""

from __future__ import annotations

import argparse
from pathlib import Path

from nco.inference import check_checkpoint
from nco.study.parts import checkpoint_epoch, decode_in_parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="a best.pt or shipped:<name>")
    parser.add_argument("--data", required=True, help="a dataset nco-eval reads (data=)")
    parser.add_argument("--out", type=Path, required=True, help="the merged results JSON")
    parser.add_argument("--chunk", type=int, default=500, help="instances per part")
    parser.add_argument("--limit", type=int, default=None, help="only the first LIMIT instances")
    parser.add_argument("overrides", nargs="*", help="nco-eval overrides, e.g. search=greedy")
    args = parser.parse_args()
    checkpoint = check_checkpoint(args.checkpoint, "eval_in_parts").resolve()
    if decode_in_parts(
        checkpoint,
        checkpoint_epoch(checkpoint),
        args.data,
        args.overrides,
        args.out.resolve(),
        args.limit,
        args.chunk,
        Path.cwd(),
    ):
        print(f"results written to {args.out}")


if __name__ == "__main__":
    main()
