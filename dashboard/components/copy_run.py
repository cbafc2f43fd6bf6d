""""Copy this run as YAML / as a CLI command": the exact config of a run in a form that the
command line (``privlab run``) and notebooks (``core.config.schema.parse_config``) take back.

The YAML is ``yaml.safe_dump`` of the validated config (every default filled in), so
``parse_config(yaml.safe_load(text))`` gives the same config. The CLI forms are
``privlab run <file>.yaml`` for that file, and a one-liner: the closest config in
``examples/`` plus the ``--set`` overrides that turn it into this one (checked to round-trip
before it is shown).
"""

from __future__ import annotations

import hashlib
import json
import shlex
from functools import lru_cache
from pathlib import Path
from typing import Any

import streamlit as st
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
_MISSING = object()


def config_mapping(config: Any) -> tuple[dict[str, Any], list[str], bool]:
    """``(mapping, notes, valid)``: the validated config as JSON-able data (an older shape is
    migrated first, ``notes`` says what changed); when it does not validate any more, the
    migrated mapping as it is and ``valid=False``."""
    from pydantic import BaseModel

    from core.config.migrations import migrate
    from core.config.schema import ConfigError, parse_config

    if isinstance(config, BaseModel):
        return config.model_dump(mode="json"), [], True
    notes: list[str] = []
    try:
        return parse_config(dict(config), notes).model_dump(mode="json"), notes, True
    except ConfigError:
        migrated, notes = migrate(dict(config))
        return json.loads(json.dumps(migrated)), notes, False


def config_yaml(config: Any) -> str:
    """The config as YAML (``yaml.safe_dump``; ``kind`` first, then the model's order)."""
    return _yaml_text(config_mapping(config)[0])


def _yaml_text(mapping: dict[str, Any]) -> str:
    """An already validated (or migrated) mapping as YAML, ``kind`` first."""
    mapping = {"kind": mapping["kind"], **mapping} if "kind" in mapping else mapping
    return yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True, width=100)


def file_name(mapping: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(mapping, sort_keys=True).encode()).hexdigest()[:8]
    return f"privlab_{mapping.get('kind', 'run')}_{digest}.yaml"


def _scalar(value: Any) -> str:
    """A value as the YAML ``--set`` parses it back (flow style for lists and blocks)."""
    text = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=10**6,
                          sort_keys=False)
    lines = [ln for ln in text.splitlines() if ln.strip() != "..."]
    return " ".join(lines).strip()


def overrides(base: dict[str, Any], target: dict[str, Any], prefix: str = "") -> list[str]:
    """``key=value`` strings that turn ``base`` into ``target`` (nested dotted keys; a tagged
    block of another kind, e.g. a different ``defense``, is replaced whole)."""
    out: list[str] = []
    for k, v in target.items():
        path = f"{prefix}{k}"
        b = base.get(k, _MISSING)
        if isinstance(v, dict) and isinstance(b, dict) and v.get("kind") == b.get("kind"):
            out.extend(overrides(b, v, path + "."))
        elif v != b:
            out.append(f"{path}={_scalar(v)}")
    return out


@lru_cache(maxsize=32)
def _example(path: str, mtime: float) -> dict[str, Any] | None:
    from core.config.schema import ConfigError, parse_config

    try:
        return parse_config(yaml.safe_load(Path(path).read_text())).model_dump(mode="json")
    except (ConfigError, OSError, yaml.YAMLError, AttributeError, TypeError):
        return None


def examples(kind: str) -> list[tuple[Path, dict[str, Any]]]:
    """The example configs of ``kind`` (validated, older shapes migrated)."""
    out = []
    for p in sorted(EXAMPLES.glob("*.yaml")):
        cfg = _example(str(p), p.stat().st_mtime)
        if cfg is not None and cfg.get("kind") == kind:
            out.append((p, cfg))
    return out


def cli_one_liner(config: Any) -> str | None:
    """``privlab run examples/<closest>.yaml --set ...`` for this config, or None when no
    example of its kind exists (or the overrides would not give the same config back).
    A config model is compared as it is (it is validated already)."""
    from pydantic import BaseModel

    from core.config.schema import ConfigError, load_config, parse_config

    mapping, _, valid = config_mapping(config)
    if not valid:
        return None
    cands = [(p, overrides(base, mapping)) for p, base in examples(mapping["kind"])]
    if not cands:
        return None
    path, sets = min(cands, key=lambda c: (len(c[1]), c[0].name))
    try:
        target = config if isinstance(config, BaseModel) else parse_config(mapping)
        if load_config(path, sets) != target:
            return None
    except ConfigError:
        return None
    rel = path.relative_to(ROOT).as_posix()
    return " \\\n  ".join([f"privlab run {rel}", *(f"--set {shlex.quote(s)}" for s in sets)])


_TEXTS: dict[str, tuple] = {}
_TEXTS_MAX = 256


def _texts(config: Any) -> tuple[dict[str, Any], list[str], bool, str, str, str | None]:
    """``(mapping, notes, valid, file name, YAML, CLI one-liner)`` of ``config``, computed once
    per distinct config (and state of ``examples/``): every rerun of a page shows them."""
    from pydantic import BaseModel

    try:
        body = (config.model_dump_json() if isinstance(config, BaseModel)
                else json.dumps(config, sort_keys=True))
        token = f"{type(config).__name__}|{EXAMPLES.stat().st_mtime_ns}|{body}"
    except (TypeError, ValueError, OSError):
        token = None
    if token is not None and token in _TEXTS:
        return _TEXTS[token]
    mapping, notes, valid = config_mapping(config)
    out = (mapping, notes, valid, file_name(mapping), _yaml_text(mapping),
           cli_one_liner(config if isinstance(config, BaseModel) else mapping))
    if token is not None:
        if len(_TEXTS) >= _TEXTS_MAX:
            _TEXTS.clear()
        _TEXTS[token] = out
    return out


def copy_run(config: Any, *, title: str = "Copy this run as YAML / as a CLI command",
             expanded: bool = False) -> None:
    """An expander with the config as YAML and the two command lines, in code blocks (each
    has a copy button)."""
    _, notes, valid, name, text, one = _texts(config)
    with st.expander(title, expanded=expanded, icon=":material/content_copy:"):
        st.caption(f"The config as YAML (every default filled in). Save it as `{name}`; "
                   "`core.config.schema.parse_config(yaml.safe_load(text))` reads it back in a notebook.")
        st.code(text, language="yaml")
        st.caption("Run it from the command line (same results as here when "
                   "`PRIVLAB_CACHE_DIR` points at the same store):")
        st.code(f"privlab run {name}", language="bash")
        if one:
            st.caption("Or in one command from the repository root: the closest example config "
                       "plus `--set` overrides.")
            st.code(one, language="bash")
        if notes:
            st.caption("Stored in an older config shape, shown migrated: " + "; ".join(notes) + ".")
        if not valid:
            st.warning("This config does not validate with the running engine any more; the "
                       "YAML is shown as stored (migrated) for reference.")
