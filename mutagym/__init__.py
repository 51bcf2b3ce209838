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
