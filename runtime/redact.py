"""Compiler logs that name nothing of the host: what the judge hands back to an untrusted policy.

g++ and NVRTC name files by absolute path: the judge's cache folder, site-packages, temporary
folders, the home directory. The policy only needs its own lines, so `redact_log` names the
submission `submission.cu`, mutagym's emulation headers `<mutagym>/mg_math.h`, the CUDA headers
`<cuda>/cuda_fp16.hpp`, and any other absolute path by its base name alone (so temporary folder
names go too). A diagnostic located in some other host file keeps only its location: its text and
quoted source line could carry that file's contents. The log is cut at `MAX_LOG_CHARS`.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["redact_log", "MAX_LOG_CHARS"]

#: A page of diagnostics is all anyone reads; a cascade of errors can be megabytes.
MAX_LOG_CHARS = 8 * 1024

_CSRC = str(Path(__file__).resolve().with_name("csrc")) + "/"
#: Names the compilers were given for the submission's text (the bounded g++ writes
#: `submission.cu.cpp`; the translation unit's `#line` directives already say `submission.cu`).
_SUBMISSION_FILES = {"submission.cu.cpp": "submission.cu"}

_PATH_CHARS = r"[^\s/:'\"()<>\[\],;|`]"
#: An absolute path: a slash not preceded by a word character, `>` or `.` (so `a/b`, `<cuda>/x`
#: and `./x` stay), then at least two segments (so `x /2` in a quoted source line stays).
_ABSOLUTE = re.compile(rf"(?<![\w>.\-~]){'/'}(?:{_PATH_CHARS}+/)+{_PATH_CHARS}*")
_MUTAGYM_DIR = re.compile(r"/runtime-[0-9a-f]+/include/$")
_CUDA_DIR = re.compile(r"/(?:nvidia/[^/]+|cuda[^/]*(?:/targets/[^/]+)?)/include/")
#: Where a diagnostic is: `file:12:3: ` (g++) or `file(12): ` (NVRTC).
_LOCATION = re.compile(r"^(?P<file>[^\s:(]+)(?::\d+(?::\d+)?:|\(\d+\):)(?= |$)")


def _rewrite(path: str) -> tuple[str, bool]:
    """The name to show for absolute *path*, and whether it is a file the policy may see."""
    if path.startswith(_CSRC):
        return "<mutagym>/" + path[len(_CSRC):], True
    folder, _, name = path.rpartition("/")
    if _MUTAGYM_DIR.search(folder + "/"):
        return f"<mutagym>/{name}", True
    cuda = _CUDA_DIR.search(path)
    if cuda:
        return "<cuda>/" + path[cuda.end():], True
    if name in _SUBMISSION_FILES:
        return _SUBMISSION_FILES[name], True
    return name or "<dir>", False


def redact_log(log: str, *, limit: int = MAX_LOG_CHARS) -> str:
    """*log* with host paths rewritten, other host files' diagnostics withheld, cut at *limit*."""
    lines, withholding = [], False
    for line in log.splitlines():
        location = _LOCATION.match(line)
        if location and location["file"].startswith("/"):
            shown, visible = _rewrite(location["file"])
            if not visible:
                lines.append(f"{shown}{line[len(location['file']):location.end()]} "
                             "[diagnostic withheld: it is not in the submission]")
                withholding = True
                continue
        if withholding and line[:1].isspace():
            continue  # the quoted source line and caret of a withheld diagnostic
        withholding = False
        lines.append(_ABSOLUTE.sub(lambda m: _rewrite(m.group(0))[0], line))
    text = "\n".join(lines) + ("\n" if log.endswith("\n") else "")
    if len(text) > limit:
        cut = text.rfind("\n", 0, limit) + 1 or limit
        text = text[:cut] + f"[log cut: {len(text) - cut} more characters]\n"
    return text
