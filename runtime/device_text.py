"""The one text both compilers compile: the submission as the preprocessor left it.

A submission's directives (`#if`, `#define`, ...) are resolved once, by the preprocessing check
(`preprocessed.check_preprocessed`: g++ -E with neither the emulator's headers nor NVRTC's, only
empty stubs), and its output is what NVRTC and the emulator's g++ then compile. So no macro of the
submission survives into either build: it cannot test, undefine or redefine a name the emulator's
headers define (`#ifdef printf`, `#define thread_idx ...`), nor rewrite code generated after it
(`#define return ...`), and the gate and the run judge the same tokens.

This module reads that output and writes the device text. g++ -E prints its own lines at column
0 (line markers `# 12 "submission.cu"`, `#pragma` lines, `-dU`'s `#define`/`#undef`); the text's
tokens never start a line with `#` there (g++ indents a `#` a macro produced), so a text could
forge a line of g++'s only inside a token that spans lines: a raw string literal, the one such
token of the output. One is refused, as is a line whose first token is `#` or `%:` (the compilers
would read it as a directive), a stray backslash (a line splice for the compilers) and a line
marker that renames the text (`#line 5 "include/cuda_fp16.h"`). Line attribution then comes only
from g++'s markers, and every line the text produced is checked, whatever a marker says.

`#pragma unroll N` keeps its arguments unexpanded in g++'s output, but the compilers read it after
the text's macros are gone; so before preprocessing each such directive becomes a sentinel word
(`mark_pragmas`, with a nonce the text cannot know) that g++ expands like code, and the sentinel
line becomes the pragma again here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import SubmissionError

__all__ = ["Output", "Token", "mark_pragmas", "read_output", "tokens_of"]

#: A raw string's opening, an ordinary string or character literal (closed on its line), a
#: pp-number, an identifier, blanks, a digraph (`<::` is `<` `::` unless `:` or `>` follows, as in
#: C++11), any other character.
_TOKEN = re.compile(r"""
      (?P<raw>(?:u8|[uUL])?R"(?P<delim>[^ ()\\\t\v\f\n]{0,16})\()
    | (?P<str>(?:u8|[uUL])?"(?:\\.|[^"\\\n])*")
    | (?P<chr>(?:u8|[uUL])?'(?:\\.|[^'\\\n])*')
    | (?P<num>\.?\d(?:[eEpP][+-]|'\w|[\w.])*)
    | (?P<ident>(?:[^\W\d]|\$)[\w$]*)
    | (?P<blank>\s+)
    | (?P<digraph>%:%:|%:|<:(?!:(?:[^:>]|$))|:>|<%|%>)
    | (?P<punct>\S)
""", re.X)
_DIGRAPHS = {"%:%:": "##", "%:": "#", "<:": "[", ":>": "]", "<%": "{", "%>": "}"}
_MARKER = re.compile(r'^# (?P<line>\d+) "(?P<file>(?:[^"\\]|\\.)*)"(?P<flags>(?: \d)*)$')
_DEFINED = re.compile(r"^#(?P<kind>define|undef) (?P<name>\w+)")
_PRAGMA_DIRECTIVE = re.compile(r"(?m)^(?P<indent>[ \t]*)#[ \t]*pragma[ \t]+(?P<word>(?:no)?unroll)\b")
_SOURCE = "submission.cu"


@dataclass(frozen=True)
class Token:
    """One token of the text's preprocessed lines: its submission *line*, its *text* (a digraph
    as the token it stands for: `<:<:` is `[[`), and its *kind* (`raw`, `str`, `chr`, `num`,
    `ident` or `punct`)."""

    line: int
    text: str
    kind: str


@dataclass
class Output:
    """What the preprocessor made of a text: every line the text produced, as (line, text), with
    its tokens; each macro `-dU` reports it consulted, as (line, name, defined); and the device
    text's body (those lines, a `#line` directive before the first and wherever the numbering
    jumps)."""

    lines: list[tuple[int, str]] = field(default_factory=list)
    tokens: list[Token] = field(default_factory=list)
    consulted: list[tuple[int, str, bool]] = field(default_factory=list)
    body: str = ""


def mark_pragmas(text: str, sentinel: str) -> str:
    """*text* with each `#pragma unroll` / `#pragma nounroll` directive line starting with
    *sentinel* + `_unroll` / `_nounroll` instead, so that the preprocessor expands its arguments.
    Lines and offsets of everything else stay put."""
    return _PRAGMA_DIRECTIVE.sub(lambda m: f"{m['indent']}{sentinel}_{m['word']}", text)


def tokens_of(text: str, line: int) -> list[Token]:
    """The tokens of one line of preprocessed output; SubmissionError (naming *line*) for a raw
    string literal that does not close on it, or a string or character literal left open."""
    found, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        kind, end = m.lastgroup, m.end()
        if kind == "raw":
            close = text.find(f'){m["delim"]}"', end)
            if close < 0:
                raise SubmissionError("a raw string literal may not span lines: its lines would reach "
                                      "the compilers as the preprocessor's own", line=line)
            end = close + len(m["delim"]) + 2
        elif kind == "punct" and m.group() in ("'", '"'):
            what = "character" if m.group() == "'" else "string"
            raise SubmissionError(f"an unterminated {what} literal", line=line)
        if kind == "digraph":
            found.append(Token(line, _DIGRAPHS[m.group()], "punct"))
        elif kind != "blank":
            found.append(Token(line, text[pos:end], kind))
        pos = end
    return found


def read_output(output: str, sentinel: str, files: frozenset[str]) -> Output:
    """Read g++ -E -dU's *output* for a text whose pragma sentinel is *sentinel*; *files* are the
    names a marker that enters or leaves a file may give (the text, the prelude, the stubs, all of
    which but the text print nothing). Raises SubmissionError for anything the compilers could
    read otherwise than the checks do."""
    result = Output()
    body: list[str] = []
    number, expected = 0, None
    for raw in output.split("\n"):
        marker = _MARKER.match(raw)
        if marker:
            number = int(marker["line"])
            if marker["file"] not in (files if marker["flags"] else (_SOURCE, "<built-in>", "<command-line>")):
                raise SubmissionError("the text renames its lines (#line or a line marker)", line=number)
            continue
        defined = _DEFINED.match(raw)
        if defined:
            result.consulted.append((number, defined["name"], defined["kind"] == "define"))
        elif raw.strip():
            line = _device_line(raw, number, sentinel, result)
            if number != expected:
                body.append(f"#line {number}")
            body.append(line)
            expected = number + 1
        number += 1
    result.body = "\n".join(body) + "\n"
    return result


def _device_line(raw: str, number: int, sentinel: str, result: Output) -> str:
    """One line the text produced, checked and recorded in *result*: as it goes to the compilers."""
    tokens, line = tokens_of(raw, number), raw
    if any(t.text == "\\" for t in tokens):
        raise SubmissionError("a stray backslash: at the end of a line the compilers would join the "
                              "next line to it", line=number)
    if raw.startswith("#"):   # g++'s own: a pragma of the text, printed as it was written
        if not re.match(r"#pragma\b", raw):
            raise SubmissionError(f"'{raw[:60]}' is not allowed", line=number)
    elif tokens[0].text in ("#", "##"):
        written = re.match(r"\s*(%:%:|%:|##|#)", raw)[1]
        raise SubmissionError(f"a macro puts {written!r} at the start of a line: the compilers "
                              "would read a directive these checks never saw", line=number)
    elif tokens[0].text.startswith(sentinel):
        word = tokens[0].text.removeprefix(sentinel + "_")
        if word not in ("unroll", "nounroll"):
            raise SubmissionError(f"{tokens[0].text!r} is not allowed", line=number)
        line = f"#pragma {word}{raw[raw.index(tokens[0].text) + len(tokens[0].text):]}"
        tokens = [Token(number, "#", "punct"), Token(number, "pragma", "ident"),
                  Token(number, word, "ident"), *tokens[1:]]
    if any(t.text.startswith(sentinel) for t in tokens[1:]):
        raise SubmissionError("'#pragma unroll' must stand on a line of its own, outside a macro's "
                              "arguments", line=number)
    result.lines.append((number, " ".join(t.text for t in tokens)))
    result.tokens.extend(tokens)
    return line
