"""Turn a submission into the C++ translation unit the CPU emulator compiles.

The unit is the submission's device text (`Submission.device_text`: the text as the preprocessing
check left it, its directives resolved, what NVRTC compiles too) with `#line` directives that make
g++ report the submission's line numbers, and three rewrites: the CUDA headers' `#include` lines
are dropped because the precompiled emulation header already provides what they declare;
`extern __shared__ T name[];` becomes a declaration aliasing the one dynamic shared-memory block
(also inside a template, as CUDA's `SharedMemory<T>` helpers declare it, with
`__align__(sizeof(T))`); and an entry shim per launched kernel is appended so the runner can call
it with untyped argument slots (and, where the text uses CUDA's pipeline primitives, land each
thread's pending copies when it returns). No macro of the submission is left to rewrite the shims.
What the runner calls while it loads the object (`__mg_context`, `__mg_shared_memory`) is not
here at all: it is a translation unit of its own (csrc/mg_context.cpp, `toolchain.context_object`).
"""

from __future__ import annotations

import hashlib
import re

from .headers import ALLOWED_INCLUDE_LINE
from .submission import Submission, strip_comments_and_strings

#: `__align__(16)`, `__align__(sizeof(T))`, `alignas(float4)`: one level of nested parentheses.
_ALIGN = r"(?:__align__|alignas)\s*\((?:[^()]|\([^()]*\))*\)"
_EXTERN_SHARED = re.compile(
    rf"\bextern\s+((?:{_ALIGN}\s*)?)__shared__\s+((?:[\w:<>,*&\s]|{_ALIGN})+?)\s*\b(\w+)\s*\[\s*\]\s*;")

#: What the unit declares before the text: the dynamic shared-memory block (csrc/mg_context.cpp).
_PROLOGUE = 'extern unsigned char __mg_dynamic_smem[] __attribute__((visibility("hidden")));\n'


#: A use of CUDA's pipeline primitives: each thread's pending copies then land when it ends
#: (csrc/mg_pipeline.h); a kernel without them keeps the pipeline's state out of its object.
_PIPELINE = re.compile(r"\b__pipeline_")

#: What a `{` opens when it is not a block of code: a namespace, a class, an initialiser.
_NOT_CODE = re.compile(r'(?:\bnamespace(?:\s+\w+)?|\bextern\s+"[^"]*"|\b(?:struct|class|union|enum)\b[^;{}()]*|=)\s*$')


def _in_function(code: str, at: int) -> bool:
    """Whether offset *at* of *code* (comments and literals blanked) lies in a function body."""
    stack: list[bool] = []
    for m in re.finditer(r"[{}]", code[:at]):
        if m.group() == "}":
            if stack:
                stack.pop()
        else:
            stack.append((bool(stack) and stack[-1])
                         or not _NOT_CODE.search(code[max(0, m.start() - 200):m.start()]))
    return bool(stack) and stack[-1]


def _dynamic_shared(m: re.Match, local: bool) -> str:
    """The declaration that stands for one `extern __shared__ T name[];`. At namespace scope an
    alias of the block (an asm label); in a function a reference to it, since g++ drops the asm
    label of a block-scope extern inside a template (the `SharedMemory<T>` idiom)."""
    align, ctype, name = m.group(1), m.group(2).strip(), m.group(3)
    if local:
        bare = re.sub(_ALIGN, " ", ctype).strip()
        return f"{bare} (&{name})[] = *reinterpret_cast<{bare} (*)[]>(__mg_dynamic_smem);"
    return f'extern {align}{ctype} {name}[] __asm__("__mg_dynamic_smem") __attribute__((visibility("hidden")));'


def entry_symbol(kernel: str) -> str:
    """Name of the shim the runner calls for `kernel`: a template's instantiation (`sgemm<32, 8>`)
    becomes an identifier, made unique by a hash of how the launch block normalised it."""
    if kernel.isidentifier():
        return f"__mg_entry_{kernel}"
    word = re.sub(r"\W+", "_", kernel).strip("_")
    return f"__mg_entry_{word}_{hashlib.sha256(kernel.encode()).hexdigest()[:12]}"


def translation_unit(submission: Submission) -> str:
    """The complete C++ text for g++ (the emulation header comes in through `-include`, what the
    runner calls at load time is linked in from `toolchain.context_object`)."""
    body = ALLOWED_INCLUDE_LINE.sub("", submission.device_text)
    code = strip_comments_and_strings(body)
    body = _EXTERN_SHARED.sub(lambda m: _dynamic_shared(m, _in_function(code, m.start())), body)
    kernels = sorted({launch.kernel for launch in submission.launches})
    thread_ends = " __mg_pipeline_thread_ends();" if _PIPELINE.search(code) else ""
    shims = "".join(
        f'extern "C" __attribute__((visibility("default"))) void {entry_symbol(k)}(void** a) '
        f"{{ __mg_call({k}, a);{thread_ends} }}\n" for k in kernels)
    return f'{_PROLOGUE}#line 1 "submission.cu"\n{body}\n#line 1 "mutagym-generated"\n{shims}'
