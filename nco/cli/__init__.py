"""Console commands: thin Hydra (or argparse) wrappers over nco's library functions.

Each `nco-<name>` entry point in pyproject.toml is a `main` here; the work is done by a typed
function that Python users call with the same keys (`nco.evaluation.run`, `nco.solving.run`,
`nco.baselines.run`, `nco.training.runner.run`, `nco.importing.import_reference`).
"""
