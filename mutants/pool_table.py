"""The mutant pool as a Parquet table (pyarrow): one row per mutant, the gate's verdict beside it.

>>> import tempfile, os
>>> from mutagym.mutants.generate import generate_pool
>>> pool = generate_pool(["relu"])
>>> path = os.path.join(tempfile.mkdtemp(), "mutants.parquet")
>>> write_pool(pool.mutants, path).num_rows == len(pool.mutants)
True
>>> read_pool(path).column_names[:4]
['id', 'problem', 'rule', 'family']
>>> mutants_from_table(read_pool(path)) == pool.mutants
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .compile_gate import GateResult
from .generate import Mutant

__all__ = ["SCHEMA", "mutants_from_table", "pool_table", "read_pool", "write_pool"]

_INT_FIELDS = {"line", "site", "start", "end"}

#: Column order: the mutant's fields, then the compile gate's (null when not gated).
SCHEMA = pa.schema(
    [pa.field(f.name, pa.int32() if f.name in _INT_FIELDS else pa.string(), nullable=False)
     for f in fields(Mutant)]
    + [pa.field("status", pa.string()), pa.field("stage", pa.string()), pa.field("error", pa.string())]
)


def pool_table(mutants: Sequence[Mutant], gate: Sequence[GateResult] | None = None) -> pa.Table:
    """*mutants* as an Arrow table; *gate*, if given, must hold one result per mutant, same order."""
    if gate is not None:
        if len(gate) != len(mutants):
            raise ValueError(f"gate has {len(gate)} results for {len(mutants)} mutants")
        for m, g in zip(mutants, gate):
            if g.mutant_id != m.id:
                raise ValueError(f"gate result for {g.mutant_id!r} where mutant {m.id!r} was expected")
    cols: dict[str, list] = {f.name: [getattr(m, f.name) for m in mutants] for f in fields(Mutant)}
    cols["status"] = [g.status for g in gate] if gate is not None else [None] * len(mutants)
    cols["stage"] = [g.stage for g in gate] if gate is not None else [None] * len(mutants)
    cols["error"] = [g.error for g in gate] if gate is not None else [None] * len(mutants)
    return pa.table(cols, schema=SCHEMA)


def write_pool(mutants: Sequence[Mutant], path: str | Path,
               gate: Sequence[GateResult] | None = None) -> pa.Table:
    """Write the pool table to *path* (Parquet, zstd) and return it."""
    table = pool_table(mutants, gate)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, str(path), compression="zstd")
    return table


def read_pool(path: str | Path) -> pa.Table:
    """Read a pool table written by `write_pool`."""
    return pq.read_table(str(path), schema=SCHEMA)


def mutants_from_table(table: pa.Table) -> list[Mutant]:
    """The `Mutant`s of a pool table, in row order (the gate columns are left out)."""
    names = [f.name for f in fields(Mutant)]
    return [Mutant(**{k: row[k] for k in names}) for row in table.select(names).to_pylist()]
