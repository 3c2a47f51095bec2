"""Settings from the environment (DROVER_*), shared by every service."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="DROVER_", extra="ignore")

    database_url: str = ""
    nats_url: str = ""
    data_dir: str = "data"
    # The keyring file that seals variables' items (drover.runtime.keyring); unset:
    # <data_dir>/keyring.json. Every API process must read the same one.
    keyring: str = ""
    api_host: str = "127.0.0.1"
    api_port: int = 4646
    # This API server as Nomad names a server (/v1/agent/self, /v1/agent/members, /v1/regions):
    # its region and datacenter (Nomad's defaults), its node name (unset: the host's name) and
    # the address other servers and clients reach it at (unset: api_host, or the host's own
    # address when api_host listens on every interface).
    region: str = "global"
    datacenter: str = "dc1"
    node_name: str = ""
    advertise_addr: str = ""
    # Largest request body the API accepts (bytes); larger gets 413.
    max_body_bytes: int = 8 * 1024 * 1024
    # /v1/event/stream: frames a subscriber may fall behind by before its stream is closed, and
    # seconds between heartbeats (Nomad's 30).
    event_buffer: int = Field(default=4096, ge=1)
    event_heartbeat: float = Field(default=30.0, gt=0.0)
    # Seconds the stream's feed (a whole replica in the API) runs on after its last subscriber,
    # and for which it gathers frames before handing them to the subscribers (one write each).
    event_feed_idle: float = Field(default=60.0, gt=0.0)
    event_coalesce: float = Field(default=0.05, ge=0.0)
    # Scheduling workers `drover up` starts, and how many evals the broker hands out at once.
    workers: int = 3
    # How many of those may be large evals (more than 100 placements) at once; unset: one when
    # there are three or more, else every slot. Concurrent large evals compete for the cores and
    # the same nodes: fewer trade throughput for small jobs' latency (both measured:
    # docs/experiments/broker-and-workers.md).
    large_evals: int | None = None
    # This worker's lane: "small" or "large" evals first (`drover up` assigns them; unset: small
    # first). A large-lane worker lowers its CPU priority by `large_lane_nice`
    # (docs/experiments/broker-and-workers.md).
    worker_lane: Literal["", "small", "large"] = ""
    large_lane_nice: int = Field(default=10, ge=0, le=19)
    # Large evals a large-lane worker works on at once: with 2, it schedules the next while the
    # plan of the one before is being committed, counting that plan's placements as made (the
    # broker hands out this many per large-lane worker, the extra ones only while no small eval
    # is out, nor was for `large_lane_quiet`). 1: one at a time. Measured:
    # docs/experiments/broker-and-workers.md.
    large_lane_depth: int = Field(default=2, ge=1, le=4)
    # Seconds without a small eval out before the large lane's extra depth is used: small jobs
    # arriving one after another keep it at one large eval per large-lane worker, so they wait
    # behind less; a load of large jobs alone gets the whole depth. 0: as soon as none is out.
    large_lane_quiet: float = Field(default=2.0, ge=0.0, le=600.0)
    # Seconds an eval stays with its worker after the worker's last in-progress beat (it beats
    # every fifth of this while it works on it) before it is handed to another: how long the eval
    # of a worker that died waits. Nomad's nack timeout is 60 s, but its workers die only with
    # their server (drover.worker.loop).
    eval_ack_wait: float = Field(default=10.0, gt=0.0)
    # An eval delivered to the limit fails, and its failed-follow-up eval waits this many seconds
    # plus a random share of the range (Nomad's EvalFailedFollowupBaselineDelay, 1 min, and
    # EvalFailedFollowupDelayRange, 5 min).
    eval_failed_followup_baseline_delay: float = Field(default=60.0, ge=0.0)
    eval_failed_followup_delay_range: float = Field(default=300.0, ge=0.0)
    # Plans a worker submits for one eval, none of them placing anything, before the eval fails
    # with a max-plan-attempts blocked eval; unset: Nomad's per scheduler (service and system 5,
    # batch 2).
    plan_attempts: int | None = Field(default=None, ge=1)
    # Client heartbeats (seconds): the least TTL handed to a node, the grace after it before the
    # node is missed, and what every node gets after a leader failover (Nomad: 10, 10, 300).
    heartbeat_min_ttl: float = 10.0
    # TTLs grow with the cluster so the servers see at most this many heartbeats a second.
    heartbeat_max_per_second: float = 50.0
    heartbeat_grace: float = 10.0
    failover_heartbeat_ttl: float = 300.0
    # Garbage collection (drover.gc), in seconds, with Nomad's defaults: how often the collector
    # writes its core evals (Nomad's *_gc_interval, 5m), and how long after it last changed an
    # object that may go is kept - evals (1h; a batch job's 24h), dead jobs (4h), inactive
    # deployments (1h), down nodes (24h), job restarts that have ended
    # (gc_restart_threshold, 4h).
    gc_interval: float = Field(default=300.0, gt=0.0)
    eval_gc_threshold: float = Field(default=3600.0, ge=0.0)
    batch_eval_gc_threshold: float = Field(default=24 * 3600.0, ge=0.0)
    job_gc_threshold: float = Field(default=4 * 3600.0, ge=0.0)
    deployment_gc_threshold: float = Field(default=3600.0, ge=0.0)
    node_gc_threshold: float = Field(default=24 * 3600.0, ge=0.0)
    gc_restart_threshold: float = Field(default=4 * 3600.0, ge=0.0)
    # Objects one collecting append deletes at most: each append holds the events lock under
    # 50 ms (bench/gc.py, docs/experiments/garbage-collection.md).
    gc_chunk: int = Field(default=500, ge=1)
    # Objects a second the collector deletes while the cluster has scheduling work waiting (an
    # eval pending, or one within the last second); 0 = never paced. A collection's cost lands
    # mostly on Postgres and every replica, not on the collector, so it is paced here rather than
    # by the collector's CPU priority (docs/experiments/garbage-collection.md, 2026-11-26).
    gc_busy_rate: float = Field(default=1000.0, ge=0.0)
