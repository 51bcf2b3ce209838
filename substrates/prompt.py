"""The task text a policy sees for a problem: what to compute, the argument contract, the format.

It shows the description, the torch reference, every tensor with its shape, dtype and role, the
dims and scalars the kernel receives, how outputs are compared, the submission format, and a
complete example submission for a *different* problem (so the example never gives the answer away).

With a reward gate's contract (`envs.gate.RewardGate.contract`) it also states each stage's
tolerance and gives every shape and every value recipe an input can have one line, written by the
tables the inputs are drawn from (`rewards.shapes`, `rewards.generators`). The allowed headers are
`runtime.headers.ALLOWED_HEADERS`. `tests/docs/test_prompt_truth.py` checks each statement against
the code.
"""

from __future__ import annotations

from ..runtime.headers import ALLOWED_HEADERS
from .catalog import load_problem

FORMAT = """\
Submit one text: CUDA C++ device code led by a TOML block in a comment that says how to launch it.

/* mutagym
# inout = ["x"]                 # optional, before the tables: the kernel updates x in place; the
                                # output of x's shape and dtype starts as a copy of x, "x" names it
[[launch]]                      # one table per kernel launch, run in order
kernel = "my_kernel"            # a __global__ function below; a template's: "my_kernel<256, float>"
grid = ["ceil_div(n, 256)"]     # 1-3 expressions over dims and scalars: + - * // % ceil_div min max
block = [256]                   # at most 1024 threads
shared_bytes = 0                # dynamic shared memory (extern __shared__), at most 49152
args = ["x", "out", "n"]        # in parameter order: inputs, outputs, scratch buffers, dims,
                                # scalars, "x + n // 2" (a pointer past x's start, in elements),
                                # NULL, an integer expression ("n // 4"), or for a float
                                # parameter a real one ("1.0 / sqrt(d)")
# fill = {partial = 0}          # optional: an output or scratch buffer holds this value in every
                                # element before the launch (and before any launch passes it)

# [[scratch]]                   # optional device buffers (poisoned unless init = "zero")
# name = "partial"
# dtype = "float32"             # float16/32/64, bfloat16, int8..int64, uint8..uint64
# size = "rows * 8"
*/
__global__ void my_kernel(const float* x, float* out, int n) { ... }

Parameter types may be typedefs, `using` aliases, macros or template parameters that resolve to
float, double, __half, __nv_bfloat16, bool, the integer types or CUDA vector types (float4, ...).

Dims arrive as int, float scalars as float. Allowed headers (every other #include is refused):
{headers}. No host code, inline asm, heap allocation or system calls. Outputs start as NaN: write
every element. Inputs are read-only. The kernel is judged on many hidden inputs (signs, magnitudes,
shapes including remainders and tiny sizes) against a float64 reference.""".replace("{headers}", ", ".join(ALLOWED_HEADERS))


def _contract(problem, gate: dict | None) -> str:
    spec = problem.spec
    lines = ["Inputs:"]
    for i in spec.inputs:
        rng = f", values in [{i.low or 0}, {i.high})" if i.high is not None else ""
        lines.append(f"  {i.name}: {i.dtype} [{', '.join(map(str, i.shape))}] (role {i.role}{rng})")
    lines.append("Outputs:")
    for o in spec.outputs:
        lines.append(f"  {o.name}: {o.dtype} [{', '.join(map(str, o.shape))}]")
    dims = ", ".join(f"{n} (official {d.official}, {d.min}..{d.max})" for n, d in spec.dims.items())
    lines.append(f"Dims (int): {dims}")
    if spec.scalars:
        lines.append("Scalars: " + ", ".join(f"{n} = {s.value!r} ({s.dtype})" for n, s in spec.scalars.items()))
    if gate is None:
        t = spec.tolerance
        terms = {"atol": t.atol, "rtol": t.rtol, "matched_ratio": t.matched_ratio, "nan_matches": False}
        lines.append(f"Checked against the reference at {_tolerance(terms)}.")
        lines.append(_COMPARISON.format(nan=_nan_rule(False)))
    else:
        lines += _judged_by(gate)
    return "\n".join(lines)


#: How an output is compared (`rewards.comparator.Comparator`), stage tolerances aside.
_COMPARISON = ("An output element passes when |out - ref| <= atol + rtol * |ref|; where the reference "
               "is an infinity, only the same infinity passes; {nan}. An output NaN or infinity where "
               "the reference is finite fails the whole case, whatever share must pass.")


def _nan_rule(nan_matches: bool) -> str:
    return "a NaN passes only where the reference is NaN" if nan_matches else "a NaN never passes"


def _tolerance(terms: dict) -> str:
    """`atol = .., rtol = ..` and the share of elements that must pass."""
    ratio = terms["matched_ratio"]
    share = "every element must pass" if ratio >= 1 else f"at least {100 * ratio:g} % of the elements must pass"
    return f"atol = {terms['atol']:g}, rtol = {terms['rtol']:g} ({share})"


def _judged_by(gate: dict) -> list[str]:
    """The reward gate's contract (`RewardGate.contract`) in words, a line per shape and value."""
    tol = gate["tolerance"]
    orders = gate["thread_orders"]
    nan = {t["nan_matches"] for t in tol.values()}
    lines = [f"Judged by the reward gate {gate['gate']}, which pays only if every stage passes: a "
             f"hardened suite at {_tolerance(tol['suite'])}; then the pool of record at "
             f"{_tolerance(tol['pool'])}; then fresh cases drawn at every evaluation at "
             f"{_tolerance(tol['fresh'])}. Every case runs in {len(orders)} thread orders "
             f"({', '.join(orders)}): the result must not depend on the order threads and blocks run in.",
             _COMPARISON.format(nan=_nan_rule(True) if nan == {True} else _nan_rule(False)),
             "Shapes a case can have (fixed presets, and classes drawn anew per case, `@`):"]
    lines += [f"  {name}: {line}" for name, line in gate["shapes"].items()]
    lines.append("Values a case can hold (data inputs: those of role activation, logits, sequence or "
                 "target; a row runs along the last dim, a 1-d input is one row):")
    lines += [f"  {name}: {line}" for name, line in gate["values"].items()]
    env, search = gate["envelope"], gate["search"]
    lines.append("Corners of the dims' ranges, one per evaluation in turn: "
                 + "; ".join(",".join(f"{k}={v}" for k, v in dims.items()) for dims in gate["corners"].values())
                 + ".")
    lines.append(f"Each output must also stay within {env['multiple']:g}x the largest error the reference kernels "
                 f"(and the reference in float32) make on that input, or {env['least_share']:g} of the tolerance "
                 f"budget, or {env['ulps']:g} ulps.")
    lines.append(f"A case may take {env['time_multiple']:g}x the CPU time the slowest reference kernel takes on "
                 f"it in the CPU emulator, at least {env['time_floor_s']:g} s and at most {env['time_cap_s']:g} s "
                 "(a case without a measured time: the flat per-case limit); past that it is a timeout.")
    lines.append("Then a search seeks your kernel's worst input: a sweep tries each move below once "
                 "(row-arranging ones also on all-positive and all-negative rows; at most "
                 f"{search['sweep_elements']:,} elements a tensor), then up to {search['candidates']} cases combine "
                 f"moves or set any dim (at most {search['max_elements']:,} elements a tensor). Moves "
                 "change data, weight and bias inputs. A case judges only if every "
                 "reference kernel passes it and its values at the official shape.")
    lines += [f"  {name}: {line}" for name, line in search["moves"].items()]
    lines.append("No input holds NaN or an infinity unless its line above says so.")
    return lines


def task_prompt(problem_id: str, gate: dict | None = None) -> str:
    """The full task text for `problem_id`; *gate* (a `RewardGate.contract`) states what the
    reward gate judges, else the problem's own tolerance is stated."""
    problem = load_problem(problem_id)
    example_id = "relu" if problem.id != "relu" else "sigmoid"
    example = load_problem(example_id).kernel_sources()["substrate"]
    return "\n\n".join([
        f"# Task: {problem.spec.title} (`{problem.id}`)",
        problem.spec.description.strip(),
        "## Reference (PyTorch, evaluated in float64)\n\n```python\n" + problem.reference_source().strip() + "\n```",
        "## Argument contract\n\n" + _contract(problem, gate),
        "## Submission format\n\n" + FORMAT,
        f"## Example submission (for a different problem, `{example_id}`)\n\n```cuda\n{example.strip()}\n```",
    ]) + "\n"
