"""Launch expressions: the integer arithmetic allowed in `grid`, `block`, `shared_bytes` and `size`.

A submission is untrusted text, so expressions are tokenized and parsed by hand, never `eval`ed.
The grammar is deliberately small::

    expr  := term (("+" | "-") term)*
    term  := unary (("*" | "//" | "%") unary)*
    unary := "-" unary | atom
    atom  := INT | NAME | FUNC "(" expr ("," expr)* ")" | "(" expr ")"
    FUNC  := ceil_div | min | max

Values are Python ints, so `//` and `%` floor as in Python. Names are problem dims and integral
scalars, bound only when a run is resolved (`Expr.evaluate`).

A value argument for a `float` or `double` parameter (`args = ["1.0 / sqrt(d)"]`, host code's
`softmax_scale`) is a *real* expression (`parse_expression(..., real=True)`): the same grammar
plus decimal literals, true division `/` and `sqrt`, over dims and every scalar, evaluated in
Python floats (double precision).

>>> e = parse_expression("ceil_div(n, 256)", where="grid[0]")
>>> sorted(e.names), e.evaluate({"n": 1000})
(['n'], 4)
>>> parse_expression(256, where="block[0]").evaluate({})
256
"""

from __future__ import annotations

import difflib
import math
import operator
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NoReturn

from .errors import LaunchError, SubmissionError

#: Longer expressions are rejected: launch shapes are short, and a cap bounds parser recursion.
MAX_EXPRESSION_CHARS = 256
#: Deepest nesting of parentheses and calls.
MAX_NESTING = 32
#: Functions and how many arguments each takes (None: two or more).
FUNCTIONS = {"ceil_div": 2, "min": None, "max": None}
#: ... and those only a real expression has.
REAL_FUNCTIONS = {"sqrt": 1}

_TOKEN = re.compile(r"\s*(?:(?P<real>(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)|(?P<int>\d+)"
                    r"|(?P<name>[A-Za-z_]\w*)|(?P<op>//|[-+*/%(),])|(?P<bad>\S))")

# A parsed tree is one of: int | str (a name) | ("neg", node) | (op, node, node) with op in
# "+ - * // %" | ("call", func, (node, ...)). Plain tuples keep `Expr` hashable and picklable.
Node = int | str | tuple


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """Return " (did you mean 'x'?)" for the closest of *known* to *name*, or "" when none is close.

    >>> did_you_mean("rwos", ["rows", "cols"])
    " (did you mean 'rows'?)"
    """
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


@dataclass(frozen=True)
class Expr:
    """A parsed launch expression.

    *text* is the source text, *names* the names it reads, *where* and *line* say where it came
    from (for error messages); *root* is the parsed tree.
    """

    text: str
    names: frozenset[str]
    where: str
    line: int | None = None
    root: Node = field(default=0, repr=False)
    real: bool = False

    def __str__(self) -> str:
        return self.text

    def evaluate(self, env: Mapping[str, int | float]) -> int | float:
        """Compute the value with *env* binding every name; raise LaunchError on an unknown
        name, a zero divisor or (real) the square root of a negative number. An integer
        expression's names must be bound to integers, and its value is one."""
        return self._eval(self.root, env)

    def _eval(self, node: Node, env: Mapping[str, int | float]) -> int | float:
        match node:
            case int() | float():
                return node
            case str():
                if node not in env:
                    known = ", ".join(repr(k) for k in sorted(env)) or "none"
                    self._fail(f"unknown name {node!r} in {self.text!r}{did_you_mean(node, env)}; "
                               f"known names: {known}")
                return env[node] if self.real else operator.index(env[node])
            case ("neg", operand):
                return -self._eval(operand, env)
            case ("call", func, args):
                values = [self._eval(a, env) for a in args]
                if func == "ceil_div":
                    return -(-values[0] // self._divisor(values[1], env))
                if func == "sqrt":
                    if values[0] < 0:
                        self._fail(f"sqrt of {values[0]!r} in {self.text!r}")
                    return math.sqrt(values[0])
                return min(values) if func == "min" else max(values)
            case (op, left, right):
                a, b = self._eval(left, env), self._eval(right, env)
                if op == "+":
                    return a + b
                if op == "-":
                    return a - b
                if op == "*":
                    return a * b
                if op == "/":
                    return a / self._divisor(b, env)
                return a // self._divisor(b, env) if op == "//" else a % self._divisor(b, env)
        raise AssertionError(f"malformed expression tree {node!r}")

    def _divisor(self, value: int, env: Mapping[str, int]) -> int:
        if value == 0:
            bound = ", ".join(f"{n}={env[n]!r}" for n in sorted(self.names))
            self._fail(f"division by zero in {self.text!r}" + (f" with {bound}" if bound else ""))
        return value

    def _fail(self, message: str) -> NoReturn:
        raise LaunchError(message, where=self.where, line=self.line)


def parse_expression(text: str | int, *, where: str, line: int | None = None,
                     real: bool = False) -> Expr:
    """Parse *text* (a TOML string or int) into an `Expr`; raise SubmissionError naming *where*
    and *line* when it is not a valid launch expression (*real*: a real one).

    >>> parse_expression("1.0 / sqrt(d)", where="args[3]", real=True).evaluate({"d": 64})
    0.125

    >>> parse_expression("(n + 255) // 256", where="grid[0]").evaluate({"n": 257})
    2
    >>> try:
    ...     parse_expression("n / 2", where="grid[0]")
    ... except SubmissionError as err:
    ...     print(err)
    grid[0]: cannot parse 'n / 2' at column 3: '/' is not an operator; use '//' for floor division
    """
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise SubmissionError(f"expected an integer expression (a string or an int), got {text!r} "
                              f"({type(text).__name__})", where=where, line=line)
    source = str(text).strip()
    if len(source) > MAX_EXPRESSION_CHARS:
        raise SubmissionError(f"expression is {len(source)} characters long; at most "
                              f"{MAX_EXPRESSION_CHARS}: {source[:40]!r}...", where=where, line=line)
    parser = _Parser(source, where, line, real)
    root = parser.parse()
    return Expr(text=source, names=frozenset(parser.names), where=where, line=line, root=root,
                real=real)


class _Parser:
    """Recursive descent over the token list; one method per grammar rule."""

    def __init__(self, text: str, where: str, line: int | None, real: bool):
        self.text, self.where, self.line, self.real = text, where, line, real
        self.functions = {**FUNCTIONS, **REAL_FUNCTIONS} if real else FUNCTIONS
        self.names: set[str] = set()
        self.tokens: list[tuple[str, str, int]] = []  # (kind, text, column)
        for m in _TOKEN.finditer(text):
            kind = m.lastgroup
            self.tokens.append((kind, m.group(kind), m.start(kind) + 1))
        self.tokens.append(("end", "", len(text) + 1))
        self.pos = 0

    def parse(self) -> Node:
        if not self.text:
            self._fail("expression is empty", column=None)
        node = self._expr(0)
        if self.tokens[self.pos][0] != "end":
            self._unexpected("an operator")
        return node

    def _expr(self, depth: int) -> Node:
        node = self._term(depth)
        while self._peek() in ("+", "-"):
            op = self._take()
            node = (op, node, self._term(depth))
        return node

    def _term(self, depth: int) -> Node:
        node = self._unary(depth)
        while self._peek() in ("*", "//", "%") or (self.real and self._peek() == "/"):
            op = self._take()
            node = (op, node, self._unary(depth))
        return node

    def _unary(self, depth: int) -> Node:
        if self._peek() == "-":
            self._take()
            return ("neg", self._unary(depth + 1))
        return self._atom(depth)

    def _atom(self, depth: int) -> Node:
        if depth > MAX_NESTING:
            self._fail(f"nested more than {MAX_NESTING} levels deep", column=None)
        kind, tok, col = self.tokens[self.pos]
        if kind == "int":
            self._take()
            return int(tok)
        if kind == "real":
            if not self.real:
                self._fail(f"{tok!r} is not an integer; only a float or double parameter's value "
                           "takes a real number", column=col)
            self._take()
            return float(tok)
        if kind == "name":
            self._take()
            if self._peek() != "(":
                self.names.add(tok)
                return tok
            if tok not in self.functions:
                self._fail(f"unknown function {tok!r}{did_you_mean(tok, self.functions)}; "
                           f"allowed: {', '.join(self.functions)}", column=col)
            self._take()
            args = [self._expr(depth + 1)]
            while self._peek() == ",":
                self._take()
                args.append(self._expr(depth + 1))
            self._expect(")")
            arity = self.functions[tok]
            if (arity is not None and len(args) != arity) or (arity is None and len(args) < 2):
                wanted = f"exactly {arity}" if arity is not None else "at least 2"
                self._fail(f"{tok}() takes {wanted} arguments, got {len(args)}", column=col)
            return ("call", tok, tuple(args))
        if tok == "(":
            self._take()
            node = self._expr(depth + 1)
            self._expect(")")
            return node
        self._unexpected("a number, a name or '('")

    def _peek(self) -> str:
        kind, tok, _ = self.tokens[self.pos]
        return tok if kind == "op" else ""

    def _take(self) -> str:
        tok = self.tokens[self.pos][1]
        self.pos += 1
        return tok

    def _expect(self, op: str) -> None:
        if self._peek() != op:
            self._unexpected(repr(op))
        self._take()

    def _unexpected(self, wanted: str) -> NoReturn:
        kind, tok, col = self.tokens[self.pos]
        if tok == "/" and not self.real:
            self._fail("'/' is not an operator; use '//' for floor division", column=col)
        self._fail(f"expected {wanted} but found {'the end' if kind == 'end' else repr(tok)}",
                   column=col)

    def _fail(self, message: str, *, column: int | None) -> NoReturn:
        at = f" at column {column}" if column is not None else ""
        raise SubmissionError(f"cannot parse {self.text!r}{at}: {message}", where=self.where,
                              line=self.line)
