"""The pydantic model of `substrates/<id>/problem.toml`, and the checks that span its tables.

`substrates/README.md` is the manual for the format; this module enforces it. Validation runs in
two stages: pydantic checks every table's keys, types and ranges (`extra="forbid"` everywhere, so a
misspelt key is an error, never silently ignored); then `check_spec` checks what spans tables (shape
expressions name dims, presets name every dim and stay in range, roles are known, kernel files
exist). Either stage reports *all* its problems at once as one `ProblemSpecError` that names the
file and, for each problem, the key path (`inputs[1].role`) and the reason.

>>> from mutagym.substrates.schema import ProblemSpecError
>>> err = ProblemSpecError("substrates/relu/problem.toml", [("inputs[0].role", "unknown role 'activaton'")])
>>> print(err)
substrates/relu/problem.toml: inputs[0].role: unknown role 'activaton'
"""

from __future__ import annotations

import ast
import difflib
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..runtime.errors import SubmissionError
from ..runtime.expressions import parse_expression

__all__ = [
    "CATEGORIES",
    "FLOAT_DTYPES",
    "INPUT_DTYPES",
    "INTEGER_DTYPES",
    "INTEGER_ROLES",
    "LARGE_REDUCTION_MIN",
    "ROLES",
    "SCALAR_DTYPES",
    "Dim",
    "InputSpec",
    "Kernels",
    "OutputSpec",
    "ProblemSpec",
    "ProblemSpecError",
    "Reference",
    "Scalar",
    "Tolerance",
    "check_spec",
    "evaluate_expression",
    "expression_names",
    "format_key",
    "validate_spec",
]

# ---------------------------------------------------------------------------------------------
# vocabularies (the tables in substrates/README.md)
# ---------------------------------------------------------------------------------------------

#: Problem categories, in the README's order.
CATEGORIES = ("elementwise", "reduction", "softmax", "norm", "matmul", "scan", "loss", "conv",
              "pool", "fused")

#: Input roles and what a generator must respect for each (README "Roles").
ROLES: dict[str, str] = {
    "activation": "ordinary data; any real values",
    "logits": "unnormalised scores; any real values",
    "affine_scale": "a norm's weight (identity value 1); any real values",
    "affine_shift": "a norm's bias (identity value 0); any real values",
    "weight_matrix": "a layer's weight; any real values",
    "bias": "a layer's bias; any real values",
    "running_mean": "batchnorm running mean; any real values",
    "running_var": "batchnorm running variance; > 0",
    "positive": "any strictly positive quantity; > 0",
    "probability": "a distribution along the last dim; >= 0, rows sum to 1",
    "target": "a regression target; any real values",
    "label": "a class index; integers in [low, high)",
    "index": "an index into another tensor; integers in [low, high)",
    "mask": "a 0/1 mask; 0 or 1",
    "sequence": "values a scan runs over; any real values",
}

#: Roles whose values are integers in [low, high): `high` is required, `low` defaults to "0".
INTEGER_ROLES = ("label", "index")

FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")
INTEGER_DTYPES = ("int32", "int64", "uint8")
INPUT_DTYPES = FLOAT_DTYPES + INTEGER_DTYPES
SCALAR_DTYPES = ("float32", "float64", "int32")

#: The smallest size of the reduction dim in the `large_reduction` preset (2**18).
LARGE_REDUCTION_MIN = 2 ** 18

#: Presets every problem has.
REQUIRED_PRESETS = ("official", "remainder", "tiny")

_ID_RE = re.compile(r"^[a-z0-9_]+$")
_UNION_LABEL = re.compile(r"^(constrained-)?(int|str|float)$|\[")
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# ---------------------------------------------------------------------------------------------
# the error
# ---------------------------------------------------------------------------------------------

class ProblemSpecError(ValueError):
    """A problem spec (or its reference) is malformed.

    `path` is the file at fault, `errors` a list of `(key, reason)` pairs, where `key` is a path
    into the TOML document such as ``inputs[1].role`` ("" for the document as a whole).
    `str(err)` lists them all, one per line when there are several.
    """

    def __init__(self, path: str | Path, errors: Sequence[tuple[str, str]] | str,
                 key: str = "", *, problem: str | None = None):
        if isinstance(errors, str):
            errors = [(key, errors)]
        self.path = str(path)
        self.errors = [(str(k), str(r)) for k, r in errors]
        self.problem = problem
        lines = [f"{k}: {r}" if k else r for k, r in self.errors]
        if len(lines) == 1:
            message = f"{self.path}: {lines[0]}"
        else:
            message = f"{self.path}: {len(lines)} errors\n" + "\n".join(f"  {ln}" for ln in lines)
        super().__init__(message)

    def __reduce__(self):
        return (_rebuild_error, (self.path, self.errors, self.problem))


def _rebuild_error(path, errors, problem):
    return ProblemSpecError(path, errors, problem=problem)


def format_key(loc: Sequence[str | int]) -> str:
    """Render a pydantic location tuple as a TOML key path.

    >>> format_key(("inputs", 1, "role"))
    'inputs[1].role'
    >>> format_key(("presets", "tiny", "rows"))
    'presets.tiny.rows'
    """
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _did_you_mean(word: str, options: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


# ---------------------------------------------------------------------------------------------
# expressions over dims (shape entries, integer ranges): the launch grammar of the runtime
# ---------------------------------------------------------------------------------------------

def _parse(text: str | int, where: str = "shape"):
    """Parse a launch-style integer expression with the runtime's parser; ValueError on failure."""
    try:
        return parse_expression(text, where=where)
    except SubmissionError as exc:
        raise ValueError(exc.reason) from None


def expression_names(text: str | int) -> set[str]:
    """The names an expression refers to (function names excluded).

    >>> sorted(expression_names("ceil_div(rows * cols, 4)"))
    ['cols', 'rows']
    """
    return set(_parse(text).names)


def evaluate_expression(text: str | int, values: Mapping[str, int]) -> int:
    """Evaluate an integer expression over `values` (parsed by the runtime, never `eval`ed).

    >>> evaluate_expression("ceil_div(n, 256) + rows % 3", {"n": 1000, "rows": 5})
    6
    >>> evaluate_expression(7, {})
    7
    """
    expr = _parse(text)
    try:
        return expr.evaluate(values)
    except SubmissionError as exc:
        raise ValueError(exc.reason) from None


def _check_expression(text: str, dims: Sequence[str]) -> str | None:
    """None if `text` is a valid expression over `dims`, else the reason."""
    try:
        names = expression_names(text)
    except ValueError as exc:
        return str(exc)
    unknown = sorted(names - set(dims))
    if unknown:
        hint = _did_you_mean(unknown[0], dims)
        if str(text).strip() == unknown[0]:
            return f"{unknown[0]!r} is not a dim{hint} (dims: {', '.join(dims)})"
        return (f"{text!r} names {', '.join(repr(u) for u in unknown)}, which "
                f"{'is not a dim' if len(unknown) == 1 else 'are not dims'}{hint} "
                f"(dims: {', '.join(dims)})")
    return None


# ---------------------------------------------------------------------------------------------
# the tables
# ---------------------------------------------------------------------------------------------

_STRICT = ConfigDict(extra="forbid", frozen=True)
Name = Annotated[str, Field(pattern=_NAME_RE.pattern)]
ShapeEntry = Union[Annotated[int, Field(ge=1, strict=True)], Annotated[str, Field(min_length=1)]]
ExprValue = Union[Annotated[int, Field(strict=True)], Annotated[str, Field(min_length=1)]]


class Dim(BaseModel):
    """One dim: the official size and the allowed range (inclusive)."""

    model_config = _STRICT
    official: int = Field(ge=1, strict=True)
    min: int = Field(ge=1, strict=True)
    max: int = Field(ge=1, strict=True)


class Scalar(BaseModel):
    """A value the kernel receives by name (dims go as `int`, scalars as `float` or `int`)."""

    model_config = _STRICT
    value: float = Field(strict=True)
    dtype: Literal["float32", "float64", "int32"] = "float32"

    @field_validator("value")
    @classmethod
    def _finite(cls, v):
        if not math.isfinite(v):
            raise ValueError(f"must be a finite number, got {v!r}")
        return v


class InputSpec(BaseModel):
    """One input tensor: name, shape (dim names or expressions over dims), dtype and role."""

    model_config = _STRICT
    name: Name
    shape: list[ShapeEntry] = Field(min_length=1)
    dtype: Literal["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"]
    role: str
    low: ExprValue | None = None
    high: ExprValue | None = None


class OutputSpec(BaseModel):
    """One output tensor: name, shape and dtype."""

    model_config = _STRICT
    name: Name
    shape: list[ShapeEntry] = Field(min_length=1)
    dtype: Literal["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"]


class Reference(BaseModel):
    """Where the fp64 reference lives: a function in `reference.py` beside the spec."""

    model_config = _STRICT
    function: Name


class Tolerance(BaseModel):
    """The problem's default comparator: |out - ref| <= atol + rtol * |ref| on >= matched_ratio."""

    model_config = _STRICT
    atol: float = Field(ge=0, strict=True)
    rtol: float = Field(ge=0, strict=True)
    matched_ratio: float = Field(default=1.0, gt=0, le=1, strict=True)


class Kernels(BaseModel):
    """The substrate file and the variant files (paths relative to the problem folder)."""

    model_config = _STRICT
    substrate: str = Field(min_length=1)
    variants: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)


class ProblemSpec(BaseModel):
    """A whole `problem.toml`. Cross-table rules live in `check_spec`."""

    model_config = _STRICT
    id: Annotated[str, Field(pattern=_ID_RE.pattern)]
    title: Annotated[str, Field(min_length=1)]
    category: Literal["elementwise", "reduction", "softmax", "norm", "matmul", "scan", "loss",
                      "conv", "pool", "fused"]
    description: str
    reduction_dim: str = ""
    dims: dict[Name, Dim] = Field(min_length=1)
    presets: dict[Name, dict[str, Annotated[int, Field(strict=True)]]]
    scalars: dict[Name, Scalar] = Field(default_factory=dict)
    inputs: list[InputSpec] = Field(min_length=1)
    outputs: list[OutputSpec] = Field(min_length=1)
    reference: Reference
    tolerance: Tolerance
    kernels: Kernels

    @field_validator("description", "title")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be empty")
        return v


# ---------------------------------------------------------------------------------------------
# cross-table checks
# ---------------------------------------------------------------------------------------------

def check_spec(spec: ProblemSpec, folder: str | Path | None = None) -> list[tuple[str, str]]:
    """Every cross-table problem of `spec` as `(key, reason)` pairs; empty when it is sound.

    With `folder`, also check that `id` equals the folder name and that the kernel files exist.
    """
    errors: list[tuple[str, str]] = []
    dims = list(spec.dims)
    err = errors.append

    if folder is not None:
        folder = Path(folder)
        if spec.id != folder.name:
            err(("id", f"{spec.id!r} must equal the folder name {folder.name!r}"))

    # dims ------------------------------------------------------------------------------------
    for name, d in spec.dims.items():
        if d.min > d.max:
            err((f"dims.{name}", f"min {d.min} is larger than max {d.max}"))
        elif not d.min <= d.official <= d.max:
            err((f"dims.{name}.official", f"{d.official} is outside [{d.min}, {d.max}]"))

    for name, sc in spec.scalars.items():
        if sc.dtype == "int32" and float(sc.value) != int(sc.value):
            err((f"scalars.{name}.value", f"{sc.value!r} is not an integer, but dtype is 'int32'"))

    # names share one namespace: launch `args` name dims, scalars, inputs and outputs alike -----
    seen: dict[str, str] = {}
    for kind, names in (("dims", dims), ("scalars", list(spec.scalars)),
                        ("inputs", [i.name for i in spec.inputs]),
                        ("outputs", [o.name for o in spec.outputs])):
        for idx, name in enumerate(names):
            key = f"{kind}[{idx}].name" if kind in ("inputs", "outputs") else f"{kind}.{name}"
            if name in seen:
                err((key, f"name {name!r} is already used by {seen[name]}"))
            else:
                seen[name] = f"{kind}" if kind in ("dims", "scalars") else f"{kind}[{idx}]"

    # reduction dim and presets ---------------------------------------------------------------
    red = spec.reduction_dim
    if red and red not in spec.dims:
        err(("reduction_dim", f"{red!r} is not a dim{_did_you_mean(red, dims)} (dims: {', '.join(dims)})"))
    for required in REQUIRED_PRESETS:
        if required not in spec.presets:
            err(("presets", f"missing required preset {required!r}"))
    if red and "large_reduction" not in spec.presets:
        err(("presets", f"missing preset 'large_reduction' (required because reduction_dim = {red!r}; "
                        f"it sets {red} >= {LARGE_REDUCTION_MIN})"))
    if not red and "large_reduction" in spec.presets:
        err(("presets.large_reduction", "only allowed when reduction_dim names a dim"))

    for pname, sizes in spec.presets.items():
        for dname in sizes:
            if dname not in spec.dims:
                err((f"presets.{pname}.{dname}", f"{dname!r} is not a dim{_did_you_mean(dname, dims)} "
                                                 f"(dims: {', '.join(dims)})"))
        missing = [d for d in dims if d not in sizes]
        if missing:
            err((f"presets.{pname}", f"does not set {', '.join(repr(m) for m in missing)}; "
                                     "every preset names every dim"))
        for dname, size in sizes.items():
            d = spec.dims.get(dname)
            if d is not None and not d.min <= size <= d.max:
                err((f"presets.{pname}.{dname}", f"{size} is outside the range of dim {dname!r} "
                                                 f"[{d.min}, {d.max}]"))
        if pname == "official":
            for dname, size in sizes.items():
                d = spec.dims.get(dname)
                if d is not None and size != d.official:
                    err((f"presets.official.{dname}", f"{size} differs from dims.{dname}.official "
                                                      f"= {d.official}"))
        elif pname == "remainder":
            if sizes and all(size % 32 == 0 for size in sizes.values()):
                err(("presets.remainder", "every size is a multiple of 32; a remainder preset needs "
                                          "at least one size that is not"))
        elif pname == "tiny":
            for dname, size in sizes.items():
                if not 1 <= size <= 3:
                    err((f"presets.tiny.{dname}", f"{size} is not a tiny size (1-3)"))
        elif pname == "large_reduction" and red in sizes:
            if sizes[red] < LARGE_REDUCTION_MIN:
                err((f"presets.large_reduction.{red}", f"{sizes[red]} is below {LARGE_REDUCTION_MIN} "
                                                       "(2**18), the least size of a large reduction"))

    # tensors ---------------------------------------------------------------------------------
    def check_shape(kind: str, idx: int, shape: list) -> None:
        for j, entry in enumerate(shape):
            if isinstance(entry, str):
                reason = _check_expression(entry, dims)
                if reason:
                    err((f"{kind}[{idx}].shape[{j}]", reason))

    for idx, inp in enumerate(spec.inputs):
        check_shape("inputs", idx, inp.shape)
        if inp.role not in ROLES:
            err((f"inputs[{idx}].role",
                 f"unknown role {inp.role!r} for input {inp.name!r}{_did_you_mean(inp.role, list(ROLES))} "
                 f"Known roles: {', '.join(ROLES)}"))
            continue
        if inp.role in INTEGER_ROLES:
            if inp.dtype not in INTEGER_DTYPES:
                err((f"inputs[{idx}].dtype", f"role {inp.role!r} needs an integer dtype "
                                             f"({', '.join(INTEGER_DTYPES)}), got {inp.dtype!r}"))
            if inp.high is None:
                err((f"inputs[{idx}].high", f"role {inp.role!r} needs 'high', the exclusive upper "
                                            "bound of its values (an expression over dims)"))
        elif inp.role != "mask":
            for bound in ("low", "high"):
                if getattr(inp, bound) is not None:
                    err((f"inputs[{idx}].{bound}", f"only the roles {', '.join(INTEGER_ROLES)} and "
                                                   f"'mask' take {bound!r}; input {inp.name!r} has "
                                                   f"role {inp.role!r}"))
            if inp.dtype in INTEGER_DTYPES:
                err((f"inputs[{idx}].dtype", f"role {inp.role!r} holds real values; dtype {inp.dtype!r} "
                                             "is for the roles label, index and mask"))
        for bound in ("low", "high"):
            value = getattr(inp, bound)
            if isinstance(value, str):
                reason = _check_expression(value, dims)
                if reason:
                    err((f"inputs[{idx}].{bound}", reason))
    for idx, out in enumerate(spec.outputs):
        check_shape("outputs", idx, out.shape)

    # tolerance, kernels, reference -------------------------------------------------------------
    files = [("kernels.substrate", spec.kernels.substrate)]
    files += [(f"kernels.variants[{i}]", v) for i, v in enumerate(spec.kernels.variants)]
    names_seen: set[str] = set()
    for key, rel in files:
        p = Path(rel)
        if p.is_absolute() or ".." in p.parts or p.suffix != ".cu":
            err((key, f"{rel!r} must be a .cu file inside the problem folder"))
            continue
        if rel in names_seen:
            err((key, f"{rel!r} is listed twice"))
        names_seen.add(rel)
        if folder is not None and not (folder / rel).is_file():
            err((key, f"file {rel!r} does not exist in {folder}"))
    if folder is not None:
        ref_file = folder / "reference.py"
        if not ref_file.is_file():
            err(("reference.function", f"reference.py does not exist in {folder}"))
        else:
            reason = _check_reference_defines(ref_file, spec.reference.function)
            if reason:
                err(("reference.function", reason))
    return errors


def _check_reference_defines(path: Path, function: str) -> str | None:
    """None if `path` defines a top-level function `function` (checked by parsing, not importing)."""
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except SyntaxError as exc:
        return f"reference.py does not parse: line {exc.lineno}: {exc.msg}"
    defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    defined += [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                if isinstance(t, ast.Name)]
    if function not in defined:
        return (f"reference.py defines no function {function!r}{_did_you_mean(function, defined)} "
                f"(defined: {', '.join(defined) or 'nothing'})")
    return None


def _pydantic_errors(exc: ValidationError) -> list[tuple[str, str]]:
    out = []
    for e in exc.errors(include_url=False):
        loc = list(e["loc"])
        # drop pydantic's union-branch labels ("int", "str", "function-after[...]") from key paths
        loc = [p for p in loc if not (isinstance(p, str) and _UNION_LABEL.search(p))]
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
            parent = _parent_model(loc[:-1])
            if parent is not None:
                key = loc[-1]
                known = list(parent.model_fields)
                msg = f"unknown key {key!r}{_did_you_mean(str(key), known)} (known: {', '.join(known)})"
        elif e["type"] == "missing":
            msg = "required key is missing"
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        out.append((format_key(loc), msg))
    # a failing union reports one error per branch: merge them into one line per key
    merged: dict[str, list[str]] = {}
    for key, msg in out:
        msgs = merged.setdefault(key, [])
        if msg not in msgs:
            msgs.append(msg)
    result = []
    for key, msgs in merged.items():
        if len(msgs) > 1 and all(m.startswith("Input should be ") for m in msgs):
            msgs = ["Input should be " + " or ".join(m[len("Input should be "):] for m in msgs)]
        result.extend((key, m) for m in msgs)
    return result


def _parent_model(loc: list) -> type[BaseModel] | None:
    """The model class at `loc` inside a ProblemSpec (for 'known keys' hints)."""
    model: type[BaseModel] | None = ProblemSpec
    i = 0
    while i < len(loc) and model is not None:
        part = loc[i]
        sub = {"dims": Dim, "scalars": Scalar, "inputs": InputSpec, "outputs": OutputSpec,
               "reference": Reference, "tolerance": Tolerance, "kernels": Kernels}
        if model is ProblemSpec and part in sub:
            model = sub[part]
            i += 2 if part in ("dims", "scalars", "inputs", "outputs") else 1
        else:
            return None
    return model if i == len(loc) else None


def validate_spec(data: Mapping, path: str | Path, folder: str | Path | None = None) -> ProblemSpec:
    """Validate a parsed `problem.toml` document; raise `ProblemSpecError` listing every problem.

    `path` is used in messages; `folder` (default: the folder of `path`) enables the checks that
    look at files (id equals folder name, kernel files and reference.py exist).
    """
    try:
        spec = ProblemSpec.model_validate(dict(data))
    except ValidationError as exc:
        raise ProblemSpecError(path, _pydantic_errors(exc)) from None
    errors = check_spec(spec, Path(path).parent if folder is None else folder)
    if errors:
        raise ProblemSpecError(path, errors, problem=spec.id)
    return spec
