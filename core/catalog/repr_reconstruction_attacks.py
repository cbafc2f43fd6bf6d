"""Reconstruction attacks on shared representations r + δ (Inf2Guard, spec 004 §3.3).

Each attack's registration is its one declaration (:mod:`core.catalog`).
"""

from __future__ import annotations

from core.knowledge import ThreatModel
from core.parts import ATTACKS, AttackPart

_SEES_RD = "the released r + δ of each target image (one noise draw per target)"
_GOAL_X_RD = "reconstruct each target image x from r + δ"
_RA = "core.attacks.reconstruction"
ATTACKS.register("decoder_in_training", AttackPart(
    name="decoder_in_training", title="in-training decoder Ψ",
    accepts=("noisy_representation",),
    threat=ThreatModel(sees=_SEES_RD,
                       knows="nothing beyond its training: the decoder the defense trained "
                             "against, on the defender's own (x, r + δ) pairs",
                       goal=_GOAL_X_RD),
    function=f"{_RA}:in_training_decoder", role="in_training", family="repr_reconstruction",
    needs=("in_training",)))
ATTACKS.register("decoder_fresh", AttackPart(
    name="decoder_fresh", title="fresh decoder (larger, trained afterwards)",
    accepts=("noisy_representation",),
    threat=ThreatModel(sees=_SEES_RD,
                       knows="the encoder as a query interface and the noise distribution p_Φ "
                             "(ε, channel, learned μ, σ); auxiliary images (aux split) it "
                             "encodes and perturbs itself to train on (x, r + δ)",
                       goal=_GOAL_X_RD),
    function=f"{_RA}:fresh_decoder", role="fresh", family="repr_reconstruction",
    params=("fresh_hidden", "fresh_epochs"), needs=("encoder", "aux")))
ATTACKS.register("inversion", AttackPart(
    name="inversion", title="optimisation inversion (‖f(x) − r̃‖² + TV)",
    accepts=("noisy_representation",),
    threat=ThreatModel(sees=_SEES_RD,
                       knows="the encoder's weights (white box) and an image prior (total "
                             "variation); no auxiliary data",
                       goal=_GOAL_X_RD),
    function=f"{_RA}:optimisation_inversion", role="fresh", family="repr_reconstruction",
    params=("inversion_iterations", "inversion_tv"), needs=("encoder",)))
