"""The client's rules: when a task restarts (Nomad's restart tracker), and how a task's logs
are read and framed (Nomad's client fs logs, which the API forwards)."""
