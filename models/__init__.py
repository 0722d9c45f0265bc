"""Policy networks; importing the package registers them as classes checkpoints may name."""

from models.bq import BQPolicy
from models.bq_cvrp import BQCVRPPolicy
from models.gomoku_net import GomokuNet
from models.jssp_transformer import JSSPTransformer
from models.lehd import LEHDCVRPPolicy, LEHDTSPPolicy
from nco.registry import register

register(
    "policy", BQPolicy, BQCVRPPolicy, GomokuNet, JSSPTransformer, LEHDCVRPPolicy, LEHDTSPPolicy
)

__all__ = [
    "BQCVRPPolicy",
    "BQPolicy",
    "GomokuNet",
    "JSSPTransformer",
    "LEHDCVRPPolicy",
    "LEHDTSPPolicy",
]
