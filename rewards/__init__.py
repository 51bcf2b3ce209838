"""How a kernel is judged and how a checker is measured: generators, the comparator, the judging
core, the validity gate, checker versions, scoring on a kill matrix (docs/architecture.md)."""
