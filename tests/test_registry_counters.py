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


HELPERS = '''
import torch


def _sgd_(params, grads, lr):
    with torch.no_grad():
        torch._foreach_add_(params, list(grads), alpha=-lr)


def move(params, grads, lr):
    with torch.no_grad():
        for p, g in zip(params, grads):
            p.sub_(g, alpha=lr)


def record(log, grads):
    log.append([g.norm() for g in grads])
'''

BY_HELPERS = '''
import torch

from core.helpers import _sgd_, move, record


def hand_sgd(params, batches, lr):
    for x in batches:
        grads = torch.autograd.grad(sum((p * x).sum() for p in params), params)
        _sgd_(params, grads, lr)


def by_helper(params, batches, lr):
    for x in batches:
        grads = torch.autograd.grad(sum((p * x).sum() for p in params), params)
        move(params, grads, lr)


def logs_only(params, batches, log):
    for x in batches:
        grads = torch.autograd.grad(sum((p * x).sum() for p in params), params)
        record(log, grads)


def timed(model, opt, x, n):
    def step():
        model(x).sum().backward()
        opt.step()

    for _ in range(n):
        step()


def epochs(sched, n, run_epoch):
    for _ in range(n):
        run_epoch()
        sched.step()
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


def test_update_helpers_count_and_a_nested_step_is_a_local_name(tmp_path):
    # an update helper is known by what it does (an in-place update by a learning rate), not by
    # its name; a nested ``step`` is called by its bare name, so a scheduler's ``.step()``
    # elsewhere is no training step
    root = _write(tmp_path, {"core/helpers.py": HELPERS, "core/train.py": BY_HELPERS})
    assert R._update_functions(root / "core") == {"_sgd_", "move"}
    found = R.training_loop_list(root / "core")
    assert [w.split(":", 1)[1] for w in found["loops"]] == [
        "hand_sgd:8", "by_helper:14", "timed:30"]
    assert found["excluded"] == []
