"""The field ledger: wrong kernels a policy wrote and the reward gate caught, kept so that the
next hardening run can cover them (`mutagym leaks export`, then `mutagym harden --field`).

The judge writes one small JSON file per (kernel text, problem) into a ledger folder whenever the
gate rejects a kernel on an input: its text, the problem, the gate's and its first-stage checker's
versions, the stage, thread order and outcome, whether the hardened checker alone would have paid
it (`checker_alone_false_accept`), and the witness, the failing input's id
`problem:generator:preset:seed`. Every stage's inputs are such ids (the fresh stage's seeds come
from the secret stream), so `rewards.moves.generate_from_id` rebuilds the very input.

The file is named by the text's sha256 and the problem, so a kernel resubmitted is kept once (the
first record stays). Files are written to a private temporary name and renamed, so processes and
Ray workers sharing a folder never see half a record; at most `max_records` files are kept (later
kernels are counted in `dropped`, not written).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from collections.abc import Iterable
from pathlib import Path

from ..rewards.field_faults import FIELD_MANIFEST, FieldKernel, load_field_set, write_field_set

__all__ = ["FIELD_FORMAT", "FieldLedger", "MAX_RECORDS", "export_ledgers", "ledger_kernels", "read_ledger"]

FIELD_FORMAT = "mutagym.field/1"
#: Records a ledger folder holds at most (a few kB each).
MAX_RECORDS = 10_000


def _name(source: str, problem: str) -> str:
    return f"{hashlib.sha256(source.encode('utf-8', 'surrogatepass')).hexdigest()[:24]}-{problem}.json"


@dataclass
class FieldLedger:
    """A ledger folder (created on first write) and the records this process wrote or dropped."""

    folder: Path
    max_records: int = MAX_RECORDS
    written: int = 0
    dropped: int = 0

    def __post_init__(self) -> None:
        self.folder = Path(self.folder)
        if self.max_records < 1:
            raise ValueError(f"FieldLedger(max_records={self.max_records!r}): must be >= 1")

    def record(self, source: str, problem: str, *, gate: str, checker: str, stage: str, schedule: str,
               outcome: str, witness: str, checker_alone_false_accept: bool) -> Path | None:
        """Keep one caught kernel; returns its file, or None when it was kept before or the
        folder is full."""
        path = self.folder / _name(source, problem)
        if path.exists():
            return None
        self.folder.mkdir(parents=True, exist_ok=True)
        if sum(1 for p in self.folder.glob("*.json")) >= self.max_records:
            self.dropped += 1
            return None
        record = {"format": FIELD_FORMAT, "problem": problem,
                  "source_sha256": hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest(),
                  "gate": gate, "checker": checker, "stage": stage, "schedule": schedule, "outcome": outcome,
                  "witness": witness, "checker_alone_false_accept": bool(checker_alone_false_accept),
                  "source": source}
        tmp = self.folder / f".{path.name}.{os.getpid()}.{id(self)}.tmp"
        tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, path)
        self.written += 1
        return path


def read_ledger(folder: str | os.PathLike) -> list[dict]:
    """The records of a ledger folder, sorted by problem and text hash; a file that is not a
    record raises ValueError naming it."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"field ledger {str(folder)!r}: no such folder")
    records = []
    for path in sorted(folder.glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise ValueError(f"field ledger record {str(path)!r}: {err}") from None
        if not isinstance(record, dict) or record.get("format") != FIELD_FORMAT:
            raise ValueError(f"field ledger record {str(path)!r}: not a {FIELD_FORMAT} record")
        records.append(record)
    return sorted(records, key=lambda r: (r["problem"], r["source_sha256"]))


def ledger_kernels(records: Iterable[dict]) -> list[FieldKernel]:
    """Each record as a wrong kernel of a field-fault set: `kind` its outcome, `witness` its input."""
    kernels = []
    for r in records:
        alone = ("the hardened checker alone would have paid it" if r["checker_alone_false_accept"]
                 else "the hardened checker alone rejects it too")
        kernels.append(FieldKernel(
            file=f"{r['problem']}_{r['source_sha256'][:12]}.cu", problem=r["problem"], expected="wrong",
            source=r["source"], kind=r["outcome"], witness=r["witness"],
            fault=(f"caught by {r['gate']} at its {r['stage']} stage in {r['schedule']} order "
                   f"({r['outcome']}); {alone}")))
    return kernels


def export_ledgers(out: str | os.PathLike, ledgers: Iterable[str | os.PathLike]) -> tuple[Path, int, int]:
    """Write the records of `ledgers` as a field-fault set into `out`, after the kernels a set
    already there holds (a kernel, by text and problem, is kept once). Returns (manifest, kernels
    added, kernels in the set)."""
    out = Path(out)
    kept = load_field_set(out) if (out / FIELD_MANIFEST).is_file() else []
    seen = {(k.source_sha256, k.problem) for k in kept}
    added = []
    for folder in ledgers:
        for k in ledger_kernels(read_ledger(folder)):
            if (k.source_sha256, k.problem) not in seen:
                seen.add((k.source_sha256, k.problem))
                added.append(k)
    header = ("A field-fault set (rewards/field_faults.py): wrong kernels the reward gate caught, written by\n"
              "`mutagym leaks export` from field ledgers; `mutagym harden --field` feeds it back.")
    if kept:      # the set's own leading comment stays
        lines = (out / FIELD_MANIFEST).read_text().splitlines()
        comment = lines[:next((i for i, x in enumerate(lines) if not x.startswith("#")), len(lines))]
        header = "\n".join(line[2:] if line.startswith("# ") else line[1:] for line in comment) or header
    manifest = write_field_set(out, kept + added, header)
    return manifest, len(added), len(kept) + len(added)
