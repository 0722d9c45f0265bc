"""Shipping a study's checkpoint with its provenance: how it was trained (every stage back to
the first, with commands, epochs, wall time, hosts and code versions) and its test gaps
against the study's target, in the `manifest.json` beside the shipped `best.pt`."""

from __future__ import annotations

import datetime
import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from nco.study.curves import power_law, read_run
from nco.study.parts import decode_command
from nco.study.sl_vs_si import (
    FINETUNE,
    Study,
    finetune_args,
    flag,
    run_method,
    run_start,
    study_schedule,
    train_args,
)
from nco.study.spec import StudyError


def shown_args(study: Study, args: list[str]) -> list[str]:
    """`nco-train` overrides as a manifest shows them: workspace-relative paths, without the
    run folder and progress settings the driver adds."""
    root = f"{study.ws.root}/"
    return [a.replace(root, "") for a in args if not a.startswith(("hydra.", "training.progress"))]


def provenance(study: Study, name: str, train: dict, clip: float) -> dict:
    """How a study run or one of its fine-tunes was trained: the training in words, the
    command that continues it, its folder, and for a fine-tune the checkpoint it started from
    (its manifest's training, command, epochs and test gaps)."""
    folder = study.folder / name
    method = run_method(folder)
    record = folder / "finetune.json"
    shown = study.ws.shown(folder)
    if method == "sl":
        tune = json.loads(record.read_text()) if record.is_file() else None
        data = tune["setup"]["sl_data"] if tune else study.spec.sl_data
        sampled = f"per epoch sub-problems of the solutions in {data}: "
    else:
        sampled = f"per epoch {train['instances_per_epoch']} instances, "
    per_epoch = (
        f"{study.spec.arms[method].about}; {sampled}{train['batches_per_epoch']} Adam steps of "
        f"{train['batch_size']} sub-problems, lr {train['lr']}, clip {clip}"
    )
    if not record.is_file():
        seed = int(name.rsplit("_s", 1)[1])
        args = shown_args(study, train_args(study, method, seed, None))
        told: dict[str, Any] = {
            "training": per_epoch,
            "command": f"nco-study run --study {study.name} --seeds {seed} "
            f"(run {name}: nco-train {' '.join(args)})",
            "run": f"{shown} (metrics.csv; chunks.jsonl: commit per chunk)",
        }
        base = run_start(folder)
        if base is not None:
            told["training"] = (
                f"continues {base['source']} (epoch {base['epoch']}) with {per_epoch}"
            )
            told["command"] = told["command"].replace(" --seeds", f" --from {base['from']} --seeds")
            told["init"] = {"source": base["source"], "sha256": base["sha256"]}
        schedule = study_schedule(study)
        if schedule is not None:
            told["training"] += f", x {schedule['lr_decay']} per epoch from epoch "
            told["training"] += str(schedule["from_epoch"])
            told["command"] = told["command"].replace(
                " --seeds",
                f" --lr-decay {schedule['lr_decay']} --decay-from {schedule['from_epoch']} --seeds",
                1,
            )
        return told
    tune = json.loads(record.read_text())
    setup, init = tune["setup"], tune["init"]
    args = shown_args(study, finetune_args(study, setup, name))
    flags = " ".join(f"{flag(k)} {v}" for k, v in setup.items())
    named = "" if name == FINETUNE else f" --name {name}"
    decay = f", lr x {setup['lr_decay']} per epoch" if "lr_decay" in setup else ""
    if "warmup_steps" in setup:
        decay += f", lr warmed up linearly over {setup['warmup_steps']} steps"
    if "ema_decay" in setup:
        decay += f", validated and shipped as a moving average of weights ({setup['ema_decay']})"
    if "trainer" in setup:
        decay += f", on the {setup['trainer']} trainer"
    if "val_augment" in setup:
        decay += f", validated by greedy over {setup['val_augment']} symmetric copies"
    return {
        "training": f"fine-tune of {init['source']} with {per_epoch}{decay}",
        "command": f"nco-study finetune --study {study.name}{named} "
        f"--init {init['source']} {flags} (nco-train {' '.join(args)})",
        "run": f"{shown} (metrics.csv; chunks.jsonl: commit per "
        "chunk; finetune.json: the setup and the starting checkpoint with its manifest)",
        "init": {"source": init["source"], "sha256": init["sha256"], **earlier_stage(study, init)},
    }


def earlier_stage(study: Study, init: dict) -> dict:
    """What a fine-tune started from: the study run or fine-tune whose `best.pt` it copied
    (its `stage`, read now; `sha256` names the file it was then), else the facts of the
    starting checkpoint's manifest (a shipped one), its own start included."""
    source = Path(init["source"])
    if init["manifest"] is None and source.parent.parent == Path(study.ws.shown(study.folder)):
        if (study.folder / source.parent.name / ".hydra").is_dir():
            return stage(study, source.parent.name)
    earlier = init["manifest"] or {}
    keep = {"problem", "training", "command", "run", "epochs_trained", "best_epoch"}
    keep |= {"wall_time_h", "init"}
    return {k: v for k, v in earlier.items() if k in keep or k.startswith("kool_")}


def run_config(study: Study, name: str) -> dict:
    """A run's saved Hydra config, resolved section by section (others name Hydra's run-time
    resolvers)."""
    path = study.folder / name / ".hydra" / "config.yaml"
    saved = OmegaConf.load(path)
    if not isinstance(saved, DictConfig):
        raise ValueError(f"{path}: expected a mapping (the run's Hydra config).")
    return {
        k: OmegaConf.to_container(saved[k], resolve=True)
        for k in ("problem", "model", "training", "trainer", "search")
    }


def stage(study: Study, name: str) -> dict:
    """One training stage of a shipped checkpoint: how the run was trained (`provenance`),
    its epochs, best epoch and wall time."""
    cfg, run = run_config(study, name), read_run(study.folder / name)
    return {
        **provenance(study, name, cfg["training"], cfg["trainer"]["gradient_clip_val"]),
        "epochs_trained": len(run["epochs"]),
        "best_epoch": run["saved_epoch"],
        "wall_time_h": round(run["hours"][-1], 2),
    }


def total_hours(record: dict) -> float:
    """Wall time of a stage and every stage before it (each stage's whole run, also the epochs
    after the checkpoint the next stage continued)."""
    earlier = record.get("init")
    return record.get("wall_time_h", 0.0) + (total_hours(earlier) if earlier else 0.0)


def manifest(study: Study, name: str, run: dict, tests: dict[str, dict], limit: int | None) -> dict:
    """The shipped checkpoint's manifest: how it was trained (config, command, epochs, wall
    time, hosts, code versions; for a fine-tune also every stage before it, under `init`) and
    its test gaps against the study's target greedy gap."""
    spec = study.spec
    cfg = run_config(study, name)
    origin = stage(study, name)
    greedy = tests["greedy"]["mean_gap"]
    fit = power_law(run, {f"AM {spec.target}%": spec.target})
    size = {k: v for k, v in cfg["problem"].items() if k in ("num_nodes", "num_customers")}
    key = spec.test.replace(":", "_")
    results = study.ws.shown(study.ws.shipped_results)
    return {
        "checkpoint": "best.pt",
        "problem": {"name": cfg["problem"]["name"], **size},
        "model": {k: v for k, v in cfg["model"].items() if not k.startswith("_")}
        | {"class": cfg["model"]["_target_"]},
        "search": cfg["search"] if run_method(study.folder / name) != "sl" else None,
        **origin,
        "machines": sorted(
            {f"{c.get('cpu') or 'unrecorded CPU'}, {c.get('cpus')} cores" for c in run["chunks"]}
        ),
        "commits": list(dict.fromkeys(c["commit"] for c in run["chunks"])),
        "wall_time_h_total": round(total_hours(origin), 2),
        "validation_gap_pct": round(run["saved_val_gap"], 3),
        key: {
            "instances": tests["greedy"]["num_instances"],
            "limit": limit,
            **{
                f"{d}_instances": t["num_instances"]
                for d, t in tests.items()
                if t["num_instances"] != tests["greedy"]["num_instances"]
            },
            "reference": tests["greedy"]["reference_source"],
            **{f"{d}_gap_pct": round(t["mean_gap"], 3) for d, t in tests.items()},
            "results": f"{results}/{study.name}_on_{study.name}_{{{','.join(tests)}}}.json",
        },
        "target": {
            "am_greedy_gap_pct": spec.target,
            "reached": greedy <= spec.target,
            "greedy_points_above": round(greedy - spec.target, 3),
            "power_law": fit,
        },
        "date": datetime.date.today().isoformat(),
    }


def choose_run(study: Study, run: str | None, methods: list[str]) -> tuple[str, dict]:
    """The named run (or fine-tune, e.g. `finetune`), or among the runs of `methods` the
    one whose best.pt has the lowest validation gap (all validate on the same instances); with
    its `read_run` record. StudyError when there is none."""
    folders = {
        p.name: p
        for p in [*study.run_folders(), *study.finetune_folders()]
        if (p / "best.pt").is_file() and (p / "logs").is_dir()
    }
    if run is not None:
        if run not in folders:
            raise StudyError(f"{study.folder / run}: no such run with a best.pt")
        return run, read_run(folders[run])
    runs = {name: read_run(p) for name, p in folders.items() if run_method(p) in methods}
    runs = {name: r for name, r in runs.items() if r["saved_epoch"] is not None}
    if not runs:
        raise StudyError(f"{study.folder}: no validated run of {', '.join(methods)} yet")
    name = min(runs, key=lambda n: runs[n]["saved_val_gap"])
    return name, runs[name]


def augmented(study: Study, checkpoint: Path, augment: int, limit: int | None) -> tuple[str, dict]:
    """Greedy over `augment` symmetric copies of each test instance (`search.augment`) of the
    shipped `checkpoint`: the manifest key (`<test>_augment<N>`) and its entry, with the gap
    against the study's target, the command and the results file."""
    out = study.ws.shipped_results / f"{study.name}_on_{study.name}_greedy_aug{augment}.json"
    decoder = ["search=greedy", f"search.augment={augment}"]
    cmd = decode_command(checkpoint, study.spec.test, decoder, out, limit)
    subprocess.run(cmd, cwd=study.ws.root, check=True)
    result = json.loads(out.read_text())
    shown = ["nco-eval", *(a.replace(f"{study.ws.root}/", "") for a in cmd[3:])]
    return f"{study.spec.test.replace(':', '_')}_augment{augment}", {
        "instances": result["num_instances"],
        "greedy_gap_pct": round(result["mean_gap"], 3),
        "command": " ".join(shown),
        "results": study.ws.shown(out),
        "am_greedy_gap_pct": study.spec.target,
        "reached": result["mean_gap"] < study.spec.target,
    }


def kept_augmented(folder: Path, source: Path) -> dict:
    """The `_augment<N>` entries of the manifest in a shipped `folder` when its best.pt is the
    same file as `source` (reshipping it keeps figures that took long to decode), else none:
    they describe another file."""
    old = folder / "manifest.json"
    if not old.is_file() or not (folder / "best.pt").is_file():
        return {}
    entries = {k: v for k, v in json.loads(old.read_text()).items() if "_augment" in k}
    digests = {hashlib.sha256(f.read_bytes()).hexdigest() for f in (source, folder / "best.pt")}
    if entries and len(digests) > 1:
        print(
            f"{old}: dropped {', '.join(entries)}, decoded from the file shipped before; "
            "`ship --augment N` decodes the new one"
        )
        return {}
    return entries


def ship(
    study: Study,
    run: str | None = None,
    methods: tuple[str, ...] = ("wr", "wor", "gd"),
    limit: int | None = None,
    beam_limit: int | None = None,
    augment: int | None = None,
) -> Path:
    """Copy one run's best.pt (by default the self-improvement run with the best validation
    gap) to `<shipped>/<study>/`, decode it with every decoder on the whole test set (or its
    first `limit`; `beam_limit` for the decoders other than greedy), with `augment` also by
    greedy over that many symmetric copies, and write its `manifest.json`; returns the
    shipped folder."""
    name, record = choose_run(study, run, list(methods))
    folder = study.ws.shipped / study.name
    folder.mkdir(parents=True, exist_ok=True)
    source = study.folder / name / "best.pt"
    kept = kept_augmented(folder, source)
    shutil.copyfile(source, folder / "best.pt")
    study.ws.shipped_results.mkdir(parents=True, exist_ok=True)
    tests = {}
    for decoder, overrides in study.spec.decoders.items():
        cap = beam_limit if beam_limit and decoder != "greedy" else limit
        out = study.ws.shipped_results / f"{study.name}_on_{study.name}_{decoder}.json"
        cmd = decode_command(folder / "best.pt", study.spec.test, overrides, out, cap)
        subprocess.run(cmd, cwd=study.ws.root, check=True)
        result = json.loads(out.read_text())
        tests[decoder] = {
            "mean_gap": result["mean_gap"],
            "num_instances": result["num_instances"],
            "reference_source": result["info"].get("reference_source"),
        }
    text = manifest(study, name, record, tests, limit)
    if augment:
        key, entry = augmented(study, folder / "best.pt", augment, limit)
        kept[key] = entry
    text = insert_after(text, study.spec.test.replace(":", "_"), kept)
    (folder / "manifest.json").write_text(json.dumps(text, indent=2) + "\n")
    gaps = ", ".join(f"{d} {t['mean_gap']:.2f} %" for d, t in tests.items())
    gaps += "".join(f", {k} {v['greedy_gap_pct']:.2f} %" for k, v in kept.items())
    print(f"shipped {name} (epoch {record['saved_epoch']}) to {folder}: {gaps}")
    return folder


def insert_after(text: dict, key: str, entries: dict) -> dict:
    """`text` with `entries` placed right after its `key` (a manifest reads test by test)."""
    items = list(text.items())
    at = [k for k, _ in items].index(key) + 1
    return dict(items[:at] + list(entries.items()) + items[at:])
