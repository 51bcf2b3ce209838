"""mutagym: a kernel-writing RL environment whose reward is a mutation-hardened checker.

Importing it registers the Gymnasium environments `mutagym/KernelTask-v0` (one turn) and
`mutagym/KernelTaskMultiTurn-v0` (feedback turns).
"""

__version__ = "0.1.0"


def _register_envs() -> None:
    import gymnasium as gym
    entry = "mutagym.envs.kernel_task:KernelTaskEnv"
    for env_id, kwargs in (("mutagym/KernelTask-v0", {"max_turns": 1}),
                           ("mutagym/KernelTaskMultiTurn-v0", {"max_turns": 4})):
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry, kwargs=kwargs, disable_env_checker=False)


_register_envs()

#: The public API, imported on first use (so `import mutagym` stays light): name -> module.
_EXPORTS = {
    "compile": "mutagym.runtime",
    "load_problem": "mutagym.substrates.catalog",
    "list_problems": "mutagym.substrates.catalog",
    "load_checker": "mutagym.rewards.checker",
    "default_checker": "mutagym.rewards.checker",
    "KernelTaskEnv": "mutagym.envs.kernel_task",
    "Judge": "mutagym.envs.judge",
    "RewardShaping": "mutagym.envs.judge",
    "trl_reward": "mutagym.rewards.trainer",
    "verl_compute_score": "mutagym.rewards.trainer",
    "score": "mutagym.rewards.trainer",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'mutagym' has no attribute {name!r}")
