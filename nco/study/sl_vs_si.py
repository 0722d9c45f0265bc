"""An SL-vs-SI study (configs/study/<name>.yaml, kind sl_vs_si): every (arm, seed) trained in
its own fixed run folder, round-robin in resumable chunks; fine-tunes of a checkpoint; test-set
decoding of every run's best.pt in resumable parts.

Layout under the workspace (`Workspace.at(root)`): `data/reproduction/<study>/<arm>_s<seed>`
per run, `.../finetune[-<suffix>]` per fine-tune, `.../schedule.json` for a study-wide
decaying learning rate, and `data/results/reproduction/<study>__<run>__<decoder>.json` per
test-set decode. Rerunning any operation with the same arguments continues it.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from omegaconf import DictConfig

from nco.paths import CONFIG_DIR
from nco.runs import Run
from nco.study.chunks import code_checkout, git_commit, launch, record_chunk
from nco.study.parts import checkpoint_epoch, decode_command, decode_in_parts, is_current
from nco.study.spec import SlVsSi, StudyError, Workspace, load_sl_vs_si

# training.<key> overrides of a fine-tune, recorded only when set; the CLI flags of the keys
# named otherwise on the command line
OPTIONAL_SETUP = (
    "lr_decay",
    "ema_decay",
    "warmup_steps",
    "batch_size",
    "instances_per_epoch",
    "val_augment",
)
FLAGS = {
    "batches_per_epoch": "batches",
    "warmup_steps": "warmup",
    "instances_per_epoch": "instances",
}
SIZES = ("dim", "layers", "heads", "ff_dim")  # model sizes a fine-tune takes from its start
FINETUNE = "finetune"  # the default fine-tune folder; others are finetune-<suffix>


@dataclass(frozen=True)
class Study:
    """An SL-vs-SI study in a workspace: what it is (`spec`) and where it lives (`ws`)."""

    spec: SlVsSi
    ws: Workspace

    @classmethod
    def load(cls, name: str, ws: Workspace) -> Study:
        """The study `name` (configs/study/<name>.yaml or a .yaml path) in `ws`."""
        try:
            return cls(load_sl_vs_si(name), ws)
        except ValueError as err:
            raise StudyError(str(err)) from None

    @property
    def name(self) -> str:
        """The study's name (its file's stem)."""
        return self.spec.name

    @property
    def folder(self) -> Path:
        """`<runs>/<study>`: its runs, fine-tunes and schedule."""
        return self.ws.runs / self.name

    def run_dir(self, method: str, seed: int) -> Path:
        """The fixed folder of one run (rerunning continues it)."""
        return self.folder / f"{method}_s{seed}"

    def run_folders(self) -> list[Path]:
        """Its runs' folders (`<arm>_s<seed>`), by name."""
        return sorted(self.folder.glob("*_s*"))

    def finetune_dir(self, name: str = FINETUNE) -> Path:
        """The fixed folder of one fine-tune (rerunning continues it): `finetune`, or
        `finetune-<suffix>` for a further one (e.g. a lower-lr stage from the first's best)."""
        if not re.fullmatch(r"finetune(-[a-z0-9.]+)?", name):
            raise StudyError(f"--name {name}: expected finetune or finetune-<suffix> (a-z, 0-9, .)")
        return self.folder / name

    def finetune_folders(self) -> list[Path]:
        """Its fine-tune folders (those with a finetune.json), by name."""
        return sorted(p.parent for p in self.folder.glob("finetune*/finetune.json"))

    def results_file(self, run: str, decoder: str) -> Path:
        """Where `evaluate` writes one run's test-set decode."""
        return self.ws.results / f"{self.name}__{run}__{decoder}.json"


def study_config(study: Study) -> DictConfig:
    """The study's experiment as `nco-train` composes it."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        overrides = [f"experiment={study.spec.experiment}", *study.spec.overrides, "out_dir=x"]
        return compose("train", overrides=overrides)


def target_epochs(study: Study) -> int:
    """The experiment's `trainer.max_epochs` (the study's full length)."""
    return int(study_config(study).trainer.max_epochs)


def epochs_done(folder: Path) -> int:
    """Validated epochs of a run or fine-tune (0 before the first)."""
    return Run(folder).epochs_done()


def run_method(folder: Path) -> str:
    """The trajectory source (an arm) of a study run or of one of its fine-tunes."""
    record = folder / "finetune.json"
    if record.is_file():
        return json.loads(record.read_text())["setup"]["method"]
    return folder.name.rsplit("_s", 1)[0]


def schedule_file(study: Study) -> Path:
    """Where a study records its common decaying learning rate."""
    return study.folder / "schedule.json"


def study_schedule(study: Study) -> dict | None:
    """The study's common decaying learning rate (`schedule.json`), None while constant."""
    record = schedule_file(study)
    return json.loads(record.read_text()) if record.is_file() else None


def set_schedule(study: Study, decay: float | None, from_epoch: int | None) -> None:
    """Record the study's decaying learning rate on first use (every run then decays by the
    same factor per epoch from the same epoch); refuse one that differs from the record.
    The size-50 comparison trains flat at a constant rate, and the fine-tunes fell only while
    their rate decayed (docs/reproduction.md), hence one schedule for all arms mid-study."""
    if decay is None and from_epoch is None:
        return
    if decay is None or from_epoch is None:
        raise StudyError("run: give --lr-decay and --decay-from together")
    if not 0 < decay < 1 or from_epoch < 0:
        raise StudyError(
            f"run: expected 0 < --lr-decay < 1 and --decay-from >= 0, got {decay}, {from_epoch}"
        )
    was = study_schedule(study)
    record = schedule_file(study)
    if was is not None:
        if (was["lr_decay"], was["from_epoch"]) != (decay, from_epoch):
            raise StudyError(
                f"{record}: this study decays its learning rate by {was['lr_decay']} per epoch "
                f"from epoch {was['from_epoch']}; rerun with those values (or none) to continue"
            )
        return
    record.parent.mkdir(parents=True, exist_ok=True)
    text = {"lr_decay": decay, "from_epoch": from_epoch, "set": datetime.date.today().isoformat()}
    record.write_text(json.dumps(text, indent=1) + "\n")


def run_start(folder: Path) -> dict | None:
    """The `start.json` of a run that continues an arm of a smaller study (None otherwise)."""
    record = folder / "start.json"
    return json.loads(record.read_text()) if record.is_file() else None


def train_args(study: Study, method: str, seed: int, max_epochs: int | None) -> list[str]:
    """The `nco-train` overrides of one run; `max_epochs` caps this chunk. A run that continues
    an arm of a smaller study (`start.json`) starts from its `init.pt` at the fine-tunes'
    learning rate (at 2e-4 a TSP20 policy on TSP50 got worse) and with that arm's final nucleus
    p_min, as the arm itself would go on, instead of the schedule's first value."""
    spec = study.spec
    folder = study.run_dir(method, seed)
    args = [f"experiment={spec.experiment}", *spec.overrides, *spec.arms[method].overrides]
    args.append(f"seed={seed}")
    if method == "sl":
        args.append(f"sl_data={study.ws.root / spec.sl_data}")
    base = run_start(folder)
    if base is not None:
        args += [f"init_checkpoint={folder / 'init.pt'}", f"training.lr={base['lr']}"]
        if method in ("wor", "gd"):
            args += ["training.p_min_schedule=null", f"search.p_min={base['p_min']}"]
    schedule = study_schedule(study)
    if schedule is not None:
        args += [
            f"training.lr_decay={schedule['lr_decay']}",
            f"training.lr_decay_from={schedule['from_epoch']}",
        ]
    args += [f"hydra.run.dir={folder}", "training.progress=false"]
    if max_epochs is not None:
        args.append(f"trainer.max_epochs={max_epochs}")
    return args


class Init(NamedTuple):
    """What a run or fine-tune needs to know of the checkpoint it starts from."""

    sizes: dict[str, int]  # dim, layers, heads, ff_dim where they differ from the study's model
    grown: Path | None  # the checkpoint it was grown from (nco.models.growth), if any
    epoch: int | None  # the training epoch its metadata records


def read_init(study: Study, source: Path) -> Init:
    """From one (validated) load of checkpoint `source`: its sizes that differ from the study's
    model, since a fine-tune trains the architecture it starts from, the checkpoint it was
    grown from (`meta.grown.source`, resolved against the workspace root), and its epoch."""
    from nco import checkpoint

    loaded = checkpoint.load(source)
    study_model = study_config(study).model
    model = loaded.model
    sizes = {k: model[k] for k in SIZES if k in model and model[k] != study_model.get(k)}
    grown = loaded.meta.get("grown")
    if grown:
        path = Path(grown["source"])
        grown = (path if path.is_absolute() else study.ws.root / path).resolve()
    return Init(sizes, grown or None, loaded.meta.get("epoch"))


def manifest_beside(checkpoint_file: Path) -> dict | None:
    """The manifest.json beside a (shipped) checkpoint, if any."""
    beside = checkpoint_file.parent / "manifest.json"
    return json.loads(beside.read_text()) if beside.is_file() else None


def start_run(study: Study, method: str, seed: int, base: Study | None) -> None:
    """Check that a run continues what it started from, or start it from the same arm and seed
    of the smaller study `base` (None: from scratch): copy that run's `best.pt` to `init.pt`
    and record its source, digest and epoch, the schedule's final p_min and the learning rate
    of fine-tunes in `start.json`.
    Continuing the size-20 arms makes a size-50 comparison affordable on a CPU while every arm
    keeps its own trajectory source."""
    folder = study.run_dir(method, seed)
    started = run_start(folder)
    was = started["from"] if started else None
    named = base.name if base else None
    if was != named and (was is not None or epochs_done(folder)):
        shown = f"--from {was}" if was else "no --from (from scratch)"
        raise StudyError(
            f"{folder}: this run started with {shown}; rerun with that to continue it, or move "
            f"the folder away to start another"
        )
    if base is None or was is not None:
        return
    if base.name == study.name:
        raise StudyError(f"--from {base.name}: a run cannot continue its own study")
    source = base.run_dir(method, seed) / "best.pt"
    if not source.is_file():
        raise StudyError(
            f"{source}: no such checkpoint; train that arm first (nco-study run --study "
            f"{base.name} --methods {method} --seeds {seed})"
        )
    init = read_init(study, source)
    if init.sizes:
        raise StudyError(
            f"{source}: its model sizes {init.sizes} differ from the {study.name} study's"
        )
    schedule = study_config(study).training.p_min_schedule
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, folder / "init.pt")
    text = {
        "from": base.name,
        "source": study.ws.shown(source),
        "sha256": hashlib.sha256(source.read_bytes()).hexdigest(),
        "epoch": init.epoch,
        "p_min": schedule[max(schedule, key=int)] if schedule else None,
        "lr": study.spec.finetune_lr,
        "started": datetime.date.today().isoformat(),
    }
    (folder / "start.json").write_text(json.dumps(text, indent=1) + "\n")


def require_last_checkpoint(study: Study, folder: Path, start: int) -> None:
    """Refuse to extend a run or stage whose epochs are done but whose `last.ckpt` was not kept:
    training would restart from its first checkpoint and append to its metrics."""
    if start and Run(folder).status() == "closed":
        raise StudyError(
            f"{folder}: {start} epochs done, but checkpoints/last.ckpt was not kept (a finished "
            f"run or stage commits best.pt and its metrics only); start a further stage from "
            f"its best: nco-study finetune --study {study.name} "
            f"--name finetune-<suffix> --init {folder / 'best.pt'}"
        )


def expert_data(study: Study, given: str | None, missing: str) -> str:
    """The expert .npz that SL imitates (the study's SL data unless `given`), as recorded in
    finetune.json: relative to the workspace root where it lies inside it. StudyError saying
    `missing` and the command that writes the file when it is not there."""
    spec = study.spec
    path = Path(given).absolute() if given else study.ws.root / spec.sl_data
    if not path.is_file():
        raise StudyError(
            f"{path}: {missing}; write it first with\n"
            f"  nco-data expert {spec.expert} --out {study.ws.shown(path)}"
        )
    return study.ws.shown(path)


def run_study(
    study: Study,
    methods: list[str],
    seeds: list[int],
    turn_epochs: int = 5,
    parallel: int = 2,
    threads: int | None = None,
    max_wall: float | None = None,
    until: int | None = None,
    base: Study | None = None,
    lr_decay: float | None = None,
    decay_from: int | None = None,
) -> None:
    """Train every (method, seed) round-robin: each turn extends the run furthest behind by
    `turn_epochs` (up to `until` or the experiment's `trainer.max_epochs`), `parallel` runs
    at a time with `threads` torch threads each (default: the cores split between them), until
    all are done or `max_wall` seconds have passed. `base` starts each run from the same arm of
    a smaller study; `lr_decay` from `decay_from` puts the study on one decaying learning rate.
    Killing it loses at most the unfinished epochs: rerunning continues every run."""
    unknown = [m for m in methods if m not in study.spec.arms]
    if unknown:
        raise StudyError(f"methods {unknown}: expected some of {list(study.spec.arms)}")
    if "sl" in methods:
        expert_data(study, None, "the SL arm's expert data is missing")
    total = min(target_epochs(study), until or sys.maxsize)
    set_schedule(study, lr_decay, decay_from)
    runs = [(m, s) for s in seeds for m in methods]
    for m, s in runs:
        start_run(study, m, s, base)
    for m, s in runs:
        done = epochs_done(study.run_dir(m, s))
        if done < total:
            require_last_checkpoint(study, study.run_dir(m, s), done)
    threads = threads or max(1, (os.cpu_count() or 1) // parallel)
    deadline = time.monotonic() + max_wall if max_wall else None
    # `kill <pid>` ends the driver through the finally below, which stops its chunks too
    previous_sigterm = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    active: dict[tuple[str, int], tuple[subprocess.Popen, int, float, str]] = {}
    try:
        while True:
            for key, (proc, start, t0, commit) in list(active.items()):
                if proc.poll() is not None:
                    del active[key]
                    end = epochs_done(study.run_dir(*key))
                    record_chunk(study.run_dir(*key), start, end, t0, commit)
                    status = "ok" if proc.returncode == 0 else f"exit {proc.returncode}"
                    print(f"{key[0]} seed {key[1]}: epochs {start}..{end} ({status})", flush=True)
                    if proc.returncode != 0:
                        raise StudyError(f"{study.run_dir(*key)}/train.log: chunk failed")
            if deadline is not None and time.monotonic() > deadline:
                break
            waiting = sorted(
                (epochs_done(study.run_dir(m, s)), m, s) for m, s in runs if (m, s) not in active
            )
            waiting = [w for w in waiting if w[0] < total]
            if not waiting and not active:
                print(f"{study.name}: all runs at {total} epochs")
                return
            while waiting and len(active) < parallel:
                done, m, s = waiting.pop(0)
                upto = min(total, done + turn_epochs)
                chunk = train_args(study, m, s, upto)
                folder = study.run_dir(m, s)
                proc = launch(folder, chunk, threads, study.ws.root, study.ws.cache)
                active[(m, s)] = (proc, done, time.time(), git_commit(code_checkout(study.ws.root)))
            time.sleep(5)
    finally:
        signal.signal(signal.SIGTERM, previous_sigterm)
        for (m, s), (proc, start, t0, commit) in active.items():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)  # resumable: the next run continues
                proc.wait()
            end = epochs_done(study.run_dir(m, s))
            record_chunk(study.run_dir(m, s), start, end, t0, commit)


def finetune_args(study: Study, setup: dict, name: str = FINETUNE) -> list[str]:
    """The `nco-train` overrides of a fine-tune: the study's experiment and the method's
    trajectory source, the sizes of `init.pt` where they differ from the study's model (a
    grown checkpoint), from `init.pt`, with the setup's learning rate (and its per-epoch decay
    when set), Adam steps per epoch, fixed nucleus p_min (sampling with replacement has
    none), seed and length."""
    folder = study.finetune_dir(name)
    record = folder / "finetune.json"
    sizes = json.loads(record.read_text()).get("model", {}) if record.is_file() else {}
    args = [f"experiment={study.spec.experiment}", *study.spec.overrides]
    args += study.spec.arms[setup["method"]].overrides
    args += [f"model.{key}={value}" for key, value in sizes.items()]
    if setup["method"] == "sl":
        args.append(f"sl_data={study.ws.root / setup['sl_data']}")
    elif setup["method"] != "wr":
        args += ["training.p_min_schedule=null", f"search.p_min={setup['p_min']}"]
    args += [f"training.{key}={setup[key]}" for key in OPTIONAL_SETUP if key in setup]
    if "trainer" in setup:
        args.append(f"trainer={setup['trainer']}")
    return args + [
        f"init_checkpoint={folder / 'init.pt'}",
        f"training.lr={setup['lr']}",
        f"training.batches_per_epoch={setup['batches_per_epoch']}",
        f"seed={setup['seed']}",
        f"trainer.max_epochs={setup['epochs']}",
        f"hydra.run.dir={folder}",
        "training.progress=false",
    ]


def flag(key: str) -> str:
    """The CLI flag of a finetune.json setup key."""
    return "--" + FLAGS.get(key, key).replace("_", "-")


def start_finetune(study: Study, name: str, init: str | None, setup: dict) -> None:
    """Check a fine-tune's setup against the one it started with (`finetune.json`), or start
    one: copy the initial checkpoint to `init.pt` (a shipped file it starts from may be
    replaced by its result) and record its source, digest and manifest."""
    folder = study.finetune_dir(name)
    record = folder / "finetune.json"
    if record.is_file():
        saved = json.loads(record.read_text())
        keys = dict.fromkeys([*saved["setup"], *setup])
        differ = [k for k in keys if k != "epochs" and saved["setup"].get(k) != setup.get(k)]
        if differ:
            was = ", ".join(
                f"{flag(k)} {saved['setup'][k]}" if k in saved["setup"] else f"no {flag(k)}"
                for k in differ
            )
            raise StudyError(
                f"{record}: this fine-tune started with {was}; rerun with those to continue it, "
                f"or move {folder} away to start another"
            )
        saved["setup"]["epochs"] = setup["epochs"]  # a fine-tune may be extended
        record.write_text(json.dumps(saved, indent=1) + "\n")
        return
    if init is None:
        raise StudyError(f"{folder}: no fine-tune yet; name the checkpoint to start from (--init)")
    source = Path(init).resolve()
    if not source.is_file():
        raise StudyError(f"--init {init}: no such checkpoint file")
    sizes, grown, _ = read_init(study, source)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, folder / "init.pt")
    text: dict[str, Any] = {
        "study": study.name,
        "setup": setup,
        "init": {
            "source": study.ws.shown(source),
            "sha256": hashlib.sha256(source.read_bytes()).hexdigest(),
            "manifest": manifest_beside(source),
        },
        "started": datetime.date.today().isoformat(),
    }
    if grown is not None:
        grown_from = {"source": study.ws.shown(grown), "manifest": manifest_beside(grown)}
        text["init"]["grown"] = grown_from
    if sizes:
        text["model"] = sizes
    record.write_text(json.dumps(text, indent=1) + "\n")


def finetune(
    study: Study,
    init: str | None = None,
    name: str = FINETUNE,
    method: str = "gd",
    sl_data: str | None = None,
    lr: float | None = None,
    lr_decay: float = 1.0,
    ema_decay: float | None = None,
    warmup: int = 0,
    batch_size: int | None = None,
    batches: int | None = None,
    instances: int | None = None,
    trainer: str | None = None,
    p_min: float = 0.95,
    seed: int = 7,
    epochs: int = 60,
    threads: int | None = None,
    val_augment: int | None = None,
) -> None:
    """Fine-tune checkpoint `init` with self-improvement at the paper's ratio of training to
    sampling (the study file's sub-problems per sampled instance, unless `batches` Adam steps
    per epoch; `instances` sampled per epoch, default the study's) and its fine-tune learning
    rate (unless `lr`), or by imitation of expert data (`method` sl), in `<study>/<name>`, on
    the study's trainer or `trainer` (e.g. gpu), validated by greedy over `val_augment`
    symmetric copies when set; resumable, and refused when the setup differs from the one it
    started with."""
    if method not in study.spec.arms:
        raise StudyError(f"--method {method}: expected one of {list(study.spec.arms)}")
    cfg = study_config(study).training
    batch = batch_size or cfg.batch_size
    per_instance = study.spec.finetune_subproblems_per_instance
    setup = {
        "method": method,
        "lr": study.spec.finetune_lr if lr is None else lr,
        "batches_per_epoch": batches
        or per_instance * (instances or cfg.instances_per_epoch) // batch,
        "p_min": p_min,
        "seed": seed,
        "epochs": epochs,
    }
    if lr_decay != 1:  # recorded only when set, as fine-tunes before the option were
        setup["lr_decay"] = lr_decay
    if ema_decay is not None:
        setup["ema_decay"] = ema_decay
    if warmup:
        setup["warmup_steps"] = warmup
    if batch_size:
        setup["batch_size"] = batch_size
    if instances:
        setup["instances_per_epoch"] = instances
    if trainer:
        setup["trainer"] = trainer
    if val_augment is not None:
        setup["val_augment"] = val_augment
    if method == "sl":
        setup["sl_data"] = expert_data(study, sl_data, "no expert data for --method sl")
        del setup["p_min"]  # imitation samples nothing
    elif sl_data is not None:
        raise StudyError(f"--sl-data is for --method sl, not {method}")
    start_finetune(study, name, init, setup)
    folder = study.finetune_dir(name)
    start = epochs_done(folder)
    if start >= epochs:
        print(f"{folder}: all {epochs} epochs done")
        return
    require_last_checkpoint(study, folder, start)
    previous_sigterm = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    commit, t0 = git_commit(code_checkout(study.ws.root)), time.time()
    args = finetune_args(study, setup, name)
    proc = launch(folder, args, threads or os.cpu_count() or 1, study.ws.root, study.ws.cache)
    try:
        proc.wait()
    finally:
        signal.signal(signal.SIGTERM, previous_sigterm)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # resumable: the next run continues
            proc.wait()
        record_chunk(folder, start, epochs_done(folder), t0, commit)
    if proc.returncode != 0:
        raise StudyError(f"{folder}/train.log: the fine-tune failed (exit {proc.returncode})")
    print(f"{folder}: epochs {start}..{epochs_done(folder)}")


def evaluate(
    study: Study,
    limit: int | None = None,
    seeds: list[int] | None = None,
    decoders: list[str] | None = None,
    force: bool = False,
    chunk: int | None = None,
) -> None:
    """Decode each run's best.pt on the study's test set with each of `decoders` (default:
    all); results that are current (same best epoch, same instances) are kept unless `force`,
    so a rerun continues (with `chunk` also within one run's decoding, part by part)."""
    if chunk is not None and chunk < 1:
        raise StudyError(f"--chunk {chunk}: expected a number of instances >= 1")
    names = decoders or list(study.spec.decoders)
    unknown = [d for d in names if d not in study.spec.decoders]
    if unknown:
        raise StudyError(f"decoders {unknown}: expected some of {list(study.spec.decoders)}")
    for folder in study.run_folders():
        if not (folder / "best.pt").is_file():
            continue
        if seeds is not None and int(folder.name.rsplit("_s", 1)[1]) not in seeds:
            continue
        epoch = checkpoint_epoch(folder / "best.pt")
        for name in names:
            out = study.results_file(folder.name, name)
            decoder = study.spec.decoders[name]
            if not force and is_current(out, epoch, limit):
                print(f"{out.name}: current (epoch {epoch}), kept")
                continue
            out.parent.mkdir(parents=True, exist_ok=True)
            if chunk:
                if force:
                    shutil.rmtree(out.with_suffix(".parts"), ignore_errors=True)
                    out.unlink(missing_ok=True)
                decode_in_parts(
                    folder / "best.pt",
                    epoch,
                    study.spec.test,
                    decoder,
                    out,
                    limit,
                    chunk,
                    study.ws.root,
                )
                continue
            cmd = decode_command(folder / "best.pt", study.spec.test, decoder, out, limit)
            subprocess.run(cmd, cwd=study.ws.root, check=True)
