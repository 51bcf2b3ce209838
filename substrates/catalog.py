"""The problem catalog: load a `substrates/<id>/` folder as a `Problem`.

A `Problem` is a validated `problem.toml` plus the files beside it: the fp64 reference
(`reference.py`), the substrate and the variant kernels. It answers the questions the rest of
mutagym asks about a problem: what shape is this tensor at these dims, what are the sizes of a
preset, what does the reference say for these inputs, what `outputs` argument does a kernel run
take.

>>> from mutagym.substrates import list_problems, load_problem
>>> "relu" in list_problems()
True
>>> relu = load_problem("relu")
>>> relu.preset("tiny")
{'n': 3}
>>> relu.output_specs({"n": 5})
{'out': ((5,), 'float32')}
>>> import numpy as np
>>> relu.reference_outputs({"x": np.array([-1.0, 2.0], dtype=np.float32)})["out"]
array([0., 2.])
"""

from __future__ import annotations

import difflib
import importlib.util
import inspect
import os
import threading
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .schema import (
    FLOAT_DTYPES,
    InputSpec,
    OutputSpec,
    ProblemSpec,
    ProblemSpecError,
    evaluate_expression,
    validate_spec,
)

__all__ = ["Problem", "UnknownProblemError", "catalog_dir", "list_problems", "load_problem"]

SPEC_FILE = "problem.toml"
REFERENCE_FILE = "reference.py"


class UnknownProblemError(LookupError):
    """No problem of that id is in the catalog (and no folder of that path holds a problem.toml)."""

    def __str__(self) -> str:  # LookupError would repr() the message
        return str(self.args[0]) if self.args else ""


def catalog_dir() -> Path:
    """The folder of the installed `mutagym.substrates` package, which holds one folder per problem."""
    return Path(__file__).parent


def list_problems() -> list[str]:
    """Ids of every problem in the catalog (folders with a `problem.toml`), sorted.

    >>> ids = list_problems()
    >>> ids == sorted(ids) and "layernorm" in ids
    True
    """
    root = catalog_dir()
    return sorted(p.name for p in root.iterdir()
                  if p.is_dir() and not p.name.startswith((".", "_")) and (p / SPEC_FILE).is_file())


# ---------------------------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------------------------

_cache: dict[tuple[str, int], "Problem"] = {}
_cache_lock = threading.Lock()


def _resolve(id_or_path: str | os.PathLike) -> Path:
    """The problem folder for an id, a folder path or a path to a problem.toml."""
    if isinstance(id_or_path, os.PathLike) or (isinstance(id_or_path, str) and (
            os.sep in id_or_path or "/" in id_or_path or id_or_path.endswith(".toml"))):
        path = Path(id_or_path).expanduser().resolve()
        if path.is_file() and path.name == SPEC_FILE:
            return path.parent
        if path.is_dir() and (path / SPEC_FILE).is_file():
            return path
        raise UnknownProblemError(f"no problem at {str(id_or_path)!r}: expected a folder holding "
                                  f"{SPEC_FILE} or the path of a {SPEC_FILE}")
    if not isinstance(id_or_path, str):
        raise TypeError(f"load_problem takes a problem id or a path, got {type(id_or_path).__name__} "
                        f"{id_or_path!r}")
    folder = catalog_dir() / id_or_path
    if (folder / SPEC_FILE).is_file():
        return folder.resolve()
    if Path(id_or_path).is_dir() and (Path(id_or_path) / SPEC_FILE).is_file():
        return Path(id_or_path).resolve()
    known = list_problems()
    close = difflib.get_close_matches(id_or_path, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise UnknownProblemError(f"unknown problem {id_or_path!r}{hint} Known problems: "
                              f"{', '.join(known) or 'none'}")


def load_problem(id_or_path: str | os.PathLike) -> "Problem":
    """Load and validate a problem by catalog id or folder path (cached until problem.toml changes).

    Raises `UnknownProblemError` for an id that is not in the catalog, and `ProblemSpecError`
    (file, key path and reason for every fault) for a malformed `problem.toml`.

    >>> load_problem("layernorm").scalar_values()
    {'eps': 1e-05}
    >>> load_problem("relo")
    Traceback (most recent call last):
    ...
    mutagym.substrates.catalog.UnknownProblemError: unknown problem 'relo'; did you mean 'relu'? ...
    """
    folder = _resolve(id_or_path)
    spec_path = folder / SPEC_FILE
    key = (str(spec_path), spec_path.stat().st_mtime_ns)
    with _cache_lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit
    try:
        data = tomllib.loads(spec_path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ProblemSpecError(spec_path, f"not valid TOML: {exc}") from None
    spec = validate_spec(data, spec_path, folder)
    problem = Problem(spec, folder)
    with _cache_lock:
        _cache[key] = problem
    return problem


load_problem.cache_clear = _cache.clear  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------
# the problem
# ---------------------------------------------------------------------------------------------

class Problem:
    """A validated problem spec and the files beside it. Obtain one with `load_problem`."""

    def __init__(self, spec: ProblemSpec, folder: str | os.PathLike):
        self.spec = spec
        self.folder = Path(folder)
        self._reference: Callable[..., Any] | None = None
        self._lock = threading.Lock()

    # plain views of the spec ----------------------------------------------------------------
    id = property(lambda self: self.spec.id, doc="The problem id (its folder name).")
    title = property(lambda self: self.spec.title)
    category = property(lambda self: self.spec.category)
    description = property(lambda self: self.spec.description.strip())
    reduction_dim = property(lambda self: self.spec.reduction_dim,
                             doc="The dim a reduction runs over; '' when there is none.")
    dims = property(lambda self: dict(self.spec.dims), doc="Dim name -> Dim (official, min, max).")
    inputs = property(lambda self: list(self.spec.inputs))
    outputs = property(lambda self: list(self.spec.outputs))
    scalars = property(lambda self: dict(self.spec.scalars))
    tolerance = property(lambda self: self.spec.tolerance)
    spec_path = property(lambda self: self.folder / SPEC_FILE)
    reference_path = property(lambda self: self.folder / REFERENCE_FILE)

    @property
    def preset_names(self) -> list[str]:
        return list(self.spec.presets)

    def __repr__(self) -> str:
        return f"Problem({self.id!r}, folder={str(self.folder)!r})"

    def __reduce__(self):
        # Problems travel to worker processes by path and are re-validated there.
        return (load_problem, (str(self.folder),))

    # dims and shapes --------------------------------------------------------------------------
    def preset(self, name: str) -> dict[str, int]:
        """The dim sizes of preset `name` (a fresh dict).

        >>> load_problem("layernorm").preset("tiny")
        {'rows': 3, 'cols': 2}
        """
        try:
            return dict(self.spec.presets[name])
        except KeyError:
            close = difflib.get_close_matches(name, self.preset_names, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise KeyError(f"problem {self.id!r} has no preset {name!r}{hint} "
                           f"(presets: {', '.join(self.preset_names)})") from None

    def check_dims(self, dims: Mapping[str, int] | str) -> dict[str, int]:
        """`dims` as a dict after checking it names every dim within its range (a str is a preset)."""
        sizes = self.preset(dims) if isinstance(dims, str) else dict(dims)
        missing = [d for d in self.spec.dims if d not in sizes]
        unknown = [d for d in sizes if d not in self.spec.dims and d not in self.spec.scalars]
        if missing or unknown:
            raise ValueError(f"problem {self.id!r}: dims {sizes!r} "
                             + (f"miss {', '.join(map(repr, missing))}" if missing else "")
                             + ("; " if missing and unknown else "")
                             + (f"name unknown {', '.join(map(repr, unknown))}" if unknown else "")
                             + f" (dims: {', '.join(self.spec.dims)})")
        for name, d in self.spec.dims.items():
            if not d.min <= int(sizes[name]) <= d.max:
                raise ValueError(f"problem {self.id!r}: dim {name!r} = {sizes[name]} is outside "
                                 f"[{d.min}, {d.max}]")
        return {k: int(v) for k, v in sizes.items()}

    def _tensor(self, name: str) -> InputSpec | OutputSpec:
        for t in (*self.spec.inputs, *self.spec.outputs):
            if t.name == name:
                return t
        names = [t.name for t in (*self.spec.inputs, *self.spec.outputs)]
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise KeyError(f"problem {self.id!r} has no tensor {name!r}{hint} (tensors: {', '.join(names)})")

    def shape(self, name: str, dims: Mapping[str, int] | str) -> tuple[int, ...]:
        """The shape of input or output `name` at `dims` (a mapping or a preset name).

        >>> load_problem("layernorm").shape("weight", {"rows": 4, "cols": 7})
        (7,)
        """
        sizes = self.preset(dims) if isinstance(dims, str) else dims
        return tuple(evaluate_expression(e, sizes) for e in self._tensor(name).shape)

    def input_specs(self, dims: Mapping[str, int] | str) -> dict[str, tuple[tuple[int, ...], str]]:
        """`{input name: (shape, dtype)}` at `dims`, in `[[inputs]]` order."""
        return {t.name: (self.shape(t.name, dims), t.dtype) for t in self.spec.inputs}

    def output_specs(self, dims: Mapping[str, int] | str) -> dict[str, tuple[tuple[int, ...], str]]:
        """`{output name: (shape, dtype)}` at `dims`: the `outputs` argument of `Kernel.run`."""
        return {t.name: (self.shape(t.name, dims), t.dtype) for t in self.spec.outputs}

    def scalar_values(self) -> dict[str, float]:
        """`{scalar name: value}` as the reference and the kernel launch receive them."""
        return {name: (int(s.value) if s.dtype == "int32" else float(s.value))
                for name, s in self.spec.scalars.items()}

    def infer_dims(self, inputs: Mapping[str, Any]) -> dict[str, int]:
        """The dim sizes implied by the shapes of `inputs` (entries that are plain dim names)."""
        found: dict[str, int] = {}
        for t in self.spec.inputs:
            if t.name not in inputs:
                continue
            shape = np.shape(inputs[t.name])
            if len(shape) != len(t.shape):
                raise ValueError(f"problem {self.id!r}: input {t.name!r} has {len(shape)} dims "
                                 f"{shape}, expected {len(t.shape)} ({', '.join(map(str, t.shape))})")
            for entry, size in zip(t.shape, shape):
                if isinstance(entry, str) and entry in self.spec.dims:
                    if found.setdefault(entry, size) != size:
                        raise ValueError(f"problem {self.id!r}: input {t.name!r} gives dim {entry!r} "
                                         f"= {size}, another input gave {found[entry]}")
        return found

    # files ------------------------------------------------------------------------------------
    def kernel_paths(self) -> dict[str, Path]:
        """`{"substrate": path, "<variant stem>": path, ...}`."""
        paths = {"substrate": self.folder / self.spec.kernels.substrate}
        for v in self.spec.kernels.variants:
            paths[Path(v).stem] = self.folder / v
        return paths

    def kernel_sources(self) -> dict[str, str]:
        """`{"substrate": text, "variant_x": text, ...}`: every correct kernel's source."""
        return {k: p.read_text() for k, p in self.kernel_paths().items()}

    @property
    def variant_names(self) -> list[str]:
        return [Path(v).stem for v in self.spec.kernels.variants]

    # the reference ----------------------------------------------------------------------------
    def reference_function(self) -> Callable[..., Any]:
        """The reference callable from `reference.py` (imported once)."""
        with self._lock:
            if self._reference is None:
                self._reference = self._import_reference()
            return self._reference

    def _import_reference(self) -> Callable[..., Any]:
        path = self.reference_path
        fname = self.spec.reference.function
        if not path.is_file():
            raise ProblemSpecError(path, f"reference.py of problem {self.id!r} does not exist",
                                   "reference.function", problem=self.id)
        mod_name = f"mutagym_reference_{self.id}_{abs(hash(str(path))):x}"
        spec = importlib.util.spec_from_file_location(mod_name, path)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # the file is the problem author's, report any failure
            raise ProblemSpecError(path, f"importing the reference of problem {self.id!r} raised "
                                   f"{type(exc).__name__}: {exc}", "reference.function",
                                   problem=self.id) from exc
        fn = getattr(module, fname, None)
        if not callable(fn):
            raise ProblemSpecError(path, f"reference.py of problem {self.id!r} defines no function "
                                   f"{fname!r}", "reference.function", problem=self.id)
        return fn

    def reference_source(self) -> str:
        """The reference function's source text (for prompts)."""
        fn = self.reference_function()
        try:
            return inspect.getsource(fn)
        except (OSError, TypeError):
            return self.reference_path.read_text()

    def reference_outputs(self, inputs: Mapping[str, Any], scalars: Mapping[str, float] | None = None,
                          *, dims: Mapping[str, int] | None = None, precision: str = "float64") -> dict[str, np.ndarray]:
        """Run the reference in float64 on `inputs`; `{output name: float64 (or int64) array}`.

        Float inputs (float16 and bfloat16 included) are cast up to float64, integer inputs to
        int64; `scalars` override the spec's values. The outputs' shapes are checked against the
        spec at the dims the inputs imply (plus `dims`, for dims no input shows). `precision =
        "float32"` runs the same function on float32 tensors instead (what a plain float32
        implementation of it computes; the envelope counts it among the correct kernels); its
        outputs are still returned as float64.
        """
        if precision not in ("float64", "float32"):
            raise ValueError(f"reference_outputs(precision={precision!r}): 'float64' or 'float32'")
        float_type = np.float64 if precision == "float64" else np.float32
        import torch

        missing = [t.name for t in self.spec.inputs if t.name not in inputs]
        extra = [k for k in inputs if k not in {t.name for t in self.spec.inputs}]
        if missing or extra:
            raise ValueError(f"problem {self.id!r}: reference_outputs needs inputs "
                             f"{[t.name for t in self.spec.inputs]}"
                             + (f"; missing {missing}" if missing else "")
                             + (f"; unknown {extra}" if extra else ""))
        sizes = self.infer_dims(inputs)
        sizes.update(dims or {})
        for t in self.spec.inputs:
            want = self._shape_or_none(t, sizes)
            got = tuple(np.shape(inputs[t.name]))
            if want is not None and want != got:
                raise ValueError(f"problem {self.id!r}: input {t.name!r} has shape {got}, expected "
                                 f"{want} at dims {sizes}")
        tensors = []
        for t in self.spec.inputs:
            arr = np.asarray(inputs[t.name])
            if t.dtype in FLOAT_DTYPES:
                tensors.append(torch.from_numpy(np.ascontiguousarray(arr.astype(float_type))))
            else:
                tensors.append(torch.from_numpy(np.ascontiguousarray(arr.astype(np.int64))))
        values = self.scalar_values()
        if scalars:
            unknown = [k for k in scalars if k not in values]
            if unknown:
                raise ValueError(f"problem {self.id!r} has no scalar {unknown[0]!r} "
                                 f"(scalars: {', '.join(values) or 'none'})")
            values.update({k: float(v) if isinstance(values[k], float) else int(v)
                           for k, v in scalars.items()})

        fn = self.reference_function()
        where = dict(path=self.reference_path, key="reference.function", problem=self.id)
        threads = torch.get_num_threads()
        try:
            # One thread: torch splits a parallel reduction by its thread count, so the last bits
            # of a reference would otherwise depend on the machine (and differ between a Ray
            # worker, which runs single-threaded, and the driver).
            torch.set_num_threads(1)
            with torch.no_grad():
                result = fn(*tensors, **values)
        except Exception as exc:
            raise ProblemSpecError(where["path"], f"the reference of problem {self.id!r} raised "
                                   f"{type(exc).__name__}: {exc}", where["key"],
                                   problem=self.id) from exc
        finally:
            torch.set_num_threads(threads)
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(results) != len(self.spec.outputs):
            raise ProblemSpecError(where["path"], f"the reference of problem {self.id!r} returned "
                                   f"{len(results)} value(s); [[outputs]] declares "
                                   f"{len(self.spec.outputs)}", where["key"], problem=self.id)
        outputs: dict[str, np.ndarray] = {}
        for t, value in zip(self.spec.outputs, results):
            if not isinstance(value, torch.Tensor):
                raise ProblemSpecError(where["path"], f"the reference of problem {self.id!r} "
                                       f"returned {type(value).__name__} for output {t.name!r}, "
                                       "expected a tensor", where["key"], problem=self.id)
            want = self._shape_or_none(t, sizes)
            got = tuple(value.shape)
            if want is not None and got != want:
                raise ProblemSpecError(where["path"], f"the reference of problem {self.id!r} "
                                       f"returned shape {got} for output {t.name!r}; the spec "
                                       f"says {want} at dims {sizes}", where["key"], problem=self.id)
            value = value.detach().cpu()
            if t.dtype in FLOAT_DTYPES:
                arr = value.to(torch.float64).numpy()
            else:
                if value.is_floating_point() and not torch.equal(value, value.round()):
                    raise ProblemSpecError(where["path"], f"the reference of problem {self.id!r} "
                                           f"returned non-integer values for integer output "
                                           f"{t.name!r}", where["key"], problem=self.id)
                arr = value.to(torch.int64).numpy()
            outputs[t.name] = np.array(arr, copy=True)
        return outputs

    @staticmethod
    def _shape_or_none(t: InputSpec | OutputSpec, sizes: Mapping[str, int]) -> tuple[int, ...] | None:
        try:
            return tuple(evaluate_expression(e, sizes) for e in t.shape)
        except ValueError:
            return None
