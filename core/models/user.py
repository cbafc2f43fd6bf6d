"""Your own model: a factory ``FACTORY(in_shape, n_classes, width) -> torch.nn.Module`` in one
Python file, registered by name (DESIGN: Architecture; the data registry's twin,
:mod:`core.data.user`).

A registration is ``<registry>/<name>.json`` (``$PRIVLAB_MODEL_REGISTRY``, else platformdirs'
user config dir ``.../privlab/models``) beside ``<name>.py``, a copy of the file's bytes as
they were checked. The JSON holds the file's path, the factory's name, the sha256 of the bytes,
the data sets it was checked for (their input shapes and classes), the measured parameters and
forward FLOPs, what Opacus said and a **fingerprint** (sha256 of the bytes, the factory and the
options), which the config layer copies into ``model.fingerprint``: every run key changes with
the file.

**Checks before anything is stored** (:func:`add`): the file is read once (a regular file of
at most :data:`MAX_SOURCE_BYTES`), its bytes written to a private folder and imported and built
there in a child process (:mod:`core.models.user_check`) under a wall-clock limit and an
address-space limit (``RLIMIT_AS``), never in this process. Each failure is one line naming the
file and the check (``import``, ``factory``, ``build``, ``output shape``, ``parameters``,
``determinism``, ``time``, ``memory``), and the registry is left as it was.

**At run time** the registered copy (never the file at its original path) is imported into
the running process: its sha256 is compared with the registration's first (a changed copy is
refused), and a config that names the model is refused at validation while the original file
differs from the copy (edited since), with the command that registers it again. A registered
model is an :class:`UserArchitecturePart` in :data:`core.foundation.parts.ARCHITECTURES`
(:func:`parts`, read on every registry access), role ``classifier`` only: it fits the data sets
it was checked for, and nothing else.

Torch is imported inside functions only: the architecture registry reads this module.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.foundation.parts import ArchitecturePart, input_kind

ENV_REGISTRY = "PRIVLAB_MODEL_REGISTRY"
FORMAT = 1
NAME_RE = re.compile(r"[a-z][a-z0-9_-]{0,39}")
FACTORY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
MAX_SOURCE_BYTES = 1024**2
#: default caps of a registration's checks (each a ``privlab model add`` option)
PARAM_CAP = 50_000_000
TIMEOUT_S = 120.0
MEMORY_MIB = 4096
#: seconds the check process may take to import torch and Opacus, before the user's code runs
STARTUP_S = 90.0
#: the bounds a user may set those caps to
PARAM_CAP_RANGE = (1, 2_000_000_000)
TIMEOUT_RANGE = (5.0, 3600.0)
MEMORY_RANGE = (256, 65_536)
WIDTH_RANGE = (0.0625, 8.0)
CHECKS = ("file", "import", "factory", "build", "output shape", "parameters", "determinism",
          "time", "memory", "data")
#: ``by`` of a registration made on the command line by the operator
BY_CLI = "privlab model add"
_KEYS = {"name", "format", "path", "factory", "sha256", "fingerprint", "data", "widths"}


class ModelError(ValueError):
    """A model registration refused or unusable; the message is one line naming the file (or
    the registration) and the check."""


# ---------------------------------------------------------------------------------------------
# the registry directory


def registry_dir() -> Path:
    """``$PRIVLAB_MODEL_REGISTRY``, else the user config dir ``.../privlab/models``."""
    from core.foundation.cache_root import registry_dir as user_registry

    return user_registry(ENV_REGISTRY, "models")


def _entry_path(name: str) -> Path:
    return registry_dir() / f"{name}.json"


def _copy_path(name: str) -> Path:
    return registry_dir() / f"{name}.py"


def _read_entry(path: Path) -> dict[str, Any]:
    try:
        entry = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(f"registration {path}: unreadable ({type(exc).__name__}); remove it with "
                         f"`privlab model remove {path.stem}`") from None
    if not isinstance(entry, dict) or entry.get("name") != path.stem or not _KEYS <= set(entry) \
            or entry.get("format") != FORMAT:
        raise ModelError(f"registration {path}: not a privlab model registration; remove it with "
                         f"`privlab model remove {path.stem}`")
    return entry


def _builtin_names() -> set[str]:
    from core.foundation.parts import ARCHITECTURES

    return set(ARCHITECTURES.builtin_names())


def entries(*, with_broken: bool = False) -> dict[str, dict[str, Any]]:
    """Registered models by name, sorted. Files that are not valid registrations are skipped,
    or with ``with_broken`` listed as ``{"name", "error"}``."""
    d = registry_dir()
    out: dict[str, dict[str, Any]] = {}
    if not d.is_dir():
        return out
    builtin = _builtin_names()
    for path in sorted(d.glob("*.json")):
        if path.stem in builtin or not NAME_RE.fullmatch(path.stem):
            continue
        try:
            out[path.stem] = _read_entry(path)
        except ModelError as exc:
            if with_broken:
                out[path.stem] = {"name": path.stem, "error": str(exc)}
    return out


def get_entry(name: str) -> dict[str, Any] | None:
    """The registration of ``name``, None when there is none (ModelError if it is broken)."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        return None
    path = _entry_path(name)
    return _read_entry(path) if path.is_file() else None


def check_name(name: str, *, replace: bool = False) -> None:
    """A new registration's name: lowercase, not a built-in architecture, not taken (unless
    ``replace``)."""
    builtin = _builtin_names()
    if name in builtin:
        raise ModelError(f"name: {name!r} is a built-in architecture; choose another name "
                         f"(built-in: {', '.join(sorted(builtin))})")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise ModelError(f"name: got {name!r}; allowed: 1-40 characters a-z, 0-9, _ and -, "
                         "starting with a letter")
    if not replace and _entry_path(name).exists():
        raise ModelError(f"name: {name!r} is already registered; remove it first "
                         f"(privlab model remove {name}) or register with --replace")


def remove(name: str) -> Path:
    """Forget a registration and its stored copy (the original file is left untouched)."""
    if isinstance(name, str) and name in _builtin_names():
        raise ModelError(f"name: {name!r} is a built-in architecture; only registered models "
                         "can be removed")
    path = _entry_path(name) if isinstance(name, str) and NAME_RE.fullmatch(name) else None
    if path is None or not path.is_file():
        known = ", ".join(entries(with_broken=True)) or "none"
        raise ModelError(f"name: {name!r} is not registered; registered: {known}")
    path.unlink()
    _copy_path(name).unlink(missing_ok=True)
    return path


def _write_atomic(dest: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


# ---------------------------------------------------------------------------------------------
# the file


def parse_source(spec: str) -> tuple[Path, str]:
    """``FILE.py:FACTORY`` → (path, factory name); a one-line ModelError otherwise."""
    path, sep, factory = str(spec).rpartition(":")
    if not sep or not path.endswith(".py") or not FACTORY_RE.fullmatch(factory):
        raise ModelError(f"--from: got {str(spec)[:120]!r}; expected FILE.py:FACTORY (a Python "
                         "file and the name of a function in it)")
    return Path(path).expanduser().resolve(), factory


def read_source(path: Path) -> bytes:
    """The bytes of the regular file ``path`` (at most :data:`MAX_SOURCE_BYTES`; a FIFO or a
    device is refused without blocking)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ModelError(f"{path}: file: cannot read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ModelError(f"{path}: file: not a regular file; expected a Python file")
        if st.st_size > MAX_SOURCE_BYTES:
            raise ModelError(f"{path}: file: {st.st_size:,} bytes; the cap is "
                             f"{MAX_SOURCE_BYTES:,}")
        os.set_blocking(fd, True)
        data = os.read(fd, MAX_SOURCE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_SOURCE_BYTES:
        raise ModelError(f"{path}: file: larger than the cap of {MAX_SOURCE_BYTES:,} bytes")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise ModelError(f"{path}: file: not UTF-8 text; expected a Python file") from None
    return data


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fingerprint(sha: str, factory: str, options: dict[str, Any]) -> str:
    """sha256 of the file's hash, the factory's name and the options that change the network."""
    payload = json.dumps({"format": FORMAT, "sha256": sha, "factory": factory,
                          "options": options}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


def _in_range(name: str, value: float, lo: float, hi: float) -> None:
    if not lo <= value <= hi:
        raise ModelError(f"{name}: got {value:g}; allowed: [{lo:g}, {hi:g}]")


# ---------------------------------------------------------------------------------------------
# registration


def add(name: str, source: str, data: dict[str, tuple[tuple[int, ...], int]], *,
        param_cap: int = PARAM_CAP, timeout_s: float = TIMEOUT_S, memory_mib: int = MEMORY_MIB,
        widths: tuple[float, float] = (1.0, 1.0), groupnorm: bool = False,
        replace: bool = False, by: str = "python") -> dict[str, Any]:
    """Check ``source`` (``FILE.py:FACTORY``) in a child process for every data set of ``data``
    (name → (input shape, classes)) and register it as ``name``; returns the registration.
    Refused (ModelError, one line naming the file and the check, nothing stored) where a check
    fails. ``by`` records who registered it (:data:`BY_CLI` for ``privlab model add``: only
    those are offered on a server reachable beyond loopback)."""
    check_name(name, replace=replace)
    path, factory = parse_source(source)
    if not data:
        raise ModelError("--data: got none; name at least one data set the model is for")
    _in_range("--param-cap", param_cap, *PARAM_CAP_RANGE)
    _in_range("--timeout", timeout_s, *TIMEOUT_RANGE)
    _in_range("--memory", memory_mib, *MEMORY_RANGE)
    lo, hi = (float(w) for w in widths)
    _in_range("--widths (low)", lo, WIDTH_RANGE[0], 1.0)
    _in_range("--widths (high)", hi, 1.0, WIDTH_RANGE[1])
    for shape, _ in data.values():
        input_kind(shape)  # a shape the registry can describe (a one-line ValueError)
    body = read_source(path)
    sha = sha256(body)
    job = {"factory": factory, "sha256": sha, "groupnorm": bool(groupnorm),
           "timeout_s": float(timeout_s),
           "data": {k: [list(s), int(c)] for k, (s, c) in data.items()},
           "widths": [lo, hi], "param_cap": int(param_cap), "memory_mib": int(memory_mib),
           "label": str(path)}
    report = run_checks(body, job, timeout_s, str(path))
    entry = {"name": name, "format": FORMAT, "path": str(path), "factory": factory,
             "sha256": sha, "groupnorm": bool(groupnorm), "widths": [lo, hi],
             "param_cap": int(param_cap),
             "fingerprint": fingerprint(sha, factory, {"groupnorm": bool(groupnorm)}),
             "data": {k: {"shape": list(s), "classes": int(c)} for k, (s, c) in data.items()},
             "params": report["params"], "flops": report["flops"], "opacus": report["opacus"],
             "registered": datetime.now(UTC).isoformat(timespec="seconds"),
             "by": str(by)}
    d = registry_dir()
    d.mkdir(parents=True, exist_ok=True)
    _write_atomic(_copy_path(name), body)
    _write_atomic(_entry_path(name), json.dumps(entry, indent=2).encode())
    return entry


def run_checks(body: bytes, job: dict[str, Any], timeout_s: float, label: str) -> dict[str, Any]:
    """Import and check ``body`` in a child process (:mod:`core.models.user_check`) under the
    job's time limit (``timeout_s`` for the user's code, enforced in the child; the child is
    killed at ``timeout_s`` + :data:`STARTUP_S`, torch's import included) and address-space
    cap; returns its report
    (params, flops, opacus) or raises the one-line ModelError of the first failed check."""
    root = Path(__file__).resolve().parents[2]
    with tempfile.TemporaryDirectory(prefix="privlab-model-check-") as tmp:
        src, job_path, out = Path(tmp, "model.py"), Path(tmp, "job.json"), Path(tmp, "out.json")
        src.write_bytes(body)
        job_path.write_text(json.dumps({**job, "path": str(src)}))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(root), *filter(None, [os.environ.get("PYTHONPATH")])]),
            "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
        # the child's output goes to a file (a chatty file cannot fill this process's memory)
        with open(Path(tmp, "stderr.txt"), "wb") as err:
            try:
                proc = subprocess.run(
                    [sys.executable, "-m", "core.models.user_check", str(job_path), str(out)],
                    cwd=tmp, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=err, timeout=timeout_s + STARTUP_S, check=False)
            except subprocess.TimeoutExpired:
                raise ModelError(f"{label}: time: the check process did not finish within "
                                 f"{timeout_s:g} s (the --timeout cap) + {STARTUP_S:g} s to "
                                 "start; it was killed") from None
        if out.is_file():
            report = json.loads(out.read_text())
            if report.get("error"):
                raise ModelError(f"{label}: {report['error']}")
            return report
        with open(Path(tmp, "stderr.txt"), "rb") as err:
            err.seek(max(0, os.fstat(err.fileno()).st_size - 4096))
            tail = err.read().decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        if proc.returncode < 0:
            why = f"killed by signal {-proc.returncode}"
        else:
            why = f"exit status {proc.returncode}"
        if "MemoryError" in tail[0] or proc.returncode in (-9,):
            raise ModelError(f"{label}: memory: the checks exceeded the "
                             f"{job['memory_mib']:,} MiB cap ({why})")
        raise ModelError(f"{label}: import: the check process ended without a report ({why}"
                         f"{': ' + tail[0][:160] if tail[0] else ''})")


# ---------------------------------------------------------------------------------------------
# loading the registered copy


_LOCK = threading.Lock()
_LOADED: dict[tuple[str, str], Any] = {}


def load_factory(path: str, sha: str, factory: str, label: str | None = None) -> Any:
    """The function ``factory`` of the file ``path`` whose bytes must hash to ``sha`` (a
    changed file is a one-line ModelError, checked at every call); each (path, hash) is
    imported once per process.
    ``label``: the file name tracebacks and syntax errors give (default ``path``)."""
    import importlib.util

    with _LOCK:
        # hashed at every build (a file of at most 1 MiB): a copy changed after the check is
        # refused even where an earlier build imported it
        body = read_source(Path(path))
        if sha256(body) != sha:
            raise ModelError(f"{path}: file: its contents changed since they were checked; "
                             "register the model again (privlab model add ... --replace)")
        mod = _LOADED.get((path, sha))
        if mod is None:
            modname = f"privlab_user_model_{sha[:16]}"
            spec = importlib.util.spec_from_loader(modname, loader=None, origin=path)
            mod = importlib.util.module_from_spec(spec)
            mod.__file__ = path
            sys.modules[modname] = mod  # dataclasses and pickling look a class's module up
            try:
                exec(compile(body, label or path, "exec"), mod.__dict__)  # noqa: S102 - the user's own model
            except BaseException:
                sys.modules.pop(modname, None)
                raise
            _LOADED[(path, sha)] = mod
    fn = getattr(mod, factory, None)
    if not callable(fn):
        raise ModelError(f"{path}: factory: no function {factory!r} in the file")
    return fn


@dataclass(frozen=True)
class UserFactory:
    """The builder of a registered model (``builder(shape, n_classes, *, width, role)``, the
    contract of :class:`ArchitecturePart`): calls ``FACTORY(in_shape, n_classes, width)`` of the
    file at ``path`` (in_shape (C, H, W) for images, (d,) for tabular rows) and puts it behind
    :class:`core.models.user_net.UserNet` (flat rows → its input shape, seeded initialisation,
    GroupNorm in place of BatchNorm where registered so)."""

    path: str
    sha256: str
    factory: str
    groupnorm: bool = False

    @property
    def object_path(self) -> str:
        return f"{self.path}:{self.factory} (sha256 {self.sha256[:12]})"

    def __call__(self, shape, n_classes, *, width, role="classifier"):
        from core.models.user_net import UserNet

        kind, chw = input_kind(shape)
        in_shape = (chw[2],) if kind == "tabular" else tuple(chw)
        fn = load_factory(self.path, self.sha256, self.factory)
        return UserNet(fn(in_shape, int(n_classes), float(width)), in_shape,
                       groupnorm=self.groupnorm)


@dataclass(frozen=True)
class UserArchitecturePart(ArchitecturePart):
    """A registered model as an architecture: it takes the input shapes of the data sets it
    was checked for (:attr:`fits`: (data, (C, H, W)) pairs) and no other."""

    fits: tuple[tuple[str, tuple[int, int, int]], ...] = ()
    fingerprint: str = ""
    #: (data, parameters, forward FLOPs per input) measured at width 1 at registration
    measured: tuple[tuple[str, int, int], ...] = ()
    #: (data, classes) each data set was checked with
    classes: tuple[tuple[str, int], ...] = ()
    opacus: str = ""
    #: who registered it (:data:`BY_CLI`: the operator on the command line)
    registered_by: str = ""
    entry_path: str = ""
    sources: tuple[str, ...] = field(default_factory=tuple)

    def needs(self) -> str:
        return " or ".join(f"{'×'.join(map(str, s))} (data {d})" for d, s in self.fits)

    def check_input(self, in_shape, data: str | None = None) -> tuple[int, int, int]:
        _, shape = input_kind(in_shape)
        if all(tuple(s) != shape for _, s in self.fits):
            what = f"data {data!r}" if data else "the data"
            raise ValueError(f"model.arch: got {self.name!r}; it was checked for "
                             f"{self.needs()}, {what} is {'×'.join(map(str, shape))}: register "
                             f"it again with --data naming it")
        return shape

    def check_data(self, data: str) -> None:
        names = [d for d, _ in self.fits]
        if data not in names:
            raise ValueError(f"model.arch: got {self.name!r}; it was checked for data "
                             f"{', '.join(names)}, not {data!r}: register it again with "
                             f"--data {data}")


def _part(entry: dict[str, Any]) -> UserArchitecturePart:
    fits = tuple((d, input_kind(v["shape"])[1]) for d, v in entry["data"].items())
    kinds = tuple(dict.fromkeys(input_kind(s)[0] for _, s in fits))
    channels = tuple(sorted({s[0] for _, s in fits if input_kind(s)[0] == "image"})) or None
    info = next(iter(entry["data"].values()))
    measured = tuple((d, int(entry["params"].get(d, 0)), int(entry["flops"].get(d, 0)))
                     for d in entry["data"])
    lo, hi = entry["widths"]
    return UserArchitecturePart(
        name=entry["name"], title=f"{entry['name']} (your model)",
        builder=UserFactory(str(_copy_path(entry["name"])), entry["sha256"], entry["factory"],
                            bool(entry.get("groupnorm"))),
        inputs=kinds, channels=channels, adapt=False, widths=(float(lo), float(hi)),
        cpu_width=1.0, reference=(tuple(info["shape"]), int(info["classes"])),
        source=f"{entry['path']}:{entry['factory']} (registered {entry.get('registered', '?')})",
        description=f"your factory {entry['factory']} of {Path(entry['path']).name}, checked "
                    f"for data {', '.join(entry['data'])}; Opacus: {entry['opacus']}",
        order=5000, fits=fits, fingerprint=entry["fingerprint"], measured=measured,
        classes=tuple((d, int(v["classes"])) for d, v in entry["data"].items()),
        opacus=str(entry["opacus"]), registered_by=str(entry.get("by", "")), entry_path=str(_entry_path(entry["name"])),
        sources=(entry["path"],))


_CACHE: dict[str, Any] = {"sig": None, "parts": {}}


def _signature() -> tuple[Any, ...] | None:
    d = registry_dir()
    try:
        with os.scandir(d) as it:
            return (str(d), tuple(sorted((e.name, e.stat().st_mtime_ns, e.stat().st_size)
                                         for e in it if e.name.endswith((".json", ".py")))))
    except OSError:
        return None


def parts() -> dict[str, UserArchitecturePart]:
    """Every intact registration as an architecture part (re-read when the registry folder
    changes). A registration whose stored copy is missing is left out."""
    sig = _signature()
    if sig is not None and sig == _CACHE["sig"]:
        return _CACHE["parts"]
    out = {}
    for name, entry in entries().items():
        if not _copy_path(name).is_file():
            continue
        try:
            out[name] = _part(entry)
        except (KeyError, TypeError, ValueError, StopIteration):
            continue  # a hand-edited registration: `privlab model list` shows it broken
    _CACHE.update(sig=sig, parts=out)
    return out


# ---------------------------------------------------------------------------------------------
# at validation


def status(entry: dict[str, Any]) -> str:
    """``ok``, ``edited`` (the original file differs from the checked copy), ``moved`` (the
    original file is gone; the copy still runs), ``tampered`` (the stored copy differs from
    its hash) or ``broken``."""
    if "error" in entry:
        return "broken"
    try:
        if sha256(read_source(_copy_path(entry["name"]))) != entry["sha256"]:
            return "tampered"
    except ModelError:
        return "tampered"
    if not Path(entry["path"]).exists():
        return "moved"
    try:
        original = read_source(Path(entry["path"]))
    except ModelError:  # now a folder, too large, not text: not the file that was checked
        return "edited"
    return "ok" if sha256(original) == entry["sha256"] else "edited"


def add_command(entry: dict[str, Any]) -> str:
    """The ``privlab model add`` command that registers ``entry`` again."""
    data = " ".join(f"--data {d}" for d in entry["data"])
    lo, hi = entry["widths"]
    extra = (" --groupnorm" if entry.get("groupnorm") else "") + (
        f" --widths {lo:g} {hi:g}" if (lo, hi) != (1.0, 1.0) else "")
    return (f"privlab model add {entry['name']} --from {entry['path']}:{entry['factory']} "
            f"{data}{extra} --replace")


def check_current(name: str, given: str | None) -> str:
    """The fingerprint of the registered model ``name`` if it may run: its stored copy intact,
    its original file not edited since, and ``given`` (a config's ``model.fingerprint``) None
    or equal to it; else one line naming the field."""
    entry = get_entry(name)
    if entry is None:
        raise ModelError(f"arch: {name!r} is not a registered model")
    state = status(entry)
    if state == "edited":
        raise ModelError(f"arch: {name!r}: its file {entry['path']} changed since it was "
                         f"checked; register it again: {add_command(entry)}")
    if state == "tampered":
        raise ModelError(f"arch: {name!r}: its stored copy {_copy_path(name)} no longer matches "
                         f"the registration; register it again: {add_command(entry)}")
    if given is not None and given != entry["fingerprint"]:
        raise ModelError(f"fingerprint: got {given[:12]!r}…; {name!r} is now registered with "
                         f"{entry['fingerprint'][:12]!r}… (registered again since): leave "
                         "model.fingerprint out to run the current registration")
    return entry["fingerprint"]
