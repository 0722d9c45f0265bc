"""Test-wide settings: one torch thread, since tiny models on a shared 2-core machine run
faster without thread contention, and a private cache folder for validation references."""

import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture(autouse=True, scope="session")
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never read or fill the user's ~/.cache/nco."""
    mp = pytest.MonkeyPatch()
    mp.setenv("NCO_CACHE_DIR", str(tmp_path_factory.mktemp("nco_cache")))
    yield
    mp.undo()
