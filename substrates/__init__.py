"""The problem catalog: specs, fp64 references, substrates and variants (see README.md here).

>>> from mutagym.substrates import load_problem
>>> load_problem("relu").category
'elementwise'
"""

from .catalog import Problem, UnknownProblemError, catalog_dir, list_problems, load_problem
from .schema import (
    CATEGORIES,
    INTEGER_ROLES,
    ROLES,
    ProblemSpec,
    ProblemSpecError,
    evaluate_expression,
)

__all__ = [
    "CATEGORIES",
    "INTEGER_ROLES",
    "ROLES",
    "Problem",
    "ProblemSpec",
    "ProblemSpecError",
    "UnknownProblemError",
    "catalog_dir",
    "evaluate_expression",
    "list_problems",
    "load_problem",
]
