"""Policy networks; importing the package registers them as classes checkpoints may name."""

from nco.models.am import AMCVRPPolicy, AMTSPPolicy
from nco.models.bq import BQPolicy
from nco.models.bq_cvrp import BQCVRPPolicy
from nco.models.gomoku_net import GomokuNet
from nco.models.jssp_transformer import JSSPTransformer
from nco.models.lehd import LEHDCVRPPolicy, LEHDTSPPolicy
from nco.models.pomo import POMOCVRPPolicy, POMOTSPPolicy
from nco.registry import register

register("policy", BQPolicy, LEHDTSPPolicy, reads=("tsp",))
register("policy", BQCVRPPolicy, LEHDCVRPPolicy, reads=("cvrp",))
register("policy", AMTSPPolicy, POMOTSPPolicy, reads=("tsp",))
register("policy", AMCVRPPolicy, POMOCVRPPolicy, reads=("cvrp",))
register("policy", JSSPTransformer, reads=("jssp",))
register("policy", GomokuNet, reads=("gomoku",))

__all__ = [
    "AMCVRPPolicy",
    "AMTSPPolicy",
    "BQCVRPPolicy",
    "BQPolicy",
    "GomokuNet",
    "JSSPTransformer",
    "LEHDCVRPPolicy",
    "LEHDTSPPolicy",
    "POMOCVRPPolicy",
    "POMOTSPPolicy",
]
