"""The fault population and its measurement: rules applied to substrates, the mutant pool, the
kill matrix, and `harden` over them (docs/architecture.md)."""
