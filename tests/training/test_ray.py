"""Ray sampling with 2 workers: same results as in-process, crash recovery, failures, training."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
import torch

ray = pytest.importorskip("ray")

import ray_helpers  # noqa: E402,F401  (registers its policies in this process too)

from nco.distributed import InProcessSampler, RaySampler, make_sampler  # noqa: E402
from nco.models.bq import BQPolicy  # noqa: E402
from nco.problems.tsp import TSPEnv  # noqa: E402
from nco.training.runner import run  # noqa: E402

ENV = {"_target_": "nco.problems.tsp.TSPEnv", "num_nodes": 10}
TINY = {"dim": 16, "layers": 1, "heads": 2, "ff_dim": 32}
MODEL = {"_target_": "nco.models.bq.BQPolicy", **TINY}
SEARCH = {"method": "gumbeldore", "beam_width": 4, "rounds": 2, "sigma": 0.3}


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    """One local Ray session (2 CPUs, no GPU) for the module; workers can import ray_helpers."""
    old = os.environ.get("PYTHONPATH")
    here = str(Path(__file__).resolve().parent)
    os.environ["PYTHONPATH"] = here if not old else f"{here}{os.pathsep}{old}"
    temp_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    ray.init(
        num_cpus=2, num_gpus=0, include_dashboard=False, _temp_dir=temp_dir, logging_level="ERROR"
    )
    yield
    ray.shutdown()
    shutil.rmtree(temp_dir, ignore_errors=True)
    if old is None:
        del os.environ["PYTHONPATH"]
    else:
        os.environ["PYTHONPATH"] = old


@pytest.fixture(scope="module")
def problem():
    """A tiny seeded policy, the env and 14 instances (chunks of 4: the last one is short)."""
    torch.manual_seed(0)
    env = TSPEnv(10)
    return BQPolicy(**TINY), env, env.generate(14, torch.Generator().manual_seed(5))


def test_ray_matches_in_process_despite_a_worker_crash(problem, tmp_path) -> None:
    """Two workers, one exiting mid-chunk, return in instance order exactly the in-process
    results: the chunk is retried, the worker replaced, every instance comes back once."""
    policy, env, instances = problem
    marker = tmp_path / "crashed"
    crashing = {"_target_": "ray_helpers.CrashOncePolicy", "marker": str(marker), **TINY}
    expected = InProcessSampler(env, chunk_size=4).sample(policy, instances, SEARCH, seed=11)
    sampler = RaySampler(ENV, crashing, workers=2, chunk_size=4, progress=False)
    try:
        got = sampler.sample(policy, instances, SEARCH, seed=11)
        assert marker.exists()  # the crash happened
        again = sampler.sample(policy, instances, SEARCH, seed=11)  # same actors, new weights ref
    finally:
        sampler.close()
    assert ray.is_initialized()  # a session the sampler did not start stays up
    for result in (got, again):
        assert result.actions.shape[0] == instances.batch_size
        assert torch.equal(result.actions, expected.actions)
        assert torch.allclose(result.objective, expected.objective)


def test_chunk_failing_twice_raises_with_worker_traceback(problem) -> None:
    """An error on every attempt surfaces after two tries, with the worker's message."""
    policy, _, instances = problem
    failing = {"_target_": "ray_helpers.FailingPolicy", **TINY}
    sampler = RaySampler(ENV, failing, workers=2, chunk_size=4, progress=False)
    try:
        with pytest.raises(RuntimeError, match="failed 2 times") as err:
            sampler.sample(policy, instances, SEARCH, seed=0)
    finally:
        sampler.close()
    assert "boom from the policy" in str(err.value)
    assert 'ray_helpers.py", line' in str(err.value)  # the remote traceback


def test_make_sampler_picks_backend(problem) -> None:
    """workers=0 samples in-process; workers>0 uses Ray; negative counts are rejected."""
    _, env, _ = problem
    assert isinstance(make_sampler({"workers": 0}, env, ENV, MODEL), InProcessSampler)
    assert isinstance(make_sampler({"workers": 2}, env, ENV, MODEL), RaySampler)
    with pytest.raises(ValueError, match="workers >= 0"):
        make_sampler({"workers": -1}, env, ENV, MODEL)


def test_training_with_two_workers_equals_in_process(tiny_cfg) -> None:
    """Two epochs sampled on 2 Ray workers train to the same best policy as in-process."""
    local = run(tiny_cfg())
    remote = run(tiny_cfg("distributed=ray", "distributed.workers=2", "distributed.chunk_size=4"))
    assert remote["best_epoch"] == local["best_epoch"]
    assert remote["best_objective"] == pytest.approx(local["best_objective"])
    from nco import checkpoint

    a = checkpoint.load(local["best_checkpoint"]).policy.state_dict()
    b = checkpoint.load(remote["best_checkpoint"]).policy.state_dict()
    for k in a:
        assert torch.allclose(a[k], b[k], atol=1e-6), k


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"workers": 1, "gpus_per_worker": 0.5}, "need 0.5 GPUs, the Ray cluster has 0"),
        ({"workers": 3, "cpus_per_worker": 1.0}, "need 3 CPUs, the Ray cluster has 2"),
    ],
)
def test_unschedulable_workers_are_refused(problem, kwargs, message) -> None:
    """GPU fractions on a machine without GPUs, or more CPUs than the cluster has, raise at
    the start instead of leaving actors waiting forever."""
    policy, _, instances = problem
    sampler = RaySampler(ENV, MODEL, chunk_size=4, progress=False, **kwargs)
    try:
        with pytest.raises(ValueError, match=message):
            sampler.sample(policy, instances, SEARCH, seed=0)
    finally:
        sampler.close()
