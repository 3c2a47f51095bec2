"""The HTTP API service: Nomad-compatible /v1 endpoints over the event log."""
