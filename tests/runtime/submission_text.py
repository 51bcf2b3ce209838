"""Building small submissions in tests: the /* mutagym */ block from tables, then the code."""

import functools
import json
import textwrap

from mutagym.runtime import compile


def launch(kernel: str, grid: list, block: list, args: list[str], shared_bytes=None) -> dict:
    """One [[launch]] table."""
    table = {"kernel": kernel, "grid": grid, "block": block, "args": args}
    if shared_bytes is not None:
        table["shared_bytes"] = shared_bytes
    return table


def scratch(name: str, dtype: str, size: str, init: str | None = None) -> dict:
    """One [[scratch]] table."""
    table = {"name": name, "dtype": dtype, "size": size}
    if init is not None:
        table["init"] = init
    return table


def submission(code: str, *launches: dict, scratches: tuple[dict, ...] = ()) -> str:
    """A submission text: the /* mutagym */ block with *launches* and *scratches*, then *code*."""
    lines = ["/* mutagym"]
    for kind, tables in (("launch", launches), ("scratch", scratches)):
        for table in tables:
            lines.append(f"[[{kind}]]")
            lines += [f"{key} = {json.dumps(value)}" for key, value in table.items()]
    lines.append("*/")
    return "\n".join(lines) + "\n" + textwrap.dedent(code).strip() + "\n"


@functools.cache
def compiled(source: str, race_check: bool | None = None):
    """Compile once per text for the whole session (a compile costs ~0.2 s). *race_check* False
    builds without the race detector, for tests of what thread orders alone expose."""
    return compile(source, backend="cpu", race_check=race_check)
