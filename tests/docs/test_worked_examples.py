"""The pages of docs/ hold worked examples, and these tests run them, so the pages cannot drift.

A fenced block is part of a page's example when its info string carries a mark after the
language (Markdown renderers show only the language):

* ```` ```toml file=square/problem.toml ```` : the block is written to that path, relative to
  a fresh folder, before the page's code runs;
* ```` ```python run ```` : the block runs, in page order, in one fresh Python process whose
  working folder is that folder (blocks share one namespace, as in a notebook).

Other blocks are illustrations and are not run. A failing block's traceback names the page and
the page's own line numbers.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
ROOT = DOCS.parent

_FENCE = re.compile(r"^(?P<fence>```+)(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S)

#: Runs each block with the page's name and line numbers, so a traceback points into the page.
DRIVER = """
import json, sys
namespace = {"__name__": "__main__"}
for origin, line, code in json.load(open(sys.argv[1])):
    exec(compile("\\n" * (line - 1) + code, origin, "exec"), namespace)
"""


def blocks(page: Path) -> list[tuple[str, list[str], str, int]]:
    """(language, marks, body, line of the body's first line) of every fenced block of `page`."""
    text = page.read_text()
    out = []
    for m in _FENCE.finditer(text):
        words = m["info"].split()
        line = text.count("\n", 0, m.start("body")) + 1
        out.append((words[0] if words else "", words[1:], m["body"], line))
    return out


def example(page: Path, root: Path = ROOT) -> tuple[dict[str, str], list[tuple[str, str, int]]]:
    """The files a page's example writes (path -> text) and its code blocks (origin, line, code);
    origins are the page's path relative to `root`."""
    files, code = {}, []
    origin = str(page.relative_to(root))
    for lang, marks, body, line in blocks(page):
        for mark in marks:
            if mark.startswith("file="):
                path = mark[len("file="):]
                if Path(path).is_absolute() or ".." in Path(path).parts:
                    raise ValueError(f"{origin}:{line}: file={path!r} must be a relative path inside the example")
                files[path] = body
            elif mark == "run":
                if lang != "python":
                    raise ValueError(f"{origin}:{line}: only python blocks can be marked `run`, not {lang!r}")
                code.append((origin, line, body))
            else:
                raise ValueError(f"{origin}:{line}: unknown mark {mark!r} (expected `run` or `file=PATH`)")
    return files, code


PAGES_WITH_EXAMPLES = [p for p in sorted(DOCS.glob("*.md")) if example(p)[1]]


def run_example(page: Path, folder: Path, root: Path = ROOT, timeout_s: float = 900) -> subprocess.CompletedProcess:
    """Write the page's files under `folder` and run its code blocks there in a fresh process."""
    files, code = example(page, root)
    for path, text in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    (folder / "_blocks.json").write_text(json.dumps(code))
    return subprocess.run([sys.executable, "-c", DRIVER, "_blocks.json"], cwd=folder, capture_output=True,
                          text=True, timeout=timeout_s)


@pytest.mark.parametrize("page", PAGES_WITH_EXAMPLES, ids=lambda p: p.name)
def test_worked_example_runs(page, tmp_path):
    """Every marked block of the page runs without an error (its own asserts included)."""
    proc = run_example(page, tmp_path)
    assert proc.returncode == 0, f"{page.name}'s example failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"


def test_the_how_to_pages_have_examples():
    """Each how-to page has a worked example that these tests run."""
    names = {p.name for p in PAGES_WITH_EXAMPLES}
    assert {"add-a-problem.md", "add-a-rule.md", "add-a-checker-preset.md",
            "add-a-trainer-integration.md", "how-to-feed-back-field-faults.md"} <= names, sorted(names)


def test_a_failing_block_names_the_page_and_line(tmp_path):
    """The harness can fail: an error in a block is reported with the page's name and line."""
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    page.write_text("# t\n\n```text file=data.txt\nhello\n```\n\n```python run\nx = open('data.txt').read()\n"
                    "```\n\n```python\nnot run\n```\n\n```python run\nassert x == 'bye\\n', x\n```\n")
    proc = run_example(page, tmp_path, root=tmp_path)
    assert proc.returncode != 0
    assert 'File "docs/page.md", line 16' in proc.stderr and "AssertionError: hello" in proc.stderr


def test_an_unknown_mark_is_refused(tmp_path):
    """A misspelled mark would silently skip a block: it is an error naming page and line."""
    page = tmp_path / "page.md"
    page.write_text("```python runn\nprint()\n```\n")
    with pytest.raises(ValueError, match=r"page.md:2: unknown mark 'runn'"):
        example(page, root=tmp_path)


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_links_stay_inside_the_repository(page):
    """Every relative link of a page names a file of the repository (nothing outside it)."""
    text = page.read_text()
    bad = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        if not path.is_relative_to(ROOT) or not path.exists():
            bad.append(target)
    assert not bad, f"{page.name}: links that leave the repository or name no file: {bad}"
