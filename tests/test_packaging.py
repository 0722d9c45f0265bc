"""A wheel built from the sdist works without the source tree: configs and shipped data travel
inside the package (scripts/build_hooks.py), and the console scripts run from anywhere."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SITE = next(p for p in sys.path if p.endswith("site-packages"))
ENV = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}


def sh(*cmd: str | Path, cwd: Path, env: dict | None = None) -> str:
    proc = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env or ENV, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, f"{cmd[:3]} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sdist of this checkout -> wheel -> a fresh venv holding only nco (dependencies are
    borrowed from the test interpreter's site-packages via PYTHONPATH, without its .pth files,
    so the editable install of the checkout is not visible)."""
    pytest.importorskip("setuptools", minversion="77")
    tmp = tmp_path_factory.mktemp("wheel")
    code = f"from setuptools import build_meta as b; print(b.build_sdist({str(tmp)!r}))"
    sdist = tmp / sh(sys.executable, "-c", code, cwd=REPO).strip().splitlines()[-1]
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp, filter="data")
    src = tmp / sdist.name.removesuffix(".tar.gz")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    sh(*pip, "wheel", src, "-w", tmp / "dist", "--no-deps", "--no-build-isolation", "-q", cwd=tmp)
    venv = tmp / "venv"
    sh(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp)
    wheel = next((tmp / "dist").glob("nco-*.whl"))
    sh(*pip, "--python", venv / "bin" / "python", "install", "--no-deps", "-q", wheel, cwd=tmp)
    return venv


def test_wheel_finds_configs_and_shipped_data(wheel_venv: Path, tmp_path: Path) -> None:
    """nco, its config tree and data/checkpoints come from the installed package."""
    env = {**ENV, "PYTHONPATH": SITE}
    code = (
        "import nco, nco.paths as p\n"
        "print(nco.__file__); print(p.CONFIG_DIR); print(p.DATA_DIR)\n"
        "assert (p.CONFIG_DIR / 'train.yaml').is_file()\n"
        "assert (p.CONFIG_DIR / 'model' / 'default_cvrp.yaml').is_file()\n"
        "assert (p.DATA_DIR / 'checkpoints' / 'tsp20_quick' / 'manifest.json').is_file()\n"
        "assert (p.DATA_DIR / 'references' / 'manifest.json').is_file()\n"
        "from nco.problems.jssp.taillard import BOUNDS_CSV\n"
        "assert BOUNDS_CSV.is_file() and BOUNDS_CSV.is_relative_to(p.DATA_DIR), BOUNDS_CSV\n"
        "import nco.datasets as d\n"
        "assert d.REFERENCES_DIR == p.DATA_DIR / 'references', d.REFERENCES_DIR\n"
        "assert d.GENERATED_DIR == p.user_cache() / 'generated', d.GENERATED_DIR\n"
        "assert d.project_references('kool:tsp20_test', 10000)\n"
        "assert d.load_dataset('kool:tsp20_test').references is not None\n"
        "assert (p.user_cache() / 'generated' / 'kool_tsp20_test.npz').is_file()\n"
    )
    env["NCO_CACHE_DIR"] = str(tmp_path / "cache")
    lines = sh(wheel_venv / "bin" / "python", "-c", code, cwd=tmp_path, env=env).splitlines()
    for line in lines:
        assert line.startswith(str(wheel_venv)), line
    assert lines[1].endswith("nco/configs")


def test_wheel_console_scripts_run_from_anywhere(wheel_venv: Path, tmp_path: Path) -> None:
    """nco-baseline solves a file dataset and nco-train composes problem=cvrp with its model."""
    env = {**ENV, "PYTHONPATH": SITE}
    np.savez(tmp_path / "d.npz", coords=np.random.default_rng(0).uniform(size=(2, 8, 2)))
    out = sh(wheel_venv / "bin" / "nco-baseline", "solver=exact", "data=d.npz", "time_limit=5",
             "workers=1", "out=r.json", cwd=tmp_path, env=env)  # fmt: skip
    assert "Average" in out and (tmp_path / "r.json").is_file()
    cfg = sh(wheel_venv / "bin" / "nco-train", "--cfg", "job", "problem=cvrp", cwd=tmp_path,
             env=env)  # fmt: skip
    assert "nco.models.bq_cvrp.BQCVRPPolicy" in cfg


def test_wheel_installs_one_import_package_beside_a_user_models_folder(
    wheel_venv: Path, tmp_path: Path
) -> None:
    """Installed, `nco` is the only top-level package; a user's own `models/` and `problems/`
    folders (common in ML projects) do not shadow nco's, and a checkpoint written before the
    move (targets `models.bq.BQPolicy`, `problems.tsp.TSPEnv`) still loads and decodes."""
    import torch

    site = next((wheel_venv / "lib").glob("python3*/site-packages"))
    tops = {p.name for p in site.iterdir() if not p.name.endswith((".dist-info", ".pth"))}
    assert "nco" in tops and not tops & {"models", "problems", "scripts", "benchmarks"}, tops
    for folder in ("models", "problems"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("raise SystemExit('user code ran')\n")
        (tmp_path / folder / "bq.py").write_text("raise SystemExit('user code ran')\n")
    old = torch.load(REPO / "data/checkpoints/tsp20/best.pt", weights_only=True)
    assert old["model"]["_target_"].startswith("models."), old["model"]["_target_"]
    env = {**ENV, "PYTHONPATH": f"{tmp_path}:{SITE}"}
    code = (
        "import sys, torch, nco.checkpoint as c, nco.search as s\n"
        f"ld = c.load({str(REPO / 'data/checkpoints/tsp20/best.pt')!r})\n"
        "inst = ld.env.generate(2, torch.Generator().manual_seed(0))\n"
        "print(type(ld.policy).__module__, s.greedy(ld.policy, ld.env, inst).best().objective)\n"
        "assert 'models' not in sys.modules and 'problems' not in sys.modules\n"
    )
    out = sh(wheel_venv / "bin" / "python", "-c", code, cwd=tmp_path, env=env)
    assert out.startswith("nco.models.bq "), out
