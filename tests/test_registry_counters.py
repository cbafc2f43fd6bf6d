"""The registry benchmark's source counters see what they count (each on a small tree written
here): training loops, loose core modules, function lengths and import cycles between
folders."""

from __future__ import annotations

from pathlib import Path

from benchmarks import registry_bench as R

TRAINING = '''
import torch


def fit(model, batches):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for x, y in batches:
            loss = model(x).sum()
            loss.backward()
            opt.step()


def invert(model, target):
    x = torch.zeros(3, requires_grad=True)
    opt = torch.optim.Adam([x], lr=0.1)
    for _ in range(10):
        loss = (model(x) - target).pow(2).sum()
        loss.backward()
        opt.step()


def by_hand(w, batches, lr):
    for x in batches:
        g = torch.autograd.grad(w.sum(), w)[0]
        w = w - lr * g
    return w
'''


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_training_loops_are_found_and_input_optimisation_left_out(tmp_path):
    root = _write(tmp_path, {"core/train.py": TRAINING})
    found = R.training_loop_list(root / "core")
    assert [w.split(":", 1)[1] for w in found["loops"]] == ["fit:8", "by_hand:24"]
    assert [w.split(":", 1)[1] for w in found["excluded"]] == ["invert:17"]


def test_loose_modules_function_lengths_and_folder_cycles(tmp_path):
    root = _write(tmp_path, {
        "core/__init__.py": "", "core/a.py": "def f():\n    return 1\n",
        "core/sub/__init__.py": "", "core/sub/b.py": "from core import a\n",
        "core/c.py": "from core.sub import b\n"})
    assert R.loose_core_module_list(root / "core") == ["a.py", "c.py"]
    assert R.function_lines((root / "core",))[f"{(root / 'core/a.py').as_posix()}:f"] == 2
    assert R.folder_import_cycle_list(root) == [["core", "core.sub"]]
    (root / "core/c.py").write_text("", encoding="utf-8")
    assert R.folder_import_cycle_list(root) == []
