"""The Gymnasium environment, its judging service and the Ray prescreen workers."""
