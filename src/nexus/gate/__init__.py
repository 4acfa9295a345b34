"""Stage 4: the boundary gate — cross-encoder rerank of the SLB's top-k and a calibrated decision.

Where does the gate decide? `nexus.gate.policy.choose_action`, fed by `BoundaryGate.decide`.
torch is imported only when a cross-encoder is loaded or trained.
"""

from nexus.gate.decision import Action, Decision
from nexus.gate.gate import BoundaryGate, contextual_turn, is_follow_up
from nexus.gate.model import GateModel, GateModelError
from nexus.gate.probabilities import GateCalibration, RiskTargets, Thresholds

__all__ = ["Action", "BoundaryGate", "Decision", "GateCalibration", "GateModel", "GateModelError", "RiskTargets",
           "Thresholds", "contextual_turn", "is_follow_up"]
