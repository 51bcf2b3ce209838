"""A mistake on the command line is one line on stderr naming the flag and the value, with the
closest names, and exit status 2; a traceback only with --debug. Real `python -m mutagym` runs."""

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

import mutagym.substrates
from mutagym.cli import build_parser

RELU = str(Path(mutagym.substrates.__file__).parent / "relu" / "substrate.cu")


def mutagym(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mutagym", *args], capture_output=True, text=True, timeout=300)


def one_line_error(*args: str) -> str:
    """stderr of a run that must fail as a usage error: exit 2, one line, no traceback."""
    proc = mutagym(*args)
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-1000:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


MISTAKES = {
    "problem": (["run", RELU, "--problem", "relux"],
                "mutagym run: error: --problem 'relux': no such problem; did you mean 'relu', 'elu' or 'selu'?"),
    "generator": (["run", RELU, "--problem", "relu", "--generator", "normall"],
                  "mutagym run: error: --generator 'normall': no such generator; did you mean 'normal'?"),
    "shape preset": (["run", RELU, "--problem", "relu", "--shape", "offical"],
                     "mutagym run: error: --shape 'offical': no such shape preset of relu; did you mean 'official'?"),
    "shape class": (["run", RELU, "--problem", "relu", "--shape", "@mod4_9"],
                    "mutagym run: error: --shape '@mod4_9': no such shape class; did you mean "),
    "shape class of another problem": (["run", RELU, "--problem", "relu", "--shape", "@many_rows"],
                                       "mutagym run: error: --shape '@many_rows': no such shape class of relu; "
                                       "known: @odd, @mod4_1"),
    "thread order": (["run", RELU, "--problem", "relu", "--schedule", "random"],
                     "mutagym run: error: --schedule 'random': no such thread order; expected ascending, "
                     "descending or shuffled[:SEED]"),
    "missing kernel": (["run", "no/such/kernel.cu", "--problem", "relu"],
                       "mutagym run: error: KERNEL 'no/such/kernel.cu': no such file"),
    "missing flag": (["run", RELU],
                     "mutagym run: error: the following arguments are required: --problem "
                     "(`mutagym run --help` lists the flags)"),
    "misspelled flag": (["run", RELU, "--problme", "relu"],
                        "mutagym run: error: flag '--problme': no such flag; did you mean '--problem'?"),
    "bad integer": (["run", RELU, "--problem", "relu", "--seed", "x"],
                    "mutagym run: error: argument --seed: invalid int value: 'x' (`mutagym run --help` lists the flags)"),
    "command": (["hardn"], "mutagym: error: COMMAND 'hardn': no such command; did you mean 'harden'?"),
    "prompt problem": (["prompt", "layernrom"],
                       "mutagym prompt: error: PROBLEM 'layernrom': no such problem; did you mean 'layernorm'"),
    "problem glob": (["problems", "--problems", "relu,nope*"],
                     "mutagym problems: error: --problems 'nope*' matches no problem of the catalog "
                     "(`mutagym problems` lists them)"),
    "checker preset": (["eval", "--checker", "kernelbnch", "--problem", "relu", RELU],
                       "mutagym eval: error: --checker 'kernelbnch': no such checker; did you mean 'kernelbench'"),
    "checker file": (["eval", "--checker", "no/such/checker.json", "--problem", "relu", RELU],
                     "mutagym eval: error: --checker 'no/such/checker.json': no such file"),
    "missing submission": (["eval", "--problem", "relu", "missing.cu"],
                           "mutagym eval: error: FILE 'missing.cu': no such file"),
    "ray flag without prescreen": (["eval", "--problem", "relu", "--num-cpus", "2", RELU],
                                   "mutagym eval: error: --num-cpus needs --prescreen (only the prescreen runs on Ray)"),
    "kernels without problem": (["audit", "kernelbench", "fuzz", "--killmatrix", ".", "--kernels", RELU],
                                "mutagym audit: error: --kernels needs --problem (the problem the kernels are "
                                "written for)"),
    "missing kill matrix": (["audit", "kernelbench", "fuzz", "--killmatrix", "no/such/km"],
                            "mutagym audit: error: --killmatrix 'no/such/km': no such folder "
                            "(`mutagym killmatrix --out DIR` writes one)"),
    "not a kill matrix": (["audit", "kernelbench", "fuzz", "--killmatrix", "."],
                          "mutagym audit: error: --killmatrix '.': "),
    "shape presets": (["harden", "--quick", "--shape-presets", "officil"],
                      "mutagym harden: error: --shape-presets 'officil': no such shape preset; did you mean 'official'?"),
    "shape classes": (["killmatrix", "--problems", "relu", "--shape-classes", "mod4_1,tiiny"],
                      "mutagym killmatrix: error: --shape-classes 'tiiny': no such shape class; did you mean 'tiny'"),
    "generators": (["killmatrix", "--problems", "relu", "--generators", "uniform01,sign-mixed"],
                   "mutagym killmatrix: error: --generators 'sign-mixed': no such generator; did you mean 'sign_mixed'"),
    "seeds": (["harden", "--seeds", "0,one"],
              "mutagym harden: error: --seeds '0,one': not a comma-separated list of integers"),
    "budget": (["harden", "--quick", "--budget", "0"], "mutagym harden: error: --budget 0: must be at least 1"),
    "mutant id": (["mutant", "0123456789abcdef"],
                  "mutagym mutant: error: ID '0123456789abcdef': no mutant of that id; ids are 16 hex digits"),
    "dataset problems": (["dataset", "--problems", "relu,nope*"],
                         "mutagym dataset: error: --problems 'nope*' matches no problem of the catalog"),
}


@pytest.mark.parametrize("case", sorted(MISTAKES))
def test_a_mistake_is_one_line_naming_flag_and_value(case):
    args, expected = MISTAKES[case]
    assert one_line_error(*args).startswith(expected)


def test_the_old_presets_flag_still_works_and_warns():
    """`harden --presets` is `--shape-presets` under its old name: a warning line, then the same check."""
    proc = mutagym("harden", "--quick", "--presets", "officil")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [
        "mutagym harden: warning: --presets is deprecated, use --shape-presets",
        "mutagym harden: error: --shape-presets 'officil': no such shape preset; did you mean 'official'?"]


def test_debug_shows_the_traceback():
    proc = mutagym("run", RELU, "--problem", "relux", "--debug")
    assert proc.returncode != 0
    assert proc.stderr.startswith("Traceback") and "UsageError: --problem 'relux'" in proc.stderr


def test_a_failure_of_mutagym_itself_is_one_line_with_exit_3(tmp_path):
    """Writing the dataset under a path that is a file fails inside mutagym: exit 3, one line that
    names the error and says how to see the traceback."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = mutagym("dataset", "--problems", "relu", "--out", str(blocker / "sub"))
    assert proc.returncode == 3, proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("mutagym dataset: internal error: ") and line.endswith(
        "(run it again with --debug for the traceback)")
    assert not (blocker / "sub").exists()


def test_version_comes_from_the_package_metadata():
    from importlib.metadata import version
    proc = mutagym("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"mutagym {version('mutagym')}"


def subcommands() -> dict[str, argparse.ArgumentParser]:
    [sub] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_flag_has_help_and_a_default(name):
    """Every flag says what it does, and what happens without it: a shown default, the default in
    words, `required`, or an on/off switch."""
    parser = subcommands()[name]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        flag = "/".join(action.option_strings) or action.dest
        assert action.help, f"mutagym {name} {flag}: no help text"
        if not action.option_strings or isinstance(action, argparse._StoreTrueAction):
            continue
        shown = parser._get_formatter()._get_help_string(action)
        assert "default" in shown or action.required, f"mutagym {name} {flag}: no default shown"
        assert "(required)" in shown if action.required else True, f"mutagym {name} {flag}"


@pytest.mark.parametrize("name", ["mutate", "killmatrix", "harden", "dataset"])
def test_outputs_go_under_out_by_default(name):
    out = next(a for a in subcommands()[name]._actions if a.dest == "out")
    assert Path(out.default).parts[0] == "out", (name, out.default)


def test_help_of_a_subcommand_shows_defaults_and_exit_status():
    proc = mutagym("mutate", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "(default: out/mutants)" in text and "(default: 2)" in text
    assert "2 a mistake on the command line" in text
