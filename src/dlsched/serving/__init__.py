"""LLM inference serving: request traces, performance models and the replica simulator."""
