"""The federated defenses of the attribute-privacy family as wrappers around one FedAvg loop
(Flower's habit: a defense wraps the strategy; the loop stays the same).

A builder turns a validated defense block into a :class:`FederatedDefense`: the λ the encoder
trains at, the upload transform (DP noise, pruning; None for none / TAPPFL), and its budget
as metrics (from the accountant the part declares in :mod:`core.foundation.parts`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.config.schema import FedAvgSpec
from core.fl.fedavg import UploadTransform, num_sampled
from core.foundation.parts import DEFENSES
from core.foundation.registry import load_object

DP_THREAT_MODEL = ("noise added on each device against the honest-but-curious server: "
                   "replace-one-update sensitivity 2·clip, no subsampling amplification "
                   "(the server knows who was sampled), worst case all rounds")


@dataclass
class FederatedDefense:
    """What a defense changes in the FedAvg loop, and what it reports."""

    name: str
    tradeoff_lambda: float
    upload_transform: UploadTransform | None
    metrics: dict[str, float]
    info: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def _at_lambda_zero(name: str) -> list[str]:
    return [f"defense {name!r} trains the encoder at λ = 0 (utility term only)"]


def build_none(block, fl: FedAvgSpec) -> FederatedDefense:
    return FederatedDefense("none", 0.0, None, {}, {}, _at_lambda_zero("none"))


def build_tappfl(block, fl: FedAvgSpec) -> FederatedDefense:
    lam = float(block.tradeoff_lambda)
    return FederatedDefense("tappfl", lam, None, {"tradeoff_lambda": lam}, {})


def build_dp(block, fl: FedAvgSpec) -> FederatedDefense:
    """DP-Gaussian / DP-Laplace on the uploads; total ε over rounds from the part's accountant.

    The server samples the devices, so it knows who took part: no amplification by
    subsampling against it (q = 1); a device's worst case is taking part in every round."""
    from core.bounds.accountants import total_epsilon
    from core.defenses.dp import DPUpload

    mech = block.mechanism  # the block's own (DP-Gaussian or DP-Laplace)
    t = DPUpload(mech, epsilon=block.epsilon, delta=block.delta, clip_norm=block.clip_norm)
    kw: dict[str, Any] = {"noise_multiplier": t.noise_multiplier} if mech == "gaussian" else {}
    tot = total_epsilon(mechanism=mech, eps_round=block.epsilon, delta=block.delta,
                        rounds=fl.rounds, sample_rate=1.0, **kw)
    m = {"dp_sigma": t.sigma} if mech == "gaussian" else {"dp_laplace_b": t.b}
    m.update(dp_epsilon_round=block.epsilon, dp_epsilon_total=float(tot["epsilon_total"]),
             epsilon_accountant=float(tot["epsilon_total"]),
             dp_delta_total=float(tot["delta_total"]), dp_noise_multiplier=t.noise_multiplier,
             dp_fraction_sampled=num_sampled(fl.num_devices, fl.fraction_fit) / fl.num_devices)
    info = {"accountant": tot["accountant"], "dp": t.describe(), "dp_threat_model": DP_THREAT_MODEL}
    return FederatedDefense(block.kind, 0.0, t, m, info, _at_lambda_zero(block.kind))


def build_pruning(block, fl: FedAvgSpec) -> FederatedDefense:
    from core.defenses.compression import PruneUpload

    return FederatedDefense("pruning", 0.0, PruneUpload(block.rate, target=block.target),
                            {"pruning_rate": float(block.rate)}, {}, _at_lambda_zero("pruning"))


def build_defense(block, fl: FedAvgSpec) -> FederatedDefense:
    """The registered builder of ``block.kind`` applied to the block."""
    return load_object(DEFENSES.get(block.kind).builder_for("attribute_privacy"))(block, fl)
