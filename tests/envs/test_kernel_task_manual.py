"""The environment's manual (the class docstring of `KernelTaskEnv`): its examples run and pass,
none is skipped, and it has every section of the manual."""

import doctest

from mutagym.envs import kernel_task

SECTIONS = ("Description", "Action Space", "Observation Space", "Rewards", "Starting State", "Episode End",
            "Info", "Arguments", "Version History")


def test_the_manual_has_every_section():
    text = kernel_task.KernelTaskEnv.__doc__
    assert [s for s in SECTIONS if f"## {s}\n" not in text] == []
    assert "+SKIP" not in text


def test_the_examples_of_the_module_run():
    result = doctest.testmod(kernel_task, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"
    manual = [t for t in doctest.DocTestFinder().find(kernel_task) if t.name.endswith("KernelTaskEnv")]
    assert len(manual) == 1 and len(manual[0].examples) >= 20
