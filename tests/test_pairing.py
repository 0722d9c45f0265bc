"""Each problem config selects a model that reads its states; wrong pairs fail in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf
from training.conftest import compose_train

from nco import registry

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
PROBLEMS = sorted(p.stem for p in (CONFIGS / "problem").glob("*.yaml"))
MODELS = sorted(
    p.stem for p in (CONFIGS / "model").glob("*.yaml") if not p.stem.startswith("default_")
)


@pytest.mark.parametrize("problem", PROBLEMS)
def test_each_problem_selects_a_model_that_reads_it(problem: str) -> None:
    """`nco-train problem=<p>` composes `model=default_<p>`, and that pair is accepted."""
    assert (CONFIGS / "model" / f"default_{problem}.yaml").is_file(), problem
    cfg = compose_train([f"problem={problem}"], tiny=False)
    model = OmegaConf.to_container(cfg.model, resolve=True)
    env = OmegaConf.to_container(cfg.problem.env, resolve=True)
    registry.check_pair(model, env, "train config")


def test_every_model_pairs_with_some_problem_and_refuses_the_others() -> None:
    """Across all shipped model x problem configs: each model reads at least one problem, and
    every refusal is one line naming the model class and the problem."""
    envs = {p: OmegaConf.to_container(OmegaConf.load(CONFIGS / "problem" / f"{p}.yaml").env)
            for p in PROBLEMS}  # fmt: skip
    for name in MODELS:
        model = OmegaConf.to_container(OmegaConf.load(CONFIGS / "model" / f"{name}.yaml"))
        accepted = 0
        for env in envs.values():
            try:
                registry.check_pair(model, env, "train config")
                accepted += 1
            except ValueError as err:
                message = str(err)
                cls = model["_target_"].rsplit(".", 1)[-1]
                assert "\n" not in message and cls in message, message
                env_name = registry.resolve("env", env["_target_"], "env").name
                assert f"not {env_name}" in message, message
        assert accepted, f"model {name} reads none of {PROBLEMS}"
