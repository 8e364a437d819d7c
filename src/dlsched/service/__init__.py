"""The live scheduler service: durable store, REST API, control loop (see docs/service.md)."""
