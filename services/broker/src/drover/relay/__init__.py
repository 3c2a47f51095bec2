"""`drover-relay`: the log -> EVENTS relay, as a process of its own (see `service`)."""
