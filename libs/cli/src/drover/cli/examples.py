"""The example jobspecs `drover job init` writes: a service job in HCL (with comments, or short)
and the same job as the API's JSON."""

from __future__ import annotations

from typing import Any

EXAMPLE_HCL = """\
# An example service job: three copies of a task printing the time. `drover job plan` shows what
# running it would change; `drover job run` submits it and follows its deployment.

variable "datacenters" {
  description = "The datacenters the job may run in."
  type        = list(string)
  default     = ["dc1"]
}

job "example" {
  datacenters = var.datacenters
  type        = "service"

  # Replace allocs one at a time, each healthy for 10 s before the next; roll back a failure.
  update {
    max_parallel     = 1
    min_healthy_time = "10s"
    healthy_deadline = "3m"
    auto_revert      = true
  }

  group "clock" {
    count = 3

    # Replace a failed alloc elsewhere, waiting longer each time.
    reschedule {
      delay          = "30s"
      delay_function = "exponential"
      max_delay      = "10m"
      unlimited      = true
    }

    # Restart a failed task in place twice within 30 minutes before giving up on it.
    restart {
      attempts = 2
      interval = "30m"
      delay    = "15s"
      mode     = "fail"
    }

    task "clock" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "while true; do date; sleep 10; done"]
      }

      resources {
        cpu    = 100 # MHz
        memory = 64  # MB
      }
    }
  }
}
"""

SHORT_HCL = """\
job "example" {
  datacenters = ["dc1"]

  group "clock" {
    count = 3

    task "clock" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "while true; do date; sleep 10; done"]
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
"""

EXAMPLE_JSON: dict[str, Any] = {
    "Job": {
        "ID": "example",
        "Name": "example",
        "Type": "service",
        "Datacenters": ["dc1"],
        "TaskGroups": [
            {
                "Name": "clock",
                "Count": 3,
                "Tasks": [
                    {
                        "Name": "clock",
                        "Driver": "raw_exec",
                        "Config": {
                            "command": "/bin/sh",
                            "args": ["-c", "while true; do date; sleep 10; done"],
                        },
                        "Resources": {"CPU": 100, "MemoryMB": 64},
                    }
                ],
            }
        ],
    }
}
