"""Estimate a CVRP set's mean reference cost while only some instances have references.

    python scripts/reference_estimate.py --data kool:cvrp100_test --published 15.56 \\
        --out data/results/references/cvrp100_estimate.json \\
        --plot data/results/references/cvrp100_estimate.png

A partial mean differs from the full set's by chance. CVRP costs follow the radial bound
2 * sum_i d(depot, i) * demand_i / capacity, which every instance has, closely. The script fits
cost = a + b * bound on the instances with references by least squares, fills in the others with
the fit, and reports the estimated full-set mean with its standard error (fit and residuals),
and its gap to a published mean when given.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from nco.datasets import GENERATED_DIR, REFERENCES_DIR, load_dataset


def radial_bound(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """Per instance 2 * sum_i d(depot, i) * demand_i / capacity: float64 (N,)."""
    dist = np.linalg.norm(arrays["locs"] - arrays["depot"][:, None, :], axis=-1)
    capacity = np.asarray(arrays["capacity"], dtype=np.float64)
    return 2 * (dist * arrays["demands"]).sum(axis=1) / capacity


def estimate(bound: np.ndarray, refs: np.ndarray) -> dict:
    """Fit refs ~ a + b * bound where refs are finite (NaN elsewhere); estimate the full mean.

    The standard error combines the fit's uncertainty in the mean prediction of the missing
    instances with their residual spread; it is 0 when every instance has a reference.
    """
    known = np.isfinite(refs)
    n, m = len(refs), int((~known).sum())
    if known.sum() < 3:
        raise ValueError(f"expected at least 3 instances with references, got {known.sum()}.")
    x = np.stack([np.ones(int(known.sum())), bound[known]], axis=1)
    coef, *_ = np.linalg.lstsq(x, refs[known], rcond=None)
    resid = refs[known] - x @ coef
    sigma2 = float(resid @ resid) / (len(resid) - 2)  # at least 3 points: dof >= 1
    total = refs[known].sum()
    se = 0.0
    if m:
        c = np.array([1.0, bound[~known].mean()])
        total += m * float(c @ coef)
        var_fit = sigma2 * float(c @ np.linalg.pinv(x.T @ x) @ c)
        se = (m / n) * float(np.sqrt(var_fit + sigma2 / m))
    ss_total = float(((refs[known] - refs[known].mean()) ** 2).sum())
    return {
        "instances": n,
        "with_references": n - m,
        "known_mean": float(refs[known].mean()),
        "intercept": float(coef[0]),
        "slope": float(coef[1]),
        "r2": 1.0 - float(resid @ resid) / ss_total if ss_total > 0 else 1.0,
        "residual_std": float(np.sqrt(sigma2)),
        "estimated_mean": float(total / n),
        "standard_error": se,
    }


def plot(bound: np.ndarray, refs: np.ndarray, result: dict, title: str, path: Path) -> None:
    """Scatter of references against the bound, with the fitted line, saved as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    known = np.isfinite(refs)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    ax.scatter(bound[known], refs[known], s=2, alpha=0.3, label="instances with a reference")
    xs = np.array([bound.min(), bound.max()])
    fit = f"fit, R² = {result['r2']:.3f}"
    ax.plot(xs, result["intercept"] + result["slope"] * xs, color="C3", label=fit)
    ax.set_xlabel("radial bound 2·Σ d(depot, i)·demand_i / capacity")
    ax.set_ylabel("reference cost")
    if result["with_references"] == result["instances"]:
        mean = f"mean {result['estimated_mean']:.4f} (all known)"
    else:
        mean = f"estimated mean {result['estimated_mean']:.3f} ± {result['standard_error']:.3f}"
    ax.set_title(
        f"{title}: {result['with_references']:,} of {result['instances']:,} instances; {mean}",
        fontsize=9,
    )
    ax.legend(loc="upper left", fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
    """Load the set and its references, print the estimate and write the JSON and plot."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="a CVRP named set or dataset file")
    parser.add_argument("--published", type=float, default=None, help="published mean to compare")
    parser.add_argument("--cache-dir", type=Path, default=GENERATED_DIR, help="generated sets")
    parser.add_argument("--references-dir", type=Path, default=REFERENCES_DIR)
    parser.add_argument("--out", type=Path, default=None, help="results JSON")
    parser.add_argument("--plot", type=Path, default=None, help="PNG of costs against the bound")
    args = parser.parse_args(argv)

    dataset = load_dataset(args.data, "cvrp", args.cache_dir, args.references_dir)
    if dataset.references is None:
        raise SystemExit(
            f"{args.data}: no references. A dataset file needs a 'reference_costs' field; a "
            f"named set needs reference files in {args.references_dir}."
        )
    bound = radial_bound(dataset.arrays)
    result = {"dataset": dataset.name, "source": dataset.reference_source}
    result |= estimate(bound, dataset.references)
    if args.published is not None:
        result["published_mean"] = args.published
        result["gap_to_published"] = 100 * (result["estimated_mean"] / args.published - 1)
    print(
        f"{dataset.name}: {result['with_references']} of {result['instances']} with references, "
        f"mean {result['known_mean']:.4f}; fit R^2 {result['r2']:.4f}; estimated full mean "
        f"{result['estimated_mean']:.4f} +- {result['standard_error']:.4f}"
        + (f" ({result['gap_to_published']:+.2f} % vs {args.published})" if args.published else "")
    )
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    if args.plot is not None:
        plot(bound, dataset.references, result, dataset.name, args.plot)
    return result


if __name__ == "__main__":
    main()
