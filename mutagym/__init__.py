"""mutagym: a kernel-writing RL environment whose reward is a mutation-hardened checker."""

__version__ = "0.1.0"
