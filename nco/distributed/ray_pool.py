"""Sampling on long-lived Ray actors, each holding a policy replica (several may share a GPU).

Per `sample` call the weights go once into the object store; every chunk request carries the
reference and a version number, so an actor loads new weights once per epoch and a restarted
actor catches up on its first chunk. Chunks are handed to actors as they free up (two in flight
per actor to hide transfer latency). A chunk whose actor dies is requeued and the actor replaced
(counted in `stats["workers_replaced"]`); when the cluster no longer has room for the replacement
(a node left), the pool shrinks to what the live nodes hold instead of waiting forever for one.
A chunk that fails twice raises with the worker's error and traceback. Results come back in
instance order, and every instance comes back exactly once.
"""

from __future__ import annotations

import collections
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Mapping
from typing import Any

import ray
import torch
from ray.exceptions import RayActorError, RayTaskError
from torch import nn

from nco import registry
from nco.allocator import keep_freed_memory
from nco.distributed.chunks import cat_best, chunk_bounds, derive_seed, sample_chunk
from nco.env import Batch
from nco.progress import progress_bar
from nco.search.solutions import Best

IN_FLIGHT_PER_WORKER = 2
MAX_ATTEMPTS = 2
STALL_S = 5.0  # seconds without a result after which the pool checks for lost nodes


class SamplingWorker:
    """Ray actor body: an env and a policy replica built from plain `_target_` configs."""

    def __init__(
        self,
        env_cfg: dict[str, Any],
        model_cfg: dict[str, Any],
        threads: int,
        packages: tuple[str, ...] = (),
    ) -> None:
        keep_freed_memory()
        torch.set_num_threads(max(1, threads))
        for package in packages:  # the driver's plugin packages: their classes may be built
            registry.add_plugin_package(package)
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.env = registry.build("env", env_cfg, "problem.env")
        self.policy = registry.build("policy", model_cfg, "model").to(self.device)
        self.version = -1
        self.node = ray.get_runtime_context().get_node_id()

    def sample(
        self,
        chunk: Batch,
        search_cfg: dict[str, Any],
        seed: int,
        weights: list[ray.ObjectRef],
        version: int,
    ) -> tuple[Best, str]:
        """Best sequence per instance of `chunk` (after loading weights `version` if needed),
        and the id of the node that sampled it."""
        if version != self.version:
            self.policy.load_state_dict(ray.get(weights[0]))
            self.version = version
        return sample_chunk(self.policy, self.env, chunk, search_cfg, seed), self.node


class RaySampler:
    """Samples with `workers` Ray actors; joins the cluster at `address` or starts a local one.

    Ray starts lazily on the first `sample` call; if Ray is already initialized in this process
    (e.g. by a caller), that session is reused and left running by `close`.
    """

    def __init__(
        self,
        env_cfg: Mapping[str, Any],
        model_cfg: Mapping[str, Any],
        workers: int,
        chunk_size: int = 64,
        cpus_per_worker: float = 1.0,
        gpus_per_worker: float = 0.0,
        address: str | None = None,
        num_cpus: int | None = None,
        progress: bool = True,
    ) -> None:
        if workers < 1:
            raise ValueError(f"distributed config: expected workers >= 1, got {workers}.")
        chunk_bounds(1, chunk_size)  # validates chunk_size
        self.env_cfg = dict(env_cfg)
        self.model_cfg = dict(model_cfg)
        self.workers = workers
        self.chunk_size = chunk_size
        self.cpus_per_worker = cpus_per_worker
        self.gpus_per_worker = gpus_per_worker
        self.address = address
        self.num_cpus = num_cpus
        self.progress = progress
        self.actors: list[Any] = []  # None where a slot was dropped (lost cluster capacity)
        self._slot_nodes: dict[int, str] = {}  # the node each slot's actor answered from
        self.version = 0
        self.stats: dict[str, float] = {}  # of the last `sample` call: replaced workers, nodes
        self._started_ray = False
        self._temp_dir: str | None = None

    def _start(self) -> None:
        if not ray.is_initialized():
            main = threading.current_thread() is threading.main_thread()
            on_term = signal.getsignal(signal.SIGTERM) if main else None
            if self.address:
                ray.init(address=self.address)
            else:
                self._temp_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")
                ray.init(num_cpus=self.num_cpus, include_dashboard=False, _temp_dir=self._temp_dir)
            if main and on_term is not None:
                # ray.init installs a C-level SIGTERM handler that prints a stack and kills the
                # process at once; give SIGTERM back to the caller's (nco-train's) handler
                signal.signal(signal.SIGTERM, on_term)
            self._started_ray = True
        self._check_resources(ray.cluster_resources())
        self.actors = [self._new_actor() for _ in range(self.workers)]

    def _check_resources(self, available: Mapping[str, float]) -> None:
        """Refuse what Ray could never schedule (its actors would wait forever): more CPUs or
        GPUs for all workers together than the cluster has."""
        for name, key, per in (
            ("cpus_per_worker", "CPU", self.cpus_per_worker),
            ("gpus_per_worker", "GPU", self.gpus_per_worker),
        ):
            need, have = self.workers * per, float(available.get(key, 0.0))
            if need > have + 1e-9:
                raise ValueError(
                    f"distributed config: {self.workers} workers x {name}={per:g} need {need:g} "
                    f"{key}s, the Ray cluster has {have:g}; lower distributed.workers or "
                    f"distributed.{name}"
                    + (" (0 on a machine without GPUs)." if key == "GPU" else ".")
                )

    def _new_actor(self) -> Any:
        cls = ray.remote(SamplingWorker).options(
            num_cpus=self.cpus_per_worker, num_gpus=self.gpus_per_worker, max_restarts=0
        )
        packages = registry.plugin_packages()
        return cls.remote(self.env_cfg, self.model_cfg, int(self.cpus_per_worker), packages)

    def sample(
        self,
        policy: nn.Module,
        instances: Batch,
        search_cfg: Mapping[str, Any],
        seed: int,
        first_chunk: int = 0,
    ) -> Best:
        """Best sequence and objective per instance (CPU tensors, instance order); chunk i is
        seeded as chunk `first_chunk + i` (see `Sampler.sample`)."""
        if not self.actors:
            self._start()
        self.version += 1
        weights = ray.put({k: v.detach().cpu() for k, v in policy.state_dict().items()})
        cfg = dict(search_cfg)
        bounds = chunk_bounds(instances.batch_size, self.chunk_size)
        chunks = [instances.index(torch.arange(lo, hi)) for lo, hi in bounds]
        results: list[Best | None] = [None] * len(chunks)
        failures: collections.Counter[int] = collections.Counter()
        pending = collections.deque(range(len(chunks)))
        in_flight: dict[ray.ObjectRef, tuple[int, Any, int]] = {}
        nodes: collections.Counter[str] = collections.Counter()
        replaced = 0

        def submit(slot: int) -> None:
            if pending and self.actors[slot] is not None:
                c = pending.popleft()
                actor = self.actors[slot]
                ref = actor.sample.remote(
                    chunks[c], cfg, derive_seed(seed, first_chunk + c), [weights], self.version
                )
                in_flight[ref] = (slot, actor, c)

        for _ in range(IN_FLIGHT_PER_WORKER):
            for slot in range(len(self.actors)):
                submit(slot)

        def refill() -> None:
            for live in self._live_slots():  # the freed slot, or others for a dropped one
                busy = sum(1 for v in in_flight.values() if v[0] == live)
                for _ in range(IN_FLIGHT_PER_WORKER - busy):
                    submit(live)

        bar = progress_bar(total=instances.batch_size, enabled=self.progress, desc="sampling")
        try:
            while in_flight:
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=STALL_S)
                if not ready:  # a node may have left: requeue what its slots held
                    for lost in self._stranded_slots():
                        for r in [r for r, v in in_flight.items() if v[0] == lost]:
                            pending.appendleft(in_flight.pop(r)[2])
                        replaced += self._replace(lost)
                    refill()
                    continue
                ref = ready[0]
                slot, actor, c = in_flight.pop(ref)
                try:
                    results[c], node = ray.get(ref)
                    nodes[node] += 1
                    self._slot_nodes[slot] = node
                    bar.update(chunks[c].batch_size)
                except (RayActorError, RayTaskError) as err:
                    failures[c] += 1
                    if failures[c] >= MAX_ATTEMPTS:
                        raise RuntimeError(
                            f"Sampling chunk {c} (instances {bounds[c][0]}..{bounds[c][1] - 1}) "
                            f"failed {failures[c]} times; last worker error:\n{err}"
                        ) from err
                    pending.appendleft(c)
                    if isinstance(err, RayActorError) and self.actors[slot] is actor:
                        replaced += self._replace(slot)
                refill()
        finally:
            bar.close()
        if None in self.actors:  # the next call renumbers the slots
            self._slot_nodes = {}
            self.actors = [a for a in self.actors if a is not None]
        missing = [c for c, r in enumerate(results) if r is None]
        if missing:
            raise RuntimeError(f"Sampling lost chunks {missing}.")
        self.stats = {"workers_replaced": float(replaced), "nodes": float(len(nodes))}
        self.node_chunks = dict(nodes)
        return cat_best([r for r in results if r is not None])

    def _live_slots(self) -> list[int]:
        return [i for i, a in enumerate(self.actors) if a is not None]

    def _stranded_slots(self) -> list[int]:
        """Slots whose work cannot finish: their actor's node is dead, or (when the live nodes
        hold fewer workers than the pool has) their actor was never placed on a node."""
        alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
        live = self._live_slots()
        dead = [s for s in live if self._slot_nodes.get(s, "") not in alive | {""}]
        rest = [s for s in live if s not in dead]
        unplaced = [s for s in rest if s not in self._slot_nodes]
        excess = len(rest) - self._capacity()
        return dead + unplaced[: max(0, excess)]

    def _replace(self, slot: int) -> int:
        """Replace the dead actor in `slot` if the live nodes have room for it, else drop the
        slot (raising when none is left); returns 1 if a worker was started."""
        capacity = self._capacity()
        live = len(self._live_slots()) - 1  # without the dead one
        old = self.actors[slot]
        if old is not None:
            ray.kill(old)  # an actor stranded on a dead node, or already gone: no restart
        self._slot_nodes.pop(slot, None)
        if live + 1 <= capacity:
            self.actors[slot] = self._new_actor()
            return 1
        self.actors[slot] = None
        if live == 0:
            raise RuntimeError(
                "Ray sampling: every worker died and the cluster has no room for a new one."
            )
        print(
            f"nco: Ray sampling continues with {live} workers (the cluster lost capacity).",
            file=sys.stderr,
            flush=True,
        )
        return 0

    def _capacity(self) -> int:
        """How many workers the cluster's live nodes can hold (by CPUs and GPUs)."""
        total: collections.Counter[str] = collections.Counter()
        for node in ray.nodes():
            if node.get("Alive"):
                total.update({k: float(v) for k, v in node.get("Resources", {}).items()})
        fits = [
            int(total[key] // per + 1e-9)
            for key, per in (("CPU", self.cpus_per_worker), ("GPU", self.gpus_per_worker))
            if per > 0
        ]
        return min(fits) if fits else self.workers

    def close(self) -> None:
        """Stop the actors, and Ray itself (removing its temp dir) if this sampler started it."""
        for actor in self.actors:
            if actor is not None:
                ray.kill(actor)
        self.actors = []
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None
