"""The report of an SL-vs-SI study: a results JSON (per run its validation curve, best epoch,
trend and test-set gaps), a learning-curve PNG and the test-set table per arm."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np

from nco.runs import Run
from nco.study.curves import power_law, read_run, summary
from nco.study.sl_vs_si import Study, run_method, run_start, study_schedule
from nco.study.spec import StudyError

COLORS = {"sl": "black", "wr": "tab:orange", "wor": "tab:blue", "gd": "tab:red"}


def read_tests(study: Study, runs: dict[str, dict]) -> dict[str, dict[str, dict]]:
    """The test-set results `evaluate` wrote for each run and decoder: mean gap, instances, and
    the epoch of the decoded best.pt (`stale` when the run's best epoch has moved since)."""
    tests: dict[str, dict[str, dict]] = {}
    for name, run in runs.items():
        for decoder in study.spec.decoders:
            path = study.results_file(name, decoder)
            if not path.is_file():
                continue
            result = json.loads(path.read_text())
            epoch = result["info"]["checkpoint_meta"].get("epoch")
            saved = -1 if run["saved_epoch"] is None else run["saved_epoch"]  # -1: the start
            tests.setdefault(name, {})[decoder] = {
                "mean_gap": result["mean_gap"],
                "num_instances": result["num_instances"],
                "epoch": epoch,
                "stale": epoch != saved,
            }
    return tests


def arm_table(study: Study, tests: dict[str, dict[str, dict]]) -> list[str]:
    """Markdown rows per arm: each decoder's test gap per seed and their mean (each gap with
    its instance count where a decoder's results differ in it, e.g. a test set half done)."""
    decoders = list(study.spec.decoders)
    sizes = {d: {t[d]["num_instances"] for t in tests.values() if d in t} for d in decoders}
    arms: dict[str, dict[str, list[tuple[str, float]]]] = {}
    for name, by_decoder in sorted(tests.items()):
        method, seed = name.rsplit("_s", 1)
        for decoder, t in by_decoder.items():
            mark = " (stale)" if t["stale"] else ""
            if len(sizes[decoder]) > 1:
                mark += f" (on {t['num_instances']})"
            gap = t["mean_gap"]  # None: a test set without references
            shown = "-" if gap is None else f"{gap:.3f}"
            arms.setdefault(method, {}).setdefault(decoder, []).append(
                (f"s{seed} {shown}{mark}", gap)
            )
    counts = {d: "/".join(map(str, sorted(sizes[d]))) for d in decoders}
    rows = [
        "| arm | "
        + " | ".join(f"{d} gap % (per seed; mean; {counts[d]} instances)" for d in decoders)
        + " |"
    ]
    rows.append("|---" * (len(decoders) + 1) + "|")
    for method in [m for m in study.spec.arms if m in arms]:
        cells = []
        for decoder in decoders:
            seeds = arms[method].get(decoder, [])
            gaps = [g for _, g in seeds if g is not None]
            avg = sum(gaps) / len(gaps) if gaps else float("nan")
            cells.append(", ".join(s for s, _ in seeds) + f"; **{avg:.3f}**" if seeds else "-")
        rows.append(f"| {method.upper()} | " + " | ".join(cells) + " |")
    return rows


def read_finetunes(study: Study, runs: dict[str, dict]) -> dict[str, dict]:
    """The study's fine-tunes by folder name (`read_run` record, method, and where each starts
    on the study's axes: after the best epoch of the study run or fine-tune it started from,
    else at 0)."""
    tunes: dict[str, dict] = {}
    origins: dict[str, str] = {}
    study_runs = Path(study.ws.shown(study.folder))  # as finetune.json records sources
    for folder in study.finetune_folders():
        if not Run(folder).has_metrics():
            continue
        run = read_run(folder)
        if not run["epochs"]:  # started, nothing validated yet
            continue
        init = json.loads((folder / "finetune.json").read_text())["init"]
        path = Path(init["source"]).parent  # a run's own best.pt, else a shipped one's run
        if path.parent != study_runs:  # a shipped file, or one grown from a shipped file
            manifest = init["manifest"] or init.get("grown", {}).get("manifest") or {}
            path = Path(manifest.get("run", "").split(" ")[0])
        if path.parent == study_runs and path.name != folder.name:
            origins[folder.name] = path.name
        start = {"from": init["source"], "epoch": 0, "hours": 0.0, "grown": "grown" in init}
        tunes[folder.name] = {**run, "method": run_method(folder), "start": start}

    def place(name: str) -> None:
        """Set `name`'s start after its origin's best epoch, placing that origin first."""
        origin = origins.pop(name, None)  # popped: each is placed once, and cycles end
        if origin is None:
            return
        if origin in tunes:
            place(origin)
        run = runs.get(origin) or tunes.get(origin)
        if run is None or run["saved_epoch"] is None:
            return
        offset, epoch = run.get("start", {"epoch": 0, "hours": 0.0}), run["saved_epoch"]
        tunes[name]["start"] |= {
            "from": f"{origin} epoch {epoch}",
            "epoch": offset["epoch"] + epoch + 1,
            "hours": offset["hours"] + run["hours"][run["epochs"].index(epoch)],
        }

    for name in list(origins):
        place(name)
    return tunes


def report(study: Study) -> Path:
    """Write `<results>/<study>.json` and `<study>.png` and print a summary line per run and
    fine-tune and the test-set table; returns the JSON's path."""
    folders = [p for p in study.run_folders() if (p / "logs").is_dir()]
    runs = {p.name: read_run(p) for p in folders}
    bases = set()
    for p in folders:  # runs that continue an arm of a smaller study (run --from)
        base = run_start(p)
        if base is not None:
            bases.add(base["from"])
            runs[p.name]["start"] = {
                "from": f"{base['from']} {p.name} epoch {base['epoch']}",
                "epoch": 0,
                "hours": 0.0,
            }
    tunes = read_finetunes(study, runs)
    if not runs and not tunes:
        raise StudyError(f"{study.folder}: no runs yet")
    spec = study.spec
    targets = {"1%": 1.0, f"AM {spec.target}%": spec.target}
    for r in [*runs.values(), *tunes.values()]:
        r["power_law"] = power_law(r, targets)
    tests = read_tests(study, runs)
    study.ws.results.mkdir(parents=True, exist_ok=True)
    out = study.ws.results / f"{study.name}.json"
    schedule = study_schedule(study)
    record = {"study": study.name, **spec.record(), "schedule": schedule, "runs": runs}
    record |= {"test": tests, "finetunes": tunes}
    out.write_text(json.dumps(record, indent=1))
    plot(study, runs, tunes, schedule, bases, out.with_suffix(".png"))
    for name, r in [*runs.items(), *tunes.items()]:
        print(summary(name, r))
    if tests:
        print("\n".join(arm_table(study, tests)))
    print(f"wrote {out} and {out.with_suffix('.png')}")
    return out


def plot(
    study: Study,
    runs: dict[str, dict],
    tunes: dict[str, dict],
    schedule: dict | None,
    bases: set[str],
    path: Path,
) -> None:
    """Validation gap vs epoch and vs hours of every run (log scale), and below every fine-tune
    stage on its own epochs against the target (linear scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    spec = study.spec
    fig = plt.figure(figsize=(11, 7.2 if tunes else 3.6))
    grid = fig.add_gridspec(2 if tunes else 1, 2, height_ratios=[1, 1] if tunes else [1])
    by_epoch = fig.add_subplot(grid[0, 0])
    by_time = fig.add_subplot(grid[0, 1], sharey=by_epoch)
    stages = fig.add_subplot(grid[1, :]) if tunes else None
    dark = plt.get_cmap("Dark2")  # apart from the arms' colors
    shades = itertools.cycle([dark(i) for i in range(dark.N)])
    for (name, tune), shade in zip(tunes.items(), shades, strict=False):
        e0, h0 = tune["start"]["epoch"], tune["start"]["hours"]  # after the run it started from
        by_epoch.plot([e0 + e for e in tune["epochs"]], tune["val_gap"], color=shade, lw=1.4)
        by_time.plot([h0 + h for h in tune["hours"]], tune["val_gap"], color=shade, lw=1.4)
        grown = ", grown" if tune["start"]["grown"] else ""
        label = f"{name} ({tune['method'].upper()}{grown}) from {tune['start']['from']}"
        if tune["initial_val_gap"] is not None:
            label += f" ({tune['initial_val_gap']:.2f} %)"
        if stages is not None:  # always, with fine-tunes
            stages.plot(
                tune["epochs"], tune["val_gap"], color=shade, lw=1.2, marker=".", label=label
            )
    if stages is not None:
        label = f"{spec.target_name}, test set: {spec.target} %"
        stages.axhline(spec.target, color="gray", ls=":", label=label)
        stages.set(
            xlabel="epoch of the stage",
            ylabel="validation gap, greedy (%)",
            title="fine-tune stages from the checkpoint named (its validation gap), linear scale",
        )
        stages.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    for name, r in runs.items():
        method, seed = name.rsplit("_s", 1)
        color, ls, label = COLORS.get(method, "gray"), "-" if seed == "0" else "--", method.upper()
        epochs, hours, gaps = r["epochs"], r["hours"], r["val_gap"]
        if "start" in r and r["initial_val_gap"] is not None:  # continued: its start at -1
            epochs, hours, gaps = [-1, *epochs], [0.0, *hours], [r["initial_val_gap"], *gaps]
        by_epoch.plot(epochs, gaps, color=color, ls=ls, lw=1.2, label=f"{label} seed {seed}")
        by_time.plot(hours, gaps, color=color, ls=ls, lw=1.2, label=f"{label} seed {seed}")
    by_epoch.set(xlabel="epoch", ylabel="validation gap, greedy (%)", yscale="log")
    # plain numbers, not 10^k alone: 1..9 times each power of ten within a decade, else 1-2-5
    low, high = by_epoch.get_ylim()
    subs = tuple(np.arange(1.0, 10.0).tolist()) if high < 10 * low else (1.0, 2.0, 5.0)
    by_epoch.yaxis.set_major_locator(ticker.LogLocator(subs=subs))
    by_epoch.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    by_epoch.yaxis.set_minor_formatter(ticker.NullFormatter())
    if schedule is not None:
        by_epoch.axvline(schedule["from_epoch"], color="gray", ls=":", lw=0.8)
        by_epoch.text(
            schedule["from_epoch"],
            1.0,
            f" lr x {schedule['lr_decay']} per epoch",
            transform=by_epoch.get_xaxis_transform(),
            fontsize=7,
            va="top",
        )
    by_time.set(xlabel="wall-clock hours (sampling + training + validation)")
    if runs:
        by_time.legend(fontsize=7)
    continued = f", each run continuing its {' / '.join(sorted(bases))} arm" if bases else ""
    fig.suptitle(
        f"{study.name}: SL vs SI WR / WOR / GD (same model and optimizer steps){continued}"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
