"""Field-fault sets: kernels written outside mutagym (by a policy, by a person), each known to be
wrong (with the input that shows it) or correct, kept in the probe's format so that one loader
serves `benchmarks/probe`, the sets `mutagym leaks export` writes and `mutagym harden --field`.

A set is a folder holding `probe.toml` and one `.cu` file per kernel. Every `[[kernel]]` entry names
its `file`, `problem` (a catalog id) and `expected` (`wrong` or `correct`). A wrong kernel adds `kind`
(a short tag: the outcome or the fault's name), `fault` (what is wrong) and `witness`, an input id
`problem:generator:preset:seed` (`rewards.moves.generate_from_id` rebuilds it) on which it fails;
`after` optionally names an input run before the witness in the same batch. A correct kernel adds
`numerics` and `inputs` (ids it must pass), and optionally `gap` (why it fails today).

>>> from pathlib import Path
>>> [k.file for k in load_field_set(Path("benchmarks/probe"))][:2]   # doctest: +SKIP
['relu_vec4_partial_tail.cu', 'relu_capped_grid.cu']
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

__all__ = ["FIELD_MANIFEST", "FieldKernel", "load_field_set", "write_field_set"]

#: The manifest file of a field-fault set.
FIELD_MANIFEST = "probe.toml"
_COMMON = ("file", "problem", "expected")
_OPTIONAL = {"wrong": ("after",), "correct": ("gap",)}
_REQUIRED = {"wrong": _COMMON + ("kind", "fault", "witness"), "correct": _COMMON + ("numerics", "inputs")}


@dataclass(frozen=True)
class FieldKernel:
    """One entry of a field-fault set and its kernel's text."""

    file: str
    problem: str
    expected: str
    source: str
    kind: str = ""
    fault: str = ""
    witness: str = ""
    after: str = ""
    numerics: str = ""
    inputs: tuple[str, ...] = ()
    gap: str = ""

    @property
    def source_sha256(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()

    @property
    def cases(self) -> tuple[str, ...]:
        """The input ids that show the expectation, in the order they run in one batch."""
        if self.expected == "correct":
            return self.inputs
        return (self.after, self.witness) if self.after else (self.witness,)


def load_field_set(folder: str | os.PathLike) -> list[FieldKernel]:
    """The kernels of the field-fault set in `folder`, in manifest order; a malformed entry raises
    ValueError naming the manifest, the entry's index and file, and the key at fault."""
    from .generators import parse_input_id
    manifest = Path(folder) / FIELD_MANIFEST
    if not manifest.is_file():
        raise ValueError(f"field-fault set {str(folder)!r} has no {FIELD_MANIFEST}")
    try:
        entries = tomllib.loads(manifest.read_text()).get("kernel", [])
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{manifest}: not TOML: {err}") from None
    kernels = []
    for k, entry in enumerate(entries):
        where = f"{manifest} kernel #{k} ({entry.get('file', '?')})"
        expected = entry.get("expected")
        if expected not in _REQUIRED:
            raise ValueError(f"{where}: expected must be 'wrong' or 'correct', got {expected!r}")
        unknown = set(entry) - set(_REQUIRED[expected]) - set(_OPTIONAL[expected])
        missing = set(_REQUIRED[expected]) - set(entry)
        if unknown or missing:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)}, missing keys {sorted(missing)}")
        kernel = FieldKernel(**{**entry, "inputs": tuple(entry.get("inputs", ())), "source": ""})
        if expected == "correct" and not kernel.inputs:
            raise ValueError(f"{where}: a correct kernel needs at least one input")
        for input_id in kernel.cases:
            try:
                problem = parse_input_id(input_id)[0]
            except ValueError as err:
                raise ValueError(f"{where}: {err}") from None
            if problem != kernel.problem:
                raise ValueError(f"{where}: input {input_id!r} is not an input of problem {kernel.problem!r}")
        path = Path(folder) / kernel.file
        if not path.is_file():
            raise ValueError(f"{where}: no such kernel file {str(path)!r}")
        kernels.append(replace(kernel, source=path.read_text()))
    return kernels


def _toml_value(value) -> str:
    """A TOML basic string or array of them (JSON's escapes are TOML's)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(json.dumps(v) for v in value) + "]"
    return json.dumps(value)


def write_field_set(folder: str | os.PathLike, kernels: Iterable[FieldKernel], header: str = "") -> Path:
    """Write `kernels` as a field-fault set into `folder` (each kernel's text to its `file`, then
    the manifest, atomically) and return the manifest's path. `header` becomes its leading comment."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    files = set()
    for k in kernels:
        if k.file in files:
            raise ValueError(f"field-fault set {str(folder)!r}: two kernels named {k.file!r}")
        files.add(k.file)
        (folder / k.file).write_text(k.source)
        keys = _REQUIRED[k.expected] + tuple(o for o in _OPTIONAL[k.expected] if getattr(k, o))
        lines += ["", "[[kernel]]", *(f"{key} = {_toml_value(getattr(k, key))}" for key in keys)]
    manifest = folder / FIELD_MANIFEST
    tmp = folder / f".{FIELD_MANIFEST}.tmp{os.getpid()}"
    tmp.write_text("\n".join(lines).lstrip("\n") + "\n")
    os.replace(tmp, manifest)
    return manifest
