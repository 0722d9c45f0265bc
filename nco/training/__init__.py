"""Self-improvement training (Algorithm 1 of the Gumbeldore paper) and its supervised baseline."""

from nco.training.buffer import TrajectoryBuffer
from nco.training.callbacks import ExportBest
from nco.training.data import TrajectoryDataModule
from nco.training.module import SelfImprovementModule

__all__ = ["ExportBest", "SelfImprovementModule", "TrajectoryBuffer", "TrajectoryDataModule"]
