"""Lightning DDP on the CPU (gloo, 2 ranks) with self-improvement sampling.

The ranks share each epoch's sampling (contiguous blocks of chunks, seeded as in one process),
exchange trajectories so that every rank holds the same buffer, and gather validation in row
order, so that weights, metrics and the promotion decision are the same on every rank.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import TINY

from nco.distributed import InProcessSampler
from nco.models.bq import BQPolicy
from nco.problems.tsp import TSPEnv
from nco.training.data import rank_chunks

HERE = Path(__file__).resolve().parent
SEARCH = {"method": "gumbeldore", "beam_width": 4, "rounds": 2, "sigma": 0.3}


def nco_train(run_dir: Path, *overrides: str) -> subprocess.CompletedProcess:
    """Run the installed `nco-train` on the tiny config with a RankProbe writing to run_dir."""
    exe = Path(sys.executable).parent / "nco-train"
    args = [
        str(exe),
        *[a for a in TINY if not a.startswith("trainer.max_epochs")],
        "training.lr=0.005",  # large enough that the tiny policy improves within 3 epochs
        "+callbacks.probe._target_=ddp_helpers.RankProbe",
        f"+callbacks.probe.folder={run_dir / 'probe'}",
        f"hydra.run.dir={run_dir}",
        *overrides,
    ]
    old = os.environ.get("PYTHONPATH")
    env = {
        **os.environ,
        "PYTHONPATH": str(HERE) if not old else f"{HERE}{os.pathsep}{old}",
        "PYTHONWARNINGS": "ignore",
        "OMP_NUM_THREADS": "1",
    }
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def probes(run_dir: Path, rank: int) -> list[dict]:
    with open(run_dir / "probe" / f"rank{rank}.jsonl") as f:
        return [json.loads(line) for line in f]


def validated(run_dir: Path) -> dict[int, str]:
    """Validation objective per epoch as metrics.csv holds it (exact strings)."""
    with open(run_dir / "logs" / "metrics.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("val/objective")]
    assert len({r["epoch"] for r in rows}) == len(rows), "an epoch was logged twice"
    return {int(r["epoch"]): r["val/objective"] for r in rows}


@pytest.mark.slow  # three nco-train starts, two of them with 2 processes: 130 s on 2 busy cores
def test_two_ranks_agree_every_epoch_and_resume_under_ddp(tmp_path: Path) -> None:
    """2 ranks, 2 epochs: after each epoch both ranks hold the same trained and best weights,
    the same buffer and the same promotion decision, and epoch 0's buffer is the one a single
    process samples; rerunning with max_epochs=3 resumes last.ckpt under DDP and appends epoch 2."""
    ddp = ("trainer.strategy=ddp", "trainer.devices=2")
    run_dir = tmp_path / "ddp"
    nco_train(run_dir, *ddp, "trainer.max_epochs=2")
    single = tmp_path / "single"
    nco_train(single, "trainer.max_epochs=1", "training.batch_size=32")  # same global batch

    rank0, rank1 = probes(run_dir, 0), probes(run_dir, 1)
    assert [p["epoch"] for p in rank0] == [p["epoch"] for p in rank1] == [0, 1]
    for a, b in zip(rank0, rank1, strict=True):
        assert a["world"] == b["world"] == 2
        for key in ("policy", "best", "buffer", "improved", "best_version", "best_objective"):
            assert a[key] == b[key], (a["epoch"], key)
    assert any(p["improved"] for p in rank0), "no promotion happened: the test checks too little"
    one = probes(single, 0)[0]
    assert one["world"] == 1
    assert rank0[0]["buffer"] == one["buffer"]  # the ranks' shares make up the 1-process buffer
    before = validated(run_dir)
    assert sorted(before) == [0, 1]

    again = nco_train(run_dir, *ddp, "trainer.max_epochs=3")
    assert f"resuming from {run_dir / 'checkpoints' / 'last.ckpt'}" in again.stderr
    after = validated(run_dir)
    assert sorted(after) == [0, 1, 2]
    assert {e: after[e] for e in (0, 1)} == before  # earlier rows kept, each epoch once
    rank0, rank1 = probes(run_dir, 0), probes(run_dir, 1)
    assert [p["epoch"] for p in rank0] == [p["epoch"] for p in rank1] == [0, 1, 2]
    for key in ("policy", "best", "buffer", "improved", "best_version", "best_objective"):
        assert rank0[2][key] == rank1[2][key], key
    assert rank0[2]["best_version"] >= rank0[1]["best_version"]


@pytest.mark.parametrize(("num", "world"), [(8, 2), (14, 2), (14, 3), (20, 4)])
def test_rank_shares_partition_the_epoch_into_whole_chunks(num: int, world: int) -> None:
    """The ranks' blocks cover every row once, in order, in whole chunks of 4."""
    shares = [rank_chunks(num, 4, r, world) for r in range(world)]
    rows = [i for _, lo, hi in shares for i in range(lo, hi)]
    assert rows == list(range(num))
    for first, lo, _ in shares:
        assert lo == first * 4 or lo == 0


def test_a_ranks_share_samples_what_one_process_samples_for_those_rows() -> None:
    """Sampling rows 8..13 as chunks 2.. (rank 1 of 2) returns exactly rows 8..13 of sampling
    all 14 rows in one process: the seed follows the chunk's place in the epoch."""
    torch.manual_seed(0)
    env = TSPEnv(10)
    policy = BQPolicy(dim=16, layers=1, heads=2, ff_dim=32)
    instances = env.generate(14, torch.Generator().manual_seed(5))
    sampler = InProcessSampler(env, chunk_size=4)
    whole = sampler.sample(policy, instances, SEARCH, seed=7)
    first, lo, hi = rank_chunks(14, 4, 1, 2)
    assert (first, lo, hi) == (2, 8, 14)
    part = sampler.sample(policy, instances.index(torch.arange(lo, hi)), SEARCH, 7, first)
    t = part.actions.shape[1]
    assert torch.equal(part.actions, whole.actions[lo:hi, :t])
    assert torch.equal(part.objective, whole.objective[lo:hi])
    shifted = sampler.sample(policy, instances.index(torch.arange(lo, hi)), SEARCH, 7)
    assert not torch.equal(shifted.actions, part.actions)  # the offset is what makes it equal
