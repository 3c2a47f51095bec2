"""Nomad's job diff (nomad/structs/diff.go): what changed between two versions of a job, as the
plan and the version history present it."""
