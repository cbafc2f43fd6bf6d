"""κ-channel devices on a real Flower federation (core.defenses.channel_flower through the
generic adapter core.fl.flower): 2 rounds × 4 devices give the simulator's global model
(core.fl.fedavg.run_fedavg, vectorised and sequential) from the same seed, noise included.

Flower and Ray come with the optional ``scale`` extra (skipped without it); one Ray serves the
session (tests/conftest.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.fl.fedavg import run_fedavg

N_DEV, ROUNDS, SEED = 4, 2, 3
FL = {"rounds": ROUNDS, "fraction_fit": 0.75, "local_epochs": 2, "batch_size": 16, "lr": 0.2,
      "seed": SEED}
ARGS = {"data": "digits", "seed": SEED, "model": "mlp", "channel": "white", "kappa": 8.0,
        "max_samples": 300}


def setup(**changes):
    from core.config.schema import DataSpec
    from core.data import load_dataset
    from core.defenses.channel_flower import channel_objective, channel_state

    args = {**ARGS, **changes}
    obj = channel_objective(**args)
    ds = load_dataset(DataSpec(name=args["data"], max_samples=args["max_samples"]), args["seed"])
    tr = ds.split("train")
    parts = np.array_split(np.random.default_rng(0).permutation(tr), N_DEV)
    parts = [parts[0][:20], *parts[1:]]  # unequal sizes: padding steps in the vectorised path
    data = {"x": torch.tensor(np.asarray(ds.X), dtype=torch.float32),
            "y": torch.tensor(np.asarray(ds.y), dtype=torch.int64)}
    return obj, channel_state(obj, parts, SEED), data, parts


def params(state) -> dict[str, np.ndarray]:
    return {n: p.detach().numpy().copy() for n, p in state.shared.named_parameters()}


def test_keyed_device_noise_vectorised_equals_sequential_and_is_noise():
    obj_v, st_v, data, _ = setup()
    obj_s, st_s, _, _ = setup()
    run_fedavg(obj_v, st_v, data, vectorised=True, **FL)
    run_fedavg(obj_s, st_s, data, vectorised=False, **FL)
    for n, a in params(st_v).items():
        np.testing.assert_allclose(a, params(st_s)[n], rtol=0, atol=1e-5, err_msg=n)
    # each device's stream advanced by its own valid steps: ceil(n_k / 16) · 2 epochs per round
    steps_v = st_v.private["noise"]["step"][:, 0].numpy()
    np.testing.assert_array_equal(steps_v, st_s.private["noise"]["step"][:, 0].numpy())
    assert steps_v.max() > 0 and list(st_v.rounds_trained) == list(st_s.rounds_trained)
    assert st_v.curves["train_ce"] == pytest.approx(st_s.curves["train_ce"], abs=1e-5)
    # the noise is real: a large κ (κ/d ≈ 40 nats per dimension: almost no noise) trains
    # another model
    obj_c, st_c, _, _ = setup(kappa=2000.0)
    run_fedavg(obj_c, st_c, data, vectorised=True, **FL)
    gap = max(np.abs(a - params(st_c)[n]).max() for n, a in params(st_v).items())
    assert gap > 1e-3  # 100x the tolerance the paths agree within
    x = data["x"][:50]
    xi = obj_v._draw(x, 0, 0) - x
    assert float(xi.std()) > 0.5 * float(x.std())  # κ/d ≈ 0.15: noise of the data's scale
    torch.testing.assert_close(obj_v._draw(x, 0, 0), obj_s._draw(x, 0, 0))  # keyed, not streamed
    assert not torch.allclose(obj_v._draw(x, 0, 1), obj_v._draw(x, 0, 0))


@pytest.mark.slow
def test_flower_channel_devices_equal_the_simulator(ray_session):
    pytest.importorskip("flwr")
    from core.defenses.channel_flower import channel_recipe, run_flower_channel

    obj, ref, data, parts = setup()
    run_fedavg(obj, ref, data, vectorised=True, **FL)
    run, flower_data = run_flower_channel(channel_recipe(**ARGS), parts, **FL, num_cpus=2)
    st = run.state
    torch.testing.assert_close(flower_data["x"], data["x"])
    assert st.round == ROUNDS and st.curves["device_updates"] == [3.0, 3.0]
    assert run.backend == "ray" and run.wall_seconds > 0
    for n, a in params(st).items():
        np.testing.assert_allclose(a, params(ref)[n], rtol=0, atol=1e-5, err_msg=n)
    # every device's noise stream (a private network) came back where the simulator left it
    np.testing.assert_array_equal(st.private["noise"]["step"].numpy(),
                                  ref.private["noise"]["step"].numpy())
    assert st.curves["train_ce"] == pytest.approx(ref.curves["train_ce"], abs=1e-5)
