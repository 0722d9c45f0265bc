"""Write the standard test sets as .npz files bit for bit, and sets of one's own by the same
recipe (`nco-data generate`).

Generation (numpy legacy `RandomState`, float64): TSP `uniform(size=(N, n, 2))`; CVRP depots
`uniform(size=(N, 2))`, then locations `uniform(size=(N, n, 2))`, then demands
`randint(1, 10, size=(N, n))`, capacity 20/30/40/50/80/100/250 for n = 10/20/50/100/200/500/1000
(each problem's descriptor holds its recipe). Kool et al.: N = 10,000, seed 1234 (test) or 4321
(val). The 128-instance generalization sets follow the same recipe with N = 128: TSP200/500/1000
with seed 777 (BQ-NCO) and CVRP200 with seed 12345, CVRP500 and CVRP1000 with seed 1234 (LEHD);
all six equal the sets those papers published (checked; the CVRP1000 seed was found by trying).
A set whose arrays do not hash to `CHECKSUMS` is not written.
"""

from __future__ import annotations

from pathlib import Path

from nco.datasets import cache_path, checksum, generate_named, save_npz
from nco.registry import get_problem, problem_names

# sha256 of each named set's arrays (`nco.datasets.checksum`), as the sets were published
CHECKSUMS = {
    "kool:tsp20_test": "74270c3a136cfa97c43323dc184899685d8ecdac97520ff4596f7d5f0817e0d0",
    "kool:tsp20_val": "5211684b24ad7a41c2b2cc2e822ac04c649f00b2d9c053601f23ed3ea9b7a400",
    "kool:tsp50_test": "683ec268ba7b0a8623381ff17b714274b06ca23d8e092d352e16c79bebc2eea1",
    "kool:tsp50_val": "65768b84ff0461d21c1ace33afada3e3bca7a020e49f94a5cb69031e5b6f989b",
    "kool:tsp100_test": "4a4e8c422936bf6a951a94c9d40b6498a0ab8a853623ccc23f648971980edc19",
    "kool:tsp100_val": "9fcf4098e5e9cef72988fe3c90ad2dcb407832c12fd1721d3502960711cca25b",
    "kool:cvrp20_test": "de5c7bb3c04824670d46d05426db7d2905a5d1db7bbd15a6348caeb3f47cc9da",
    "kool:cvrp20_val": "e1a8829cccdf80c2a59c8453323b9e42a23f447f13506f0d01d0c23330022fd7",
    "kool:cvrp50_test": "687cfdb0bf6b8159b6564f4be6d76d097cb5677e1f38e59b16535ed8c1a39a4c",
    "kool:cvrp50_val": "c1846e74ebdc45ebec60589c99158ea7942b0703285b4fbb012e5720e6c56c08",
    "kool:cvrp100_test": "3982a5e23ca3aed6f9323f9667e9f97f5880dd34e3942e092a1fede7e98d4fab",
    "kool:cvrp100_val": "a2965f16875b14c81535bcbb533274c76aa805f1c8d2430f7196f9cdb3df6b88",
    "bq:tsp200": "725a6845710284ec3e1a21442c86357b83defcc8f7539194c4aeb77108388218",
    "bq:tsp500": "bad85935f48c0c6b2247b2bf5edcb07ff573812dfce1923846a91133af7c4e30",
    "bq:tsp1000": "03efa10c21e9cf4f413ff1414035f09c769bb2e90d37bef4e25aa0b2bcf78bf1",
    "lehd:cvrp200": "fdea05872394136e62267e73f454b1b3ce1b636d2e0a89fc46d48ee3b51ad5f2",
    "lehd:cvrp500": "ac1a629ae34125177ae32f4b132fac9bdabc51285c1218915329f34ac654afc2",
    "lehd:cvrp1000": "6e2075f9cecece69e1c0f34d4e59bf46ef9f67ff4eadd2ea07e300221d3b9bf0",
}


def make_named(names: list[str], out: Path, force: bool = False) -> dict[str, str]:
    """Write the named sets `names` into `out` as `<source>_<name>.npz` (the files
    `load_dataset` caches), keeping existing files unless `force`; returns per set its
    checksum and what happened ("written", "exists, kept", or "CHECKSUM MISMATCH ...")."""
    status = {}
    for name in names:
        path = cache_path(name, out)
        _, arrays = generate_named(name)
        digest = checksum(arrays)
        if digest != CHECKSUMS[name]:
            status[name] = f"CHECKSUM MISMATCH {digest} (expected {CHECKSUMS[name]}), not written"
        elif path.exists() and not force:
            status[name] = f"{digest}  exists, kept (--force to overwrite)"
        else:
            save_npz(path, arrays)
            status[name] = f"{digest}  written"
    return status


def custom_makers() -> list[str]:
    """The problems whose descriptor can generate a set of any size (`make_arrays`)."""
    return [p for p in problem_names() if get_problem(p).make_arrays is not None]


def make_custom(
    problem: str, size: int, count: int, seed: int, out: Path, force: bool = False
) -> str:
    """Write `count` instances of `problem` with `size` nodes (CVRP: customers, at the standard
    capacity of the size) from `seed` as `<out>/custom_<problem><size>_n<count>_seed<seed>.npz`;
    returns its status line. ValueError naming the field for a problem without a recipe, a
    size below 3 or a count below 1 (and the problem's own refusals, e.g. a CVRP size without
    a standard capacity)."""
    make = get_problem(problem).make_arrays if problem in problem_names() else None
    if make is None:
        raise ValueError(f"problem: expected one of {custom_makers()}, got {problem!r}")
    if size < 3 or count < 1:
        raise ValueError(f"expected size >= 3 and count >= 1, got {size} and {count}")
    path = out / f"custom_{problem}{size}_n{count}_seed{seed}.npz"
    if path.exists() and not force:
        return f"{path}  exists, kept (--force to overwrite)"
    arrays = make(count, size, seed)
    save_npz(path, arrays)
    return f"{path}  written ({checksum(arrays)})"
