"""Reference costs for a dataset by a classical solver, resumable: now `nco-references`
(nco/cli/references.py over nco.reference_costs); this file keeps its command lines working.

    python scripts/compute_references.py --data kool:tsp100_test --solver lkh --time-limit 10

is `nco-references <the same arguments>`.
"""

from __future__ import annotations

from nco.cli.references import run

main = run  # main(argv) -> the manifest entry; a refused setting raises ValueError

if __name__ == "__main__":
    main()
