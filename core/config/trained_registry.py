"""Trained models registered by name: a model trained elsewhere (its weights, the rows it
trained on, its data set, architecture and recipe) that the Membership page may audit as its
target. The model registry's twin (:mod:`core.models.user`): ``<registry>/<name>.json``, where
the registry is ``$PRIVLAB_TRAINED_REGISTRY``, else platformdirs' user config dir
``.../privlab/trained``.

A registration holds the arguments of :func:`core.config.audit.audit_config` (the ``target``
block with the files' sha256, the members' count, the data set, the architecture, the recipe)
and who registered it (:data:`BY_CLI`: ``privlab model add-weights``, which runs every check
of the audit's target stage before :func:`add` stores anything). The files stay where they
are, never copied: :func:`status` re-hashes them, and a file whose contents differ from the
registration's hash is refused in one line (the run itself refuses it too, its config holding
the registration's hashes).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.models.user import NAME_RE, _write_atomic

ENV_REGISTRY = "PRIVLAB_TRAINED_REGISTRY"
FORMAT = 1
#: ``by`` of a registration made on the command line by the operator
BY_CLI = "privlab model add-weights"
_KEYS = {"name", "format", "data", "model", "target", "members", "recipe"}


class TrainedError(ValueError):
    """A trained-model registration refused or unusable: one line naming it and the check."""


def registry_dir() -> Path:
    """``$PRIVLAB_TRAINED_REGISTRY``, else the user config dir ``.../privlab/trained``."""
    from core.foundation.cache_root import registry_dir as user_registry

    return user_registry(ENV_REGISTRY, "trained")


def _path(name: str) -> Path:
    return registry_dir() / f"{name}.json"


def _read(path: Path) -> dict[str, Any]:
    try:
        entry = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TrainedError(f"registration {path}: unreadable ({type(exc).__name__}); remove it "
                           f"with `privlab model remove-weights {path.stem}`") from None
    if not isinstance(entry, dict) or entry.get("name") != path.stem or not _KEYS <= set(entry) \
            or entry.get("format") != FORMAT or not isinstance(entry.get("target"), dict):
        raise TrainedError(f"registration {path}: not a privlab trained-model registration; "
                           f"remove it with `privlab model remove-weights {path.stem}`")
    return entry


def entries(*, with_broken: bool = False) -> dict[str, dict[str, Any]]:
    """Registered trained models by name, sorted; broken files skipped, or with
    ``with_broken`` listed as ``{"name", "error"}``."""
    d = registry_dir()
    out: dict[str, dict[str, Any]] = {}
    if not d.is_dir():
        return out
    for path in sorted(d.glob("*.json")):
        if not NAME_RE.fullmatch(path.stem):
            continue
        try:
            out[path.stem] = _read(path)
        except TrainedError as exc:
            if with_broken:
                out[path.stem] = {"name": path.stem, "error": str(exc)}
    return out


def get(name: str) -> dict[str, Any] | None:
    """The registration of ``name``; None when there is none."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name) or not _path(name).is_file():
        return None
    return _read(_path(name))


def check_name(name: str, *, replace: bool = False) -> None:
    """A new registration's name: 1-40 characters a-z, 0-9, _ and -; not taken unless
    ``replace``."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise TrainedError(f"name: got {name!r}; allowed: 1-40 characters a-z, 0-9, _ and -, "
                           "starting with a letter")
    if not replace and _path(name).exists():
        raise TrainedError(f"name: {name!r} is already registered; remove it first (privlab "
                           f"model remove-weights {name}) or register with --replace")


def add(name: str, spec: dict[str, Any], *, replace: bool = False,
        by: str = "python") -> dict[str, Any]:
    """Store ``spec`` (``data``, ``model``, ``target`` with its hashes, ``members``,
    ``recipe``: :func:`core.config.audit.audit_config`'s arguments) as ``name``. The caller
    has run the target stage's checks (``privlab model add-weights`` does)."""
    check_name(name, replace=replace)
    target = spec["target"]
    for f in ("weights", "members", "canaries"):
        if target.get(f) is not None and not Path(target[f]).is_absolute():
            raise TrainedError(f"target.{f}: got {target[f]!r}; a registration names files "
                               "by absolute path")
    entry = {"name": name, "format": FORMAT, "data": str(spec["data"]), "model": spec["model"],
             "target": dict(target), "members": int(spec["members"]),
             "recipe": dict(spec.get("recipe") or {}),
             "registered": datetime.now(UTC).isoformat(timespec="seconds"), "by": str(by)}
    registry_dir().mkdir(parents=True, exist_ok=True)
    _write_atomic(_path(name), json.dumps(entry, indent=2).encode())
    return entry


def remove(name: str) -> Path:
    """Forget a registration (the weights and members files are left untouched)."""
    path = _path(name) if isinstance(name, str) and NAME_RE.fullmatch(name) else None
    if path is None or not path.is_file():
        known = ", ".join(entries(with_broken=True)) or "none"
        raise TrainedError(f"name: {name!r} is not a registered trained model; registered: "
                           f"{known}")
    path.unlink()
    return path


#: (path, inode, size, mtime) → sha256: a page re-checks its files on every rerun
_HASHED: dict[tuple[str, int, int, int], str] = {}


def _sha256(path: str, what: str) -> str:
    from core.config.trained import sha256_file

    try:
        st = os.stat(path)
    except OSError as exc:
        raise ValueError(f"{what}: {path}: cannot read ({exc.strerror or exc})") from None
    key = (path, st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _HASHED:
        _HASHED[key] = sha256_file(path, what)
    return _HASHED[key]


def problem(entry: dict[str, Any]) -> str | None:
    """None while every file of the registration hashes as registered; else one line naming
    the registration, the file and the check."""
    if "error" in entry:
        return entry["error"]
    t = entry["target"]
    for f in ("weights", "members", "canaries"):
        if t.get(f) is None:
            continue
        try:
            digest = _sha256(t[f], f)
        except ValueError as exc:
            return f"trained model {entry['name']!r}: {exc}"
        if digest != t.get(f"{f}_sha256"):
            return (f"trained model {entry['name']!r}: {f} {t[f]}: hash mismatch: its contents "
                    f"changed since it was registered (sha256 {digest[:12]}…, registered "
                    f"{str(t.get(f'{f}_sha256'))[:12]}…); register it again with privlab model "
                    "add-weights … --replace")
    return None


def for_data(data: str, *, operator_only: bool = False) -> dict[str, dict[str, Any]]:
    """The registrations for data set ``data`` (``operator_only``: those registered on the
    command line, :data:`BY_CLI`)."""
    return {n: e for n, e in entries().items()
            if e["data"] == data and (not operator_only or e.get("by") == BY_CLI)}


def audit_config(entry: dict[str, Any], *, attackers: list[str], shadows: int,
                 seed: int = 0) -> dict[str, Any]:
    """The config ``privlab audit`` builds for the registered model
    (:func:`core.config.audit.audit_config`)."""
    from core.config.audit import audit_config as config

    return config(data=entry["data"], target=entry["target"], members=entry["members"],
                  model=entry["model"], recipe=entry["recipe"], attackers=attackers,
                  shadows=shadows, seed=seed)
