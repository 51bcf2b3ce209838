"""The command line's tables keep every word of a message (a cell wraps; it never cuts a word)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import mutagym.substrates

RELU = Path(mutagym.substrates.__file__).parent / "relu" / "substrate.cu"


def mutagym(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mutagym", *args], capture_output=True, text=True, timeout=300)


def test_eval_table_wraps_a_long_message_whole(tmp_path):
    """A refused header gives a message of over 120 characters (it lists the allowed headers);
    the table shows all of its words."""
    kernel = tmp_path / "k.cu"
    kernel.write_text("#include <iostream>\n" + RELU.read_text())
    args = ("eval", "--checker", "kernelbench", "--problem", "relu", str(kernel))
    [record] = json.loads(mutagym(*args, "--json").stdout)
    message = record["message"]
    assert len(message) > 120, message          # the old table cut a message at 120 characters
    proc = mutagym(*args)
    assert proc.returncode == 1, proc.stderr
    shown = set(re.sub(r"[│┃┏┓┗┛┡┩└┘━─┳┻╇┴┼]", " ", proc.stdout).split())
    missing = [word for word in message.split() if word not in shown]
    assert not missing, (missing, proc.stdout)
