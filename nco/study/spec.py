"""Study definitions read from `configs/study/<name>.yaml`, and the folders a study writes.

A study file names its `kind` (what `nco-study` does with it) and the facts of that kind:
an SL-vs-SI study (`sl_vs_si`) its experiment, test set, expert data and the paper's target
gap; an epochs-to-target study (`epochs_to_target`) its variants. What every study of a kind
shares sits in `configs/study/kinds/<kind>.yaml`; the study's own keys merge over it (a list
replaces, a mapping adds and replaces key by key).
Paper constants live in these files with their source, not in code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from nco.paths import CONFIG_DIR

STUDY_DIR = CONFIG_DIR / "study"
KINDS = ("sl_vs_si", "epochs_to_target")


class StudyError(Exception):
    """A study command that cannot go on as asked (the message says why and what to run)."""


@dataclass(frozen=True)
class Workspace:
    """Where a study's runs and results live: `root` (the project folder; relative paths in
    study files and commands resolve against it, and training runs with it as the working
    directory) and the folders below it."""

    root: Path
    runs: Path  # <root>/data/reproduction/<study>/<run>
    results: Path  # test gaps and reports
    shipped: Path  # shipped checkpoints, <shipped>/<study>/best.pt
    shipped_results: Path  # their test-set results
    cache: Path  # validation references of the runs (NCO_CACHE_DIR of every chunk)

    @classmethod
    def at(cls, root: Path) -> Workspace:
        """The standard layout under `root` (a source checkout's is the repository's)."""
        root = root.resolve()
        data = root / "data"
        return cls(
            root=root,
            runs=data / "reproduction",
            results=data / "results" / "reproduction",
            shipped=data / "checkpoints",
            shipped_results=data / "results" / "checkpoints",
            cache=data / "reproduction" / "cache",
        )

    def shown(self, path: Path) -> str:
        """`path` relative to the root where it lies inside it (as manifests record it)."""
        return str(path.relative_to(self.root)) if path.is_relative_to(self.root) else str(path)


@dataclass(frozen=True)
class Arm:
    """One trajectory source of an SL-vs-SI study: its nco-train overrides, in words."""

    overrides: list[str]
    about: str


@dataclass(frozen=True)
class SlVsSi:
    """An SL-vs-SI study: one problem and size, its experiment config, the SL arm's expert file
    (and the `nco-data expert` arguments that write it), test set and target gap."""

    name: str
    experiment: str
    overrides: list[str]  # nco-train overrides of every run after the experiment (may be [])
    sl_data: str
    expert: str
    test: str
    target: float  # the greedy gap % on the test set to beat (the study file cites its source)
    target_name: str
    arms: dict[str, Arm]
    decoders: dict[str, list[str]]
    finetune_subproblems_per_instance: int
    finetune_lr: float

    def record(self) -> dict[str, Any]:
        """The facts a report records (the same keys reports always had)."""
        keys = ("experiment", "sl_data", "expert", "test", "target")
        return {k: getattr(self, k) for k in keys}


@dataclass(frozen=True)
class Variant:
    """One variant of an epochs-to-target study: its experiment and plot label."""

    experiment: str
    label: str


@dataclass(frozen=True)
class EpochsToTarget:
    """An epochs-to-target study: variants trained per seed until the greedy policy wins from
    every opening, with the command's defaults, reported milestones and permutation count."""

    name: str
    variants: dict[str, Variant]
    defaults: dict[str, Any]
    fractions: tuple[float, ...]
    permutations: int


def study_file(study: str) -> Path:
    """A study's file: `study` itself when it names a .yaml file, else
    `configs/study/<study>.yaml`. ValueError listing the shipped studies when there is none."""
    path = Path(study)
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise ValueError(f"{path}: no such study file.")
        return path
    path = STUDY_DIR / f"{study}.yaml"
    if not path.is_file():
        raise ValueError(f"study {study!r}: expected one of {study_names()} or a .yaml file.")
    return path


def _kind(cfg: Any) -> Any:
    """The `kind` field of a loaded study file (None when it is not a mapping)."""
    return cfg.get("kind") if isinstance(cfg, DictConfig) else None


def study_names(kind: str | None = None) -> list[str]:
    """The shipped studies (of `kind`, when given), by name."""
    paths = sorted(STUDY_DIR.glob("*.yaml"))
    return [p.stem for p in paths if kind is None or _kind(OmegaConf.load(p)) == kind]


def _require(cfg: Any, path: Path, keys: tuple[str, ...]) -> None:
    """ValueError naming the file and the missing keys."""
    missing = [k for k in keys if cfg.get(k) is None]
    if missing:
        raise ValueError(f"{path}: missing {missing} (a {cfg.get('kind')} study needs {keys}).")


def load_study(study: str) -> SlVsSi | EpochsToTarget:
    """The study named `study` (or in the .yaml file `study`), its kind's shared keys merged
    under its own. ValueError naming the file and field when one is missing or wrong."""
    path = study_file(study)
    own = OmegaConf.load(path)
    kind = _kind(own)
    if kind not in KINDS:
        raise ValueError(f"{path}: field 'kind' is {kind!r}, expected one of {list(KINDS)}.")
    shared = STUDY_DIR / "kinds" / f"{kind}.yaml"
    cfg = OmegaConf.merge(OmegaConf.load(shared), own) if shared.is_file() else own
    data = OmegaConf.to_container(cfg, resolve=True)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of study fields.")
    name = path.stem
    if kind == "sl_vs_si":
        _require(data, path, ("experiment", "sl_data", "expert", "test", "target", "arms"))
        _require(data, path, ("decoders", "finetune"))
        target = data["target"]
        if not isinstance(target, dict) or not isinstance(target.get("greedy_gap_pct"), float):
            raise ValueError(f"{path}: field 'target.greedy_gap_pct' must be a number (percent).")
        return SlVsSi(
            name=name,
            experiment=data["experiment"],
            overrides=[str(o) for o in data.get("overrides") or []],
            sl_data=data["sl_data"],
            expert=data["expert"],
            test=data["test"],
            target=target["greedy_gap_pct"],
            target_name=target.get("name", "target"),
            arms={k: Arm(list(v["overrides"]), v["about"]) for k, v in data["arms"].items()},
            decoders={k: list(v) for k, v in data["decoders"].items()},
            finetune_subproblems_per_instance=int(data["finetune"]["subproblems_per_instance"]),
            finetune_lr=float(data["finetune"]["lr"]),
        )
    _require(data, path, ("variants", "defaults", "fractions", "permutations"))
    return EpochsToTarget(
        name=name,
        variants={k: Variant(v["experiment"], v["label"]) for k, v in data["variants"].items()},
        defaults=data["defaults"],
        fractions=tuple(float(f) for f in data["fractions"]),
        permutations=int(data["permutations"]),
    )


def load_sl_vs_si(study: str) -> SlVsSi:
    """`load_study` for a study that must be an SL-vs-SI one (ValueError otherwise)."""
    spec = load_study(study)
    if not isinstance(spec, SlVsSi):
        raise ValueError(f"{study_file(study)}: expected kind sl_vs_si for this command.")
    return spec


def load_epochs_to_target(study: str) -> EpochsToTarget:
    """`load_study` for a study that must be an epochs-to-target one (ValueError otherwise)."""
    spec = load_study(study)
    if not isinstance(spec, EpochsToTarget):
        raise ValueError(f"{study_file(study)}: expected kind epochs_to_target for this command.")
    return spec
