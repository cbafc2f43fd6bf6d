"""Reading config files safely (issue 21: bounded inputs everywhere).

A config file is read only if it is a regular file (a FIFO, a device or a folder is refused
without blocking: it is opened ``O_NONBLOCK`` and checked with ``fstat`` before any read) of
at most :data:`MAX_CONFIG_BYTES`; it must be UTF-8 (an error names the file and the line).
YAML is parsed by libyaml's safe loader (no Python objects; libyaml refuses nesting deeper
than 1000) with duplicate keys refused (PyYAML keeps the last one silently). Every parsed value
(YAML, JSON, a ``--set`` value, a mapping handed to :func:`core.config.schema.parse_config`) then
passes :func:`check_shape`: at most :data:`MAX_DEPTH` levels, at most :data:`MAX_NODES` values
once YAML aliases are expanded (a "billion laughs" file is a few hundred bytes that expands to
10⁹ values in the JSON round trip), no cycles, text keys only. Each refusal is one line.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import yaml

#: the largest config file read (bytes); real configs are a few kB, sweep grids tens of kB
MAX_CONFIG_BYTES = 1 << 20
#: nesting levels of a config mapping (the deepest real config nests 5)
MAX_DEPTH = 32
#: values in a config after YAML aliases are expanded (a 10,000-point sweep grid fits)
MAX_NODES = 200_000

_MERGE_TAG = "tag:yaml.org,2002:merge"


class ConfigFileError(ValueError):
    """A config file or value refused before validation (one line)."""


_FILE_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISSOCK, "a socket"))


def read_bytes(path: str | Path, *, max_bytes: int = MAX_CONFIG_BYTES) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``; ConfigFileError otherwise. Never
    blocks: a FIFO is opened non-blocking and refused by ``fstat`` before any read."""
    p = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(p, flags)
    except OSError as exc:
        raise ConfigFileError(f"config file: cannot read {str(p)!r} ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = next((name for test, name in _FILE_KINDS if test(st.st_mode)), "not a file")
            raise ConfigFileError(f"config file: {p} is {what}; give a regular YAML or JSON file")
        if st.st_size > max_bytes:
            raise ConfigFileError(f"config file: {p} is {st.st_size:,} bytes; the cap is "
                                  f"{max_bytes:,} bytes")
        os.set_blocking(fd, True)
        chunks, total = [], 0
        while True:  # read at most max_bytes + 1: a file that grew past the cap is refused
            chunk = os.read(fd, min(1 << 16, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise ConfigFileError(f"config file: {p} is larger than the cap of "
                                      f"{max_bytes:,} bytes")
        return b"".join(chunks)
    except OSError as exc:
        raise ConfigFileError(f"config file: cannot read {str(p)!r} ({exc.strerror})") from None
    finally:
        os.close(fd)


def decode_utf8(data: bytes, name: str) -> str:
    """UTF-8 text (a BOM is dropped); the error names the file, line and byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigFileError(f"config file: {name} is not UTF-8 text (line {line}, column "
                              f"{col}: byte 0x{data[exc.start]:02x}); save it as UTF-8") from None


class _Loader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):
    """libyaml's safe loader that refuses a key given twice in one mapping."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue  # `<<: *base` merges; explicit keys beside it override by design
                if isinstance(key_node, yaml.ScalarNode):
                    key: Any = (key_node.tag, key_node.value)
                else:
                    continue  # complex keys: SafeConstructor refuses unhashable ones itself
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key_node.value!r} (first on line "
                        f"{seen[key]})", key_node.start_mark)
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return f"{where}{problem}"


def parse_text(text: str, name: str, *, json_: bool = False) -> Any:
    """YAML (or JSON) text -> plain data, shape-checked. ConfigFileError on any problem."""
    kind = "JSON" if json_ else "YAML"
    try:
        if json_:
            obj = json.loads(text, object_pairs_hook=_no_duplicate_pairs)
        else:
            obj = yaml.load(text, Loader=_Loader)  # a SafeLoader subclass (no Python objects)
    except RecursionError:
        raise ConfigFileError(f"config file: {name} nests too deeply; at most {MAX_DEPTH} "
                              "levels") from None
    except yaml.YAMLError as exc:
        raise ConfigFileError(f"config file: {name} is not valid YAML: "
                              f"{_yaml_problem(exc)}") from None
    except json.JSONDecodeError as exc:
        raise ConfigFileError(f"config file: {name} is not valid JSON: line {exc.lineno}, "
                              f"column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:  # a duplicate JSON key (object_pairs_hook)
        raise ConfigFileError(f"config file: {name} is not valid {kind}: {exc}") from None
    check_shape(obj, f"config file: {name}")
    return obj


def _no_duplicate_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def parse_value(raw: str, name: str) -> Any:
    """One ``--set`` value (YAML), shape-checked like a file."""
    try:
        obj = yaml.load(raw, Loader=_Loader)  # a SafeLoader subclass (no Python objects)
    except RecursionError:
        raise ConfigFileError(f"{name}: nests too deeply; at most {MAX_DEPTH} levels") from None
    except yaml.YAMLError as exc:
        raise ConfigFileError(f"{name}: the value {raw[:40]!r} is not valid YAML "
                              f"({_yaml_problem(exc)})") from None
    check_shape(obj, name)
    return obj


def check_shape(obj: Any, where: str = "config", *, max_depth: int = MAX_DEPTH,
                max_nodes: int = MAX_NODES) -> None:
    """Refuse (ConfigFileError) a value nested deeper than ``max_depth``, with more than
    ``max_nodes`` values once shared sub-values (YAML aliases) are counted each time they
    appear, with a cycle, or with a mapping key that is not text. Iterative and memoised: the
    cost is linear in the *distinct* values, so the check itself is safe from what it guards."""
    sizes: dict[int, int] = {}
    heights: dict[int, int] = {}  # levels below a value (a shared one may sit deeper elsewhere)
    on_path: set[int] = set()
    # (value, depth, path, children pushed?)
    stack: list[tuple[Any, int, str, bool]] = [(obj, 0, "", False)]

    def too_deep(path: str) -> ConfigFileError:
        return ConfigFileError(f"{where}: nests deeper than {max_depth} levels at "
                               f"{path[:80] or 'the top'}; refused")

    while stack:
        value, depth, path, expanded = stack.pop()
        if not isinstance(value, dict | list | tuple):
            continue
        vid = id(value)
        if expanded:
            on_path.discard(vid)
            children = list(value.values() if isinstance(value, dict) else value)
            total = 1 + sum(sizes.get(id(c), 1) for c in children)
            sizes[vid] = total
            heights[vid] = 1 + max((heights.get(id(c), 0) for c in children), default=0)
            if total > max_nodes:
                raise ConfigFileError(f"{where}: more than {max_nodes:,} values once YAML "
                                      "aliases are expanded; refused (a config needs far fewer)")
            continue
        if vid in sizes:
            if depth + heights[vid] > max_depth:
                raise too_deep(path)
            continue
        if vid in on_path:
            raise ConfigFileError(f"{where}: refers to itself at {path or 'the top'} (a YAML "
                                  "alias inside its own anchor); refused")
        if depth >= max_depth:
            raise too_deep(path)
        on_path.add(vid)
        stack.append((value, depth, path, True))
        if isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(k, str):
                    raise ConfigFileError(f"{where}: key {k!r:.40} at {path or 'the top'} is "
                                          f"not text ({type(k).__name__}); config keys are "
                                          "field names")
                stack.append((v, depth + 1, f"{path}.{k}" if path else k, False))
        else:
            for i, v in enumerate(value):
                stack.append((v, depth + 1, f"{path}[{i}]", False))
