"""Train the example network on scikit-learn's digits with plain PyTorch (no privlab import)
and save what an audit needs: the weights (safetensors) and the member row indices.

    python examples/your_model/train_plain.py --out /tmp/your_model

The recipe (epochs, optimiser, learning rate, batch size) is what `privlab audit` is told, so
that its shadow models are trained the same way. The rows are scikit-learn's own order, which
is the order of privlab's ``digits`` data set (pixels 0..16 scaled to [0, 1]).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file
from sklearn.datasets import load_digits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from small_cnn import SmallCNN


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="your_model", help="folder for the weights and members")
    ap.add_argument("--members", type=int, default=400, help="training rows drawn at random")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args(argv)

    digits = load_digits()
    # images (N, 1, 8, 8), pixels in [0, 1]
    X = torch.tensor(digits.data / 16.0, dtype=torch.float32).reshape(-1, 1, 8, 8)
    y = torch.tensor(digits.target, dtype=torch.int64)
    rng = np.random.default_rng(a.seed)
    members = np.sort(rng.choice(len(X), size=a.members, replace=False))

    torch.manual_seed(a.seed)
    model = SmallCNN(n_classes=10)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    Xm, ym = X[members], y[members]
    for _ in range(a.epochs):
        for batch in torch.randperm(len(Xm)).split(a.batch_size):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(Xm[batch]), ym[batch]).backward()
            opt.step()

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    save_file(model.state_dict(), str(out / "small_cnn.safetensors"))
    np.savetxt(out / "members.txt", members, fmt="%d")
    with torch.no_grad():
        rest = np.setdiff1d(np.arange(len(X)), members)
        acc = (model(X[rest]).argmax(1) == y[rest]).float().mean().item()
    print(f"trained on {len(members)} rows; accuracy on the other {len(rest)}: {acc:.3f}")
    print(f"wrote {out / 'small_cnn.safetensors'} and {out / 'members.txt'}")


if __name__ == "__main__":
    main()
