"""Test-wide settings: one torch thread, since tiny models on a shared 2-core machine run
faster without thread contention."""

import torch

torch.set_num_threads(1)
