"""Serving the reward: the judging service, the reward gate, the Ray prescreen workers, the
Gymnasium environment and the trainer integrations (docs/architecture.md)."""
