"""Ask g++ for the parameter types of kernels the text parser cannot bind on its own.

A kernel's signature is read from the text (`submission._parse_param`), which knows CUDA's and C's
type names. Public code also spells parameters through its own names: `typedef float floatX;`,
`#define floatX float` under `#if`, `using T = ...`, and template parameters (`const T* in` in
`reduce<256, float>`). The compiler resolves all of these the same way for any spelling, so the
parser asks it instead of imitating it: the translation unit the emulator would build (the
emulation header, the submission's device text) is followed by one declaration per kernel,

    template <class F> struct __mg_show;
    __mg_show<decltype(reduce<256, float>)> __mg_probe_0;

which g++ refuses with the canonical type of the kernel in its message
(`'__mg_show<void(const float*, float*, unsigned int)> __mg_probe_0' has incomplete type`):
typedefs, aliases and macros resolved, template arguments substituted, top-level qualifiers of
the parameters dropped. `-fsyntax-only` with the precompiled header costs a few tens of
milliseconds, and only submissions whose signatures need it pay it. g++ runs bounded
(`bounded.run_bounded`) in a private folder, as for a build.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from typing import NamedTuple

from .bounded import private_dir, run_bounded
from .errors import SubmissionError
from .headers import ALLOWED_INCLUDE_LINE
from .redact import redact_log
from .toolchain import KERNEL_LIMITS, cache_dir, compiler, header_path, kernel_flags, runtime_version

__all__ = ["ProbeError", "kernel_types", "split_top_level"]

#: Bumped whenever what a probe answers changes: it names the remembered answers.
_PROBE_VERSION = "3"
_SOURCE = "submission.cu"
_PROBES = "mutagym-probe"
_ANSWER = re.compile(r"'__mg_show<void ?\((?P<params>.*)\)> __mg_probe_(?P<index>\d+)' has incomplete type")
_ERROR = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<text>.*)$", re.M)


class ProbeError(NamedTuple):
    """Why g++ could not name a kernel's type: its first error, and the submission's line when
    the error lies in the submission."""

    message: str
    line: int | None


def kernel_types(source: str, kernels: Sequence[str]) -> list[list[str] | ProbeError]:
    """For each expression of *kernels* (a kernel's name, or a template kernel's instantiation
    such as `sgemm<32, 32, 8>`), the canonical C++ spelling of each of its parameter types in
    *source* (a submission's device text, `preprocessed.check_preprocessed`), in order; or, where
    g++ cannot name the function, a `ProbeError`.

    Raises SubmissionError when g++ hits one of its limits on the text. Answers are remembered on
    disk (`toolchain.cache_dir`), by the text, the kernels, the flags and the emulator's sources:
    the judge's workers parse one submission each, and pay for one probe between them.
    """
    flags = kernel_flags()
    key = hashlib.sha256(json.dumps([_PROBE_VERSION, runtime_version(), compiler(), flags, source,
                                     list(kernels)]).encode()).hexdigest()
    remembered = cache_dir() / "signatures" / key[:2] / f"{key}.json"
    if remembered.exists():
        return [a["types"] if "types" in a else ProbeError(*a["error"])
                for a in json.loads(remembered.read_text())]
    answers = _probe(source, kernels, flags)
    remembered.parent.mkdir(parents=True, exist_ok=True)
    partial = remembered.with_name(f"{key}.{os.getpid()}.tmp")
    partial.write_text(json.dumps([{"error": list(a)} if isinstance(a, ProbeError) else {"types": a}
                                   for a in answers]))
    partial.replace(remembered)
    return answers


def _probe(source: str, kernels: Sequence[str], flags: tuple[str, ...]) -> list[list[str] | ProbeError]:
    """`kernel_types` without the cache: one g++ run."""
    body = ALLOWED_INCLUDE_LINE.sub("", source)
    probes = "".join(f"__mg_show<decltype({k})> __mg_probe_{i};\n" for i, k in enumerate(kernels))
    text = (f'#line 1 "{_SOURCE}"\n{body}\n#line 1 "{_PROBES}"\n'
            f"template <class F> struct __mg_show;\n{probes}")
    with private_dir("mg-probe-") as folder:
        (folder / "probe.cpp").write_text(text)
        proc = run_bounded([compiler(), *flags, "-include", str(header_path(flags)), "-fsyntax-only",
                            "-fno-diagnostics-show-caret", "-fmax-errors=1000", "probe.cpp"],
                           what="g++ (the signature probe)", limits=KERNEL_LIMITS, cwd=folder)
    log = redact_log(proc.stderr.decode(errors="replace"))
    answers: dict[int, list[str]] = {}
    for m in _ANSWER.finditer(log):
        params = m["params"].strip()
        answers[int(m["index"])] = [] if params in ("", "void") else split_top_level(params)
    errors: dict[int, str] = {}   # the first error of each probe's line: the cause, not the echo
    for m in _ERROR.finditer(log):
        if m["file"] == _PROBES and "has incomplete type" not in m["text"]:
            errors.setdefault(int(m["line"]) - 2, m["text"].strip())
    first = next((m for m in _ERROR.finditer(log) if m["file"] == _SOURCE), None)
    if first is not None:   # g++ recovers from an error in the text with guesses: trust no answer
        return [ProbeError(first["text"].strip(), int(first["line"]))] * len(kernels)
    return [answers[i] if i in answers else ProbeError(errors.get(i, "g++ did not report its type"), None)
            for i in range(len(kernels))]


def split_top_level(text: str) -> list[str]:
    """Split *text* at the commas outside brackets (`<>`, `()`, `[]`).

    >>> split_top_level("const float*, foo<int, 2>, void (*)(int, int)")
    ['const float*', 'foo<int, 2>', 'void (*)(int, int)']
    """
    parts, depth, last = [], 0, 0
    for i, c in enumerate(text):
        if c in "([<":
            depth += 1
        elif c in ")]>":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[last:i].strip())
            last = i + 1
    parts.append(text[last:].strip())
    return parts
