"""The task text a policy sees for a problem: what to compute, the argument contract, the format.

It shows the description, the torch reference, every tensor with its shape, dtype and role, the
dims and scalars the kernel receives, the submission format, and a complete example submission
for a *different* problem (so the example never gives the answer away).
"""

from __future__ import annotations

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

Dims arrive as int, float scalars as float. Allowed headers: cuda_fp16.h, cuda_bf16.h, stdint.h,
math.h. No host code, inline asm, heap allocation or system calls. Outputs start as NaN: write every
element. Inputs are read-only. The kernel is judged on many hidden inputs (signs, magnitudes, shapes
including remainders and tiny sizes) against a float64 reference."""


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
        lines.append(f"Checked against the reference with atol = {t.atol:g}, rtol = {t.rtol:g}.")
    else:
        lines.append(_judged_by(gate))
    return "\n".join(lines)


def _judged_by(gate: dict) -> str:
    """The reward gate's contract (`RewardGate.contract`) in words."""
    tol = gate["tolerance"]
    suite, pool = tol["suite"], tol["pool"]
    orders = gate["thread_orders"]
    return (f"Judged by the reward gate {gate['gate']}, which pays only if every stage passes: a "
            f"hardened suite at atol = {suite['atol']:g}, rtol = {suite['rtol']:g}; then the pool of "
            f"record and fresh cases drawn at every evaluation at atol = {pool['atol']:g}, rtol = "
            f"{pool['rtol']:g}. Every case runs in {len(orders)} thread orders ({', '.join(orders)}): "
            "the result must not depend on the order threads and blocks run in. Shapes: "
            f"{', '.join(gate['shapes'])}; value families: {', '.join(gate['values'])}.")


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
