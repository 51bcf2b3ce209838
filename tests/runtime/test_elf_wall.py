"""The object wall (`elf_check.check_kernel_object`) on its own, past the source checks.

The source checks refuse the attributes and keywords these objects are built from, so to show that
the object wall holds by itself the translation units here go straight to `build_kernel` (the
emulation header is still force-included), or a good object is patched by hand in a copy. Each
hostile object is one the dynamic linker would act on inside `dlopen`, before the sandbox is up,
or one that carries machine code outside the compiled functions, or one too big to keep.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

import mutagym.runtime.cpu_backend as cpu_backend
from mutagym.runtime import SubmissionError, compile, parse_submission
from mutagym.runtime.elf_check import (
    EXIT_HOOKS,
    MAX_OBJECT_BYTES,
    MAX_STATIC_DATA_BYTES,
    check_kernel_object,
    static_shared_bytes,
)
from mutagym.runtime.toolchain import build_kernel
from mutagym.runtime.translate import translation_unit
from mutagym.substrates import list_problems, load_problem
from submission_text import launch, submission

ONE_D = launch("k", ["ceil_div(n, 128)"], [128], ["x", "out", "n"])
KERNEL = ('extern "C" __global__ void k(const float* x, float* out, int n) {\n'
          "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
          "    if (i < n) out[i] = BODY;\n"
          "}\n")
#: A normal kernel: a __shared__ array, a barrier, a math-library call, a pointer table (RELATIVE
#: relocations) and a __constant__ table.
GOOD = submission("""\
    __constant__ float weights[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    __device__ float a[4], b[4];
    __device__ float* tables[2] = {a, b};
    extern "C" __global__ void k(const float* x, float* out, int n) {
        __shared__ float tile[128];
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        tile[threadIdx.x] = i < n ? x[i] : 0.0f;
        __syncthreads();
        if (i < n) out[i] = expf(tile[threadIdx.x]) * weights[i & 3] + tables[i & 1][0];
    }
""", ONE_D)


def unit(prelude: str, body: str = "x[i]") -> str:
    """A translation unit (no source checks, no runner context: so no blockIdx) with *prelude*
    before a function writing *body*."""
    return (prelude + 'extern "C" __attribute__((visibility("default"))) void k(const float* x, float* out, int n) {\n'
            f"    for (int i = 0; i < n; i++) out[i] = {body};\n}}\n")


def refused(tu: str, pattern: str) -> SubmissionError:
    """Build *tu* and assert the object wall refuses it with a message matching *pattern*."""
    path = build_kernel(tu)
    try:
        with pytest.raises(SubmissionError, match=pattern) as info:
            check_kernel_object(path)
    finally:
        if path.stat().st_size > 1 << 20:
            path.unlink()  # keep the compile cache small
    message = str(info.value)
    assert "/" not in message.replace("/*", ""), "the message names no host path"
    return info.value


@pytest.fixture(scope="module")
def good_object() -> bytes:
    path = build_kernel(translation_unit(parse_submission(GOOD)))
    check_kernel_object(path)
    return path.read_bytes()


def patched(tmp_path: Path, data: bytes | bytearray, name: str = "patched.so") -> Path:
    path = tmp_path / name
    path.write_bytes(bytes(data))
    return path


# --------------------------------------------------------------- a small ELF reader for the patches

def program_headers(data) -> list[tuple[int, list]]:
    """(file offset of the header, [type, flags, offset, vaddr, paddr, filesz, memsz, align])."""
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phnum, = struct.unpack_from("<H", data, 0x38)
    return [(phoff + 56 * i, list(struct.unpack_from("<IIQQQQQQ", data, phoff + 56 * i))) for i in range(phnum)]


def section_list(data) -> list[tuple[str, int, list]]:
    """(name, file offset of the header, [name, type, flags, addr, offset, size, link, info, align,
    entsize]) of every section, in index order."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", data, 0x3C)
    headers = [(shoff + 64 * i, list(struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * i))) for i in range(shnum)]
    names = headers[shstrndx][1][4]
    return [(bytes(data[names + h[0]:data.index(b"\0", names + h[0])]).decode(), at, h) for at, h in headers]


def sections(data) -> dict[str, tuple[int, list]]:
    """name -> (file offset of the header, its fields as in `section_list`)."""
    return {name: (at, h) for name, at, h in section_list(data)}


def dynamic_entries(data) -> list[tuple[int, int, int]]:
    """(file offset, tag, value) of every entry of the dynamic section, padding included."""
    _, h = next((at, h) for at, h in program_headers(data) if h[0] == 2)
    return [(h[2] + 16 * i, *struct.unpack_from("<qQ", data, h[2] + 16 * i)) for i in range(h[5] // 16)]


def spare_null(data) -> int:
    """File offset of a DT_NULL that is not the terminator (the linker leaves padding)."""
    nulls = [at for at, tag, _ in dynamic_entries(data) if tag == 0]
    assert len(nulls) >= 2, "the normal build leaves spare DT_NULL entries to patch"
    return nulls[0]


def symbol_offset(data, table: str, name: str) -> int:
    """File offset of the symbol *name* in *table* (.dynsym or .symtab)."""
    _, h = sections(data)[table]
    strings = section_list(data)[h[6]][2]
    for i in range(h[5] // 24):
        st_name, = struct.unpack_from("<I", data, h[4] + 24 * i)
        end = data.index(b"\0", strings[4] + st_name)
        if bytes(data[strings[4] + st_name:end]).decode() == name:
            return h[4] + 24 * i
    raise LookupError(name)


# ================================================================ accepted

def test_a_normal_kernel_passes(good_object, tmp_path):
    path = patched(tmp_path, good_object)
    check_kernel_object(path)
    assert static_shared_bytes(path) == 128 * 4


CATALOG = [(pid, name) for pid in list_problems() for name in load_problem(pid).kernel_sources()]


@pytest.mark.parametrize("pid,name", CATALOG, ids=[f"{p}-{n}" for p, n in CATALOG])
def test_every_catalog_kernel_passes(pid, name):
    """Every substrate and variant: the wall refuses nothing a normal build makes."""
    text = load_problem(pid).kernel_sources()[name]
    check_kernel_object(build_kernel(translation_unit(parse_submission(text))))


# ================================================================ code the loader would run

def test_ifunc_symbol():
    """An exported ifunc: its resolver runs when the symbol is bound or looked up."""
    refused(unit('extern "C" { static void* pick(void) { return 0; }\n'
                 '__attribute__((visibility("default"))) void f(void) __attribute__((ifunc("pick"))); }\n'),
            r"the kernel's object has an ifunc symbol 'f' \(code that runs when it is loaded")


def test_irelative_relocation():
    """A local ifunc called through a pointer: an IRELATIVE relocation runs its resolver in dlopen."""
    refused(unit('extern "C" { static int impl(void) { return 1; }\n'
                 "static void* pick(void) { return (void*)impl; }\n"
                 'static int g(void) __attribute__((ifunc("pick"))); }\n'
                 "int (*volatile gp)(void) = g;\n", "gp()"),
            r"has an IRELATIVE relocation \(an ifunc resolver: code that runs when it is loaded\)")


def test_destructor_attribute():
    refused(unit("static volatile int flag;\n"
                 "__attribute__((destructor)) static void late(void) { flag = 1; }\n"),
            r"has a \.fini_array section \(code that runs when it is unloaded or at exit\)")


def test_constructor_attribute():
    refused(unit("static volatile int flag;\n"
                 "__attribute__((constructor)) static void early(void) { flag = 1; }\n"),
            r"has a \.init_array section \(code that runs when it is loaded\)")


DSO_HANDLE = 'extern "C" { __attribute__((visibility("hidden"))) void* __dso_handle = &__dso_handle; }\n'


def test_static_object_with_a_destructor():
    """Its destructor is registered with __cxa_atexit from a load-time initialiser."""
    refused(unit(DSO_HANDLE + "struct S { int v; ~S() { v = 0; } };\nS s;\n"),
            r"\.init_array section|'__cxa_atexit'")


def test_thread_local_with_a_destructor():
    refused(unit(DSO_HANDLE + "struct S { int v; ~S() { v = 0; } };\nthread_local S s;\n", "x[i] + s.v"),
            r"thread-local storage")


@pytest.mark.parametrize("name", ["__cxa_atexit", "__cxa_thread_atexit_impl", "atexit", "__tls_get_addr"])
def test_exit_and_tls_hooks_are_refused(name):
    """How destructors and TLS destructors register: refused by name, with a reason."""
    assert name in EXIT_HOOKS
    refused(unit(f'extern "C" int {name}(...);\n', f"(float){name}(0, 0, 0)"),
            rf"the kernel references '{name}', which registers code to run at exit")


def test_dynamic_tag_injected_from_source():
    """`section(".dynamic")` lets a source add dynamic tags: the loader would run DT_INIT."""
    refused(unit('__attribute__((section(".dynamic"), used)) unsigned long extra[2] = {12, 0x1000};\n'),
            r"has a DT_INIT dynamic tag \(code that runs when it is loaded\)")


# ================================================================ machine code without asm

def test_function_in_another_executable_section():
    refused(unit('__attribute__((section("payload"))) int f(int v) { return v + 1; }\n', "x[i] + f(i)"),
            r"has an executable section 'payload' \(only compiled functions in \.text may run")


def test_writable_and_executable_section():
    """The `#` trick sets any section flags: "awx" makes a writable and executable segment."""
    refused(unit('__attribute__((section(".x,\\"awx\\",@progbits#"))) unsigned char code[] = {0x0f, 0x05, 0xc3};\n',
                 "((float(*)(void))code)()"),
            r"has a segment that is both writable and executable")


def test_data_inside_text():
    """Bytes placed in .text itself (no extra section) are found by their symbol's type."""
    refused(unit('__attribute__((section(".text"))) const unsigned char code[] = {0x0f, 0x05, 0xc3};\n',
                 "((float(*)(void))code)()"),
            r"has data '_ZL4code' inside its executable section \.text \(bytes placed there could run as "
            r"machine code without any asm\)")


def test_executable_stack():
    refused(unit('__attribute__((section(".note.GNU-stack,\\"x\\",@progbits#"))) int mark;\n'),
            r"asks for an executable stack")


# ================================================================ sizes

def test_half_a_gigabyte_of_zeros():
    """A zero-initialised __device__ array is .bss: no file bytes, but 512 MiB mapped at load."""
    refused(unit("__device__ char big[512u << 20];\n", "x[i] + big[i]"),
            rf"has 5369\d{{5}} bytes \(512\.0 MiB\) of static data \(\.data and \.bss: global and __device__ "
            rf"arrays\); at most {MAX_STATIC_DATA_BYTES} bytes \(16\.0 MiB\) are allowed")


def test_twenty_megabytes_of_initialised_data():
    refused(unit("__device__ char big[20u << 20] = {1};\n", "x[i] + big[i]"),
            rf"the kernel's object is 2\d+ bytes \(20\.0 MiB\); at most {MAX_OBJECT_BYTES} bytes \(16\.0 MiB\)")


def test_a_refused_object_leaves_the_compile_cache(monkeypatch):
    built = []

    def recording(tu, *args, **kwargs):
        built.append(build_kernel(tu, *args, **kwargs))
        return built[-1]

    monkeypatch.setattr(cpu_backend, "build_kernel", recording)
    source = submission("__device__ char big[512u << 20];\n" + KERNEL.replace("BODY", "x[i] + big[i]"), ONE_D)
    with pytest.raises(SubmissionError, match=r"of static data"):
        compile(source, backend="cpu")
    assert built and not built[0].exists()


# ================================================================ hand-patched objects

def test_truncated_object(good_object, tmp_path):
    for cut in [0, 3, 16, 63, 64, 64 + 56 * 3, len(good_object) // 2, len(good_object) - 64, len(good_object) - 1]:
        with pytest.raises(SubmissionError, match=r"the kernel's object is malformed or truncated"):
            check_kernel_object(patched(tmp_path, good_object[:cut]))


def test_every_cut_and_flip_is_refused_or_passes_cleanly(good_object, tmp_path):
    """Parse defensively: no cut or byte flip makes the check fail with anything but SubmissionError."""
    for cut in range(0, len(good_object), 97):
        with pytest.raises(SubmissionError):
            check_kernel_object(patched(tmp_path, good_object[:cut]))
    rng = random.Random(13)
    headers = [at for at, _ in program_headers(good_object)] + [at for _, at, _ in section_list(good_object)]
    hot = [at + k for at in headers for k in range(56)] + list(range(64)) + \
        [at + k for at, *_ in dynamic_entries(good_object) for k in range(16)]
    for _ in range(1500):
        data = bytearray(good_object)
        for _ in range(rng.randint(1, 3)):
            data[rng.choice(hot) % len(data)] = rng.randrange(256)
        try:
            check_kernel_object(patched(tmp_path, data))
        except SubmissionError:
            pass


def test_dt_init_patched_into_the_dynamic_section(good_object, tmp_path):
    """No section name says so, only the tag: the loader would call DT_INIT inside dlopen."""
    data = bytearray(good_object)
    text = sections(data)[".text"][1]
    struct.pack_into("<qQ", data, spare_null(data), 12, text[3])
    with pytest.raises(SubmissionError, match=r"has a DT_INIT dynamic tag \(code that runs when it is loaded\)"):
        check_kernel_object(patched(tmp_path, data))


@pytest.mark.parametrize("tag,value,pattern", [
    (13, 0x1000, r"DT_FINI dynamic tag \(code that runs when it is unloaded or at exit\)"),
    (25, 0x1000, r"DT_INIT_ARRAY dynamic tag"),
    (27, 8, r"DT_INIT_ARRAYSZ dynamic tag"),
    (26, 0x1000, r"DT_FINI_ARRAY dynamic tag"),
    (28, 8, r"DT_FINI_ARRAYSZ dynamic tag"),
    (32, 0x1000, r"DT_PREINIT_ARRAY dynamic tag"),
    (33, 8, r"DT_PREINIT_ARRAYSZ dynamic tag"),
    (22, 0, r"DT_TEXTREL dynamic tag \(the loader would make its code writable\)"),
    (15, 0, r"DT_RPATH dynamic tag \(it changes where the loader finds libraries\)"),
    (29, 0, r"DT_RUNPATH dynamic tag"),
    (0x6FFFFEFC, 0, r"DT_AUDIT dynamic tag \(the loader would load an auditing library\)"),
    (0x6FFFFEFB, 0, r"DT_DEPAUDIT dynamic tag"),
    (0x7FFFFFFF, 0, r"DT_FILTER dynamic tag \(the loader would load another library\)"),
    (0x7FFFFFFD, 0, r"DT_AUXILIARY dynamic tag"),
    (30, 0x4, r"DF_TEXTREL in DT_FLAGS"),
    (30, 0x10, r"DF_STATIC_TLS in DT_FLAGS \(thread-local storage\)"),
    (0x6FFFFFFB, 0x20, r"unexpected DT_FLAGS_1 bits 0x20"),
    (1, 0, r"needs the library '' \(only the math library, libm\.so\.6, may be loaded"),
    (0x6000000F, 0, r"unexpected dynamic tag 0x6000000f \(the loader may act on it\)"),
    (6, 0, r"malformed or truncated: its dynamic section repeats the tag DT_SYMTAB"),
])
def test_dynamic_tags(good_object, tmp_path, tag, value, pattern):
    data = bytearray(good_object)
    struct.pack_into("<qQ", data, spare_null(data), tag, value)
    with pytest.raises(SubmissionError, match=pattern):
        check_kernel_object(patched(tmp_path, data))


def test_dynamic_section_without_terminator(good_object, tmp_path):
    data = bytearray(good_object)
    for at, tag, _ in dynamic_entries(data):
        if tag == 0:
            struct.pack_into("<qQ", data, at, 0x6FFFFFF9, 0)  # DT_RELACOUNT: benign, but never ends
    with pytest.raises(SubmissionError, match=r"malformed or truncated: .*(terminating DT_NULL|repeats)"):
        check_kernel_object(patched(tmp_path, data))


def _segment(data, ptype):
    return next((at, h) for at, h in program_headers(data) if h[0] == ptype)


@pytest.mark.parametrize("change,pattern", [
    ("note->interp", r"names a program interpreter \(PT_INTERP\)"),
    ("note->tls", r"has a thread-local storage segment \(PT_TLS\)"),
    ("stack->null", r"has no PT_GNU_STACK header \(the loader would make the stack executable\)"),
    ("stack+x", r"asks for an executable stack"),
    ("rw-load+x", r"has a segment that is both writable and executable"),
    ("text-load+w", r"has a segment that is both writable and executable"),
    ("note->shlib", r"has a program header of unexpected type 0x5"),
    ("bss+1gib", r"of static data .* at most 16777216 bytes"),
    ("dynamic->null", r"malformed or truncated: it has 0 PT_DYNAMIC headers"),
])
def test_program_headers(good_object, tmp_path, change, pattern):
    data = bytearray(good_object)
    if change.startswith("note->"):
        at, h = _segment(data, 4)
        h[0] = {"interp": 3, "tls": 7, "shlib": 5}[change[6:]]
    elif change.startswith("stack"):
        at, h = _segment(data, 0x6474E551)
        if change == "stack->null":
            h[0] = 0
        else:
            h[1] |= 1
    elif change == "dynamic->null":
        at, h = _segment(data, 2)
        h[0] = 0
    else:
        loads = [(at, h) for at, h in program_headers(data) if h[0] == 1]
        if change == "text-load+w":
            at, h = next((at, h) for at, h in loads if h[1] & 1)
            h[1] |= 2
        else:
            at, h = next((at, h) for at, h in loads if h[1] & 2)
            if change == "rw-load+x":
                h[1] |= 1
            else:
                h[6] += 1 << 30
    struct.pack_into("<IIQQQQQQ", data, at, *h)
    with pytest.raises(SubmissionError, match=pattern):
        check_kernel_object(patched(tmp_path, data))


@pytest.mark.parametrize("table,kind,pattern", [
    (".dynsym", 10, r"has an ifunc symbol '__mg_entry_k' \(code that runs when it is loaded"),
    (".symtab", 10, r"has an ifunc symbol '__mg_entry_k'"),
    (".dynsym", 6, r"has a thread-local symbol '__mg_entry_k' \(thread-local storage\)"),
    (".symtab", 1, r"has data '__mg_entry_k' inside its executable section \.text"),
])
def test_symbol_types(good_object, tmp_path, table, kind, pattern):
    """Patched symbol types, each table on its own: the check reads both."""
    data = bytearray(good_object)
    at = symbol_offset(data, table, "__mg_entry_k")
    data[at + 4] = (data[at + 4] & 0xF0) | kind
    with pytest.raises(SubmissionError, match=pattern):
        check_kernel_object(patched(tmp_path, data))


def _relocation(data) -> int:
    _, h = sections(data)[".rela.dyn"]
    return h[4]


@pytest.mark.parametrize("change,pattern", [
    ("type=37", r"has an IRELATIVE relocation \(an ifunc resolver"),
    ("type=16", r"has a thread-local storage relocation \(type 16\)"),
    ("type=5", r"has a COPY relocation"),
    ("type=2", r"has a relocation of unexpected type 2 \(allowed: R_X86_64_64, R_X86_64_GLOB_DAT"),
    ("into-text", r"has a relocation that writes to read-only memory at 0x[0-9a-f]+ \(a text relocation"),
    ("symbol=9999", r"malformed or truncated: a relocation names a symbol past the dynamic symbols"),
])
def test_relocations(good_object, tmp_path, change, pattern):
    data = bytearray(good_object)
    if struct.unpack_from("<H", data, 0x12)[0] != 62:
        pytest.skip("the patched types are x86-64's")
    at = _relocation(data)
    where, info, addend = struct.unpack_from("<QQq", data, at)
    if change.startswith("type="):
        info = (info & ~0xFFFFFFFF) | int(change[5:])
    elif change == "into-text":
        where = sections(data)[".text"][1][3]
    else:
        info = (9999 << 32) | (info & 0xFFFFFFFF)
    struct.pack_into("<QQq", data, at, where, info, addend)
    with pytest.raises(SubmissionError, match=pattern):
        check_kernel_object(patched(tmp_path, data))


@pytest.mark.parametrize("change,pattern", [
    ("eh_frame+x", r"has an executable section '\.eh_frame'"),
    ("comment->init_array", r"has a section '\.comment' \(code that runs when it is loaded\)"),
    ("comment+tls", r"has a section '\.comment' \(thread-local storage\)"),
])
def test_section_headers(good_object, tmp_path, change, pattern):
    """The second check, on section headers alone (the loader would not notice these)."""
    data = bytearray(good_object)
    name = change.split("+")[0].split("->")[0]
    at, h = sections(data)["." + name]
    if change == "eh_frame+x":
        h[2] |= 0x4
    elif change == "comment->init_array":
        h[1] = 14
    else:
        h[2] |= 0x400
    struct.pack_into("<IIQQQQIIQQ", data, at, *h)
    with pytest.raises(SubmissionError, match=pattern):
        check_kernel_object(patched(tmp_path, data))
