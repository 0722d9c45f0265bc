"""`nco-study`: studies of many `nco-train` runs, defined in configs/study/*.yaml; resumable.

    nco-study run --study tsp20 --seeds 0 1 --turn-epochs 5 --max-wall 3600
    nco-study run --study tsp50 --from tsp20 --seeds 0 --lr-decay 0.95 --decay-from 4
    nco-study evaluate --study tsp20 --limit 10000 --chunk 1000
    nco-study report --study tsp20
    nco-study finetune --study tsp50 --init data/checkpoints/tsp20/best.pt
    nco-study ship --study tsp20
    nco-study epochs --study gomoku --variants gd_mean wr --seeds 0 1 2 --parallel 2
    nco-study epochs --study gomoku --report

`--study` names a shipped study (configs/study/<name>.yaml) or a study .yaml file of your
own. Runs and results live under `--root` (default: the current directory):
`data/reproduction/<study>/`, `data/results/reproduction/`, shipped checkpoints under
`data/checkpoints/<study>/`; rerunning a command continues where it stopped. The work is done
by `nco.study.sl_vs_si` (run, finetune, evaluate), `nco.study.report`,
`nco.study.provenance` (ship) and `nco.study.epochs`; docs/reproduction.md and docs/gomoku.md
describe the studies.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from nco.study import epochs as epochs_study
from nco.study.provenance import ship
from nco.study.report import report
from nco.study.sl_vs_si import FINETUNE, Study, evaluate, finetune, run_study
from nco.study.spec import StudyError, Workspace, load_epochs_to_target, study_names


def parser() -> argparse.ArgumentParser:
    """The `nco-study` argument parser (one subcommand per operation)."""
    top = argparse.ArgumentParser(prog="nco-study", description=__doc__.split("\n\n")[0])
    top.add_argument(
        "--root", type=Path, default=Path.cwd(), help="project folder (default: current)"
    )
    sub = top.add_subparsers(dest="command", required=True)
    study = argparse.ArgumentParser(add_help=False)
    shipped = ", ".join(study_names())
    study.add_argument(
        "--study", required=True, help=f"a shipped study ({shipped}) or a study .yaml file"
    )

    run = sub.add_parser("run", parents=[study], help="train the study's runs round-robin")
    run.add_argument("--methods", nargs="+", default=None, help="arms (default: all)")
    run.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    run.add_argument("--turn-epochs", type=int, default=5, help="epochs per run and turn")
    run.add_argument("--parallel", type=int, default=2, help="runs at a time")
    run.add_argument(
        "--threads", type=int, default=None, help="torch threads per run (default: cores/parallel)"
    )
    run.add_argument("--max-wall", type=float, default=None, help="stop after this many seconds")
    run.add_argument(
        "--until",
        type=int,
        default=None,
        help="bring every run to this many epochs, then stop (default: the study length)",
    )
    run.add_argument(
        "--from",
        dest="base",
        default=None,
        help="start each run from the best.pt of the same arm and seed of this (smaller) study",
    )
    run.add_argument(
        "--lr-decay", type=float, default=None, help="the study's lr factor per epoch (recorded)"
    )
    run.add_argument(
        "--decay-from", type=int, default=None, help="first epoch of --lr-decay (recorded)"
    )

    tune = sub.add_parser(
        "finetune", parents=[study], help="fine-tune a checkpoint at the paper's training ratio"
    )
    tune.add_argument("--init", default=None, help="checkpoint to start from (first run only)")
    tune.add_argument(
        "--name", default=FINETUNE, help="folder: finetune (default) or finetune-<suffix>"
    )
    tune.add_argument("--method", default="gd", help="arm whose trajectory source it uses")
    tune.add_argument(
        "--sl-data",
        default=None,
        help="--method sl: expert .npz to imitate (default: the study's SL arm's data)",
    )
    tune.add_argument("--lr", type=float, default=None, help="(default: the study file's)")
    tune.add_argument(
        "--lr-decay", type=float, default=1.0, help="lr factor per epoch (1: constant)"
    )
    tune.add_argument(
        "--ema-decay", type=float, default=None, help="weight average per step (training.ema_decay)"
    )
    tune.add_argument(
        "--warmup", type=int, default=0, help="steps of linear lr warmup (training.warmup_steps)"
    )
    tune.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="sub-problems per Adam step (training.batch_size; default: the study's)",
    )
    tune.add_argument(
        "--batches", type=int, default=None, help="Adam steps per epoch (default: paper ratio)"
    )
    tune.add_argument(
        "--instances",
        type=int,
        default=None,
        help="instances sampled per epoch (training.instances_per_epoch; default: the study's)",
    )
    tune.add_argument(
        "--trainer", default=None, help="trainer config group, e.g. gpu (default: the study's)"
    )
    tune.add_argument(
        "--val-augment",
        type=int,
        default=None,
        help="validate greedy over this many symmetric copies (training.val_augment)",
    )
    tune.add_argument("--p-min", type=float, default=0.95, help="nucleus (not for wr)")
    tune.add_argument("--seed", type=int, default=7)
    tune.add_argument("--epochs", type=int, default=60)
    tune.add_argument("--threads", type=int, default=os.cpu_count() or 1)

    sub.add_parser(
        "report", parents=[study], help="results JSON, learning-curve PNG and test-set table"
    )

    ev = sub.add_parser("evaluate", parents=[study], help="test-set gaps of every run's best.pt")
    ev.add_argument("--limit", type=int, default=None, help="first LIMIT test instances")
    ev.add_argument("--seeds", nargs="+", type=int, default=None, help="(default: all)")
    ev.add_argument("--decoders", nargs="+", default=None, help="(default: all)")
    ev.add_argument(
        "--force", action="store_true", help="decode again even where the results are current"
    )
    ev.add_argument(
        "--chunk",
        type=int,
        default=None,
        help="decode in resumable parts of CHUNK instances (<results>.parts/, merged when done)",
    )

    sh = sub.add_parser("ship", parents=[study], help="ship a run's best.pt with its manifest")
    sh.add_argument(
        "--run", default=None, help="e.g. gd_s0, or finetune (default: best validation gap)"
    )
    sh.add_argument("--methods", nargs="+", default=["wr", "wor", "gd"], help="arms to choose from")
    sh.add_argument("--limit", type=int, default=None, help="first LIMIT test instances")
    sh.add_argument(
        "--beam-limit", type=int, default=None, help="beam 16 on fewer (default: --limit)"
    )
    sh.add_argument(
        "--augment",
        type=int,
        default=None,
        help="also greedy over this many symmetric copies (search.augment; e.g. 8)",
    )

    ep = sub.add_parser(
        "epochs", parents=[study], help="epochs-to-target study (e.g. gomoku): train or report"
    )
    ep.add_argument("--seeds", type=int, nargs="+", default=None, help="(default: the study's)")
    ep.add_argument("--variants", nargs="+", default=None, help="(default: the study's)")
    ep.add_argument("--board", type=int, default=None)
    ep.add_argument("--samples", type=int, default=None, help="games per opening per epoch")
    ep.add_argument("--rounds", type=int, default=None, help="Gumbeldore rounds")
    ep.add_argument("--max-epochs", type=int, default=None, help="cap (censors a run)")
    ep.add_argument("--parallel", type=int, default=1, help="runs at a time (1 thread each)")
    ep.add_argument("--snapshot-s", type=float, default=300.0, help="snapshot interval")
    ep.add_argument(
        "--report",
        action="store_true",
        help="only rewrite the JSON and PNG from the runs so far and print them as Markdown",
    )
    ep.add_argument("--out", type=Path, default=None, help="output stem (default: the study's)")
    ep.add_argument("extra", nargs="*", help="Hydra overrides for every run (after --)")
    return top


def epochs_setting(args: argparse.Namespace) -> epochs_study.EpochsStudy:
    """The epochs-to-target study the `epochs` arguments describe, the study file's defaults
    filling what they leave out (its `out` relative to --root; a given --out relative to the
    current directory)."""
    spec = load_epochs_to_target(args.study)
    given = {k: getattr(args, k) for k in ("board", "samples", "rounds", "max_epochs")}
    setting = {k: spec.defaults[k] if v is None else v for k, v in given.items()}
    root = args.root.resolve()
    out = args.out.resolve() if args.out is not None else root / spec.defaults["out"]
    return epochs_study.EpochsStudy(spec, out, root, extra=list(args.extra), **setting)


def run_epochs(args: argparse.Namespace) -> None:
    """`nco-study epochs`: train the unfinished runs, or with --report only rewrite the
    snapshot and print it."""
    study = epochs_setting(args)
    if args.report:
        print(epochs_study.markdown(epochs_study.write_snapshot(study)))
        return
    variants = args.variants or study.spec.defaults["variants"]
    seeds = args.seeds or study.spec.defaults["seeds"]
    epochs_study.train(study, variants, seeds, args.parallel, args.snapshot_s)


def dispatch(args: argparse.Namespace) -> None:
    """Run the subcommand `args` name."""
    if args.command == "epochs":
        run_epochs(args)
        return
    ws = Workspace.at(args.root)
    study = Study.load(args.study, ws)
    if args.command == "run":
        base = Study.load(args.base, ws) if args.base else None
        run_study(
            study,
            methods=args.methods or list(study.spec.arms),
            seeds=args.seeds,
            turn_epochs=args.turn_epochs,
            parallel=args.parallel,
            threads=args.threads,
            max_wall=args.max_wall,
            until=args.until,
            base=base,
            lr_decay=args.lr_decay,
            decay_from=args.decay_from,
        )
    elif args.command == "finetune":
        finetune(
            study,
            init=args.init,
            name=args.name,
            method=args.method,
            sl_data=args.sl_data,
            lr=args.lr,
            lr_decay=args.lr_decay,
            ema_decay=args.ema_decay,
            warmup=args.warmup,
            batch_size=args.batch_size,
            batches=args.batches,
            instances=args.instances,
            trainer=args.trainer,
            p_min=args.p_min,
            seed=args.seed,
            epochs=args.epochs,
            threads=args.threads,
            val_augment=args.val_augment,
        )
    elif args.command == "report":
        report(study)
    elif args.command == "evaluate":
        evaluate(study, args.limit, args.seeds, args.decoders, args.force, args.chunk)
    else:
        ship(study, args.run, tuple(args.methods), args.limit, args.beam_limit, args.augment)


def main(argv: list[str] | None = None) -> None:
    """Parse `argv` and run it; a study that cannot go on as asked exits with the reason."""
    args = parser().parse_args(argv)
    try:
        dispatch(args)
    except (StudyError, ValueError) as err:
        raise SystemExit(f"nco-study {args.command}: {err}") from None


if __name__ == "__main__":
    main()
