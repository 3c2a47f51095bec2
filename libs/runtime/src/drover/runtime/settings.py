"""Settings from the environment (DROVER_*), shared by every service. Secrets (the database's
and NATS's passwords) are `SecretStr`, or read from a file (`*_FILE`, e.g. a container
secret), and are never put in a URL: a URL gets printed, logged and put in exceptions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

if TYPE_CHECKING:
    from sqlalchemy.engine import URL


@dataclass(frozen=True)
class NatsCredentials:
    """A NATS user and password (nats-py's `user`/`password`); the password never printed."""

    user: str
    password: SecretStr

    def connect_options(self) -> dict[str, Any]:
        return {"user": self.user, "password": self.password.get_secret_value()}


def _secret(value: SecretStr | None, file: str, name: str) -> str:
    """The secret given as is, else the first line of its file ("" for neither)."""
    if value is not None and value.get_secret_value():
        return value.get_secret_value()
    if not file:
        return ""
    try:
        text = Path(file).read_text().strip()
    except OSError as e:
        raise ValueError(f"{name}: cannot read {file}: {e.strerror}") from None
    return text.splitlines()[0].strip() if text else ""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="DROVER_", extra="ignore")

    # PostgreSQL, as a SQLAlchemy URL without its password (postgresql+psycopg://user@host/db);
    # the password here or in a file (a password still in the URL works, but is not kept out
    # of what prints the URL).
    database_url: str = ""
    database_password: SecretStr | None = None
    database_password_file: str = ""
    # NATS, and the user and password it wants (`drover up` makes them for its own NATS).
    nats_url: str = ""
    nats_user: str = ""
    nats_password: SecretStr | None = None
    nats_password_file: str = ""
    # HTTPS for the API (Nomad's tls block: cert_file, key_file, ca_file, verify_https_client):
    # with a certificate and key the API answers HTTPS alone; with verify_https_client, only to
    # clients presenting a certificate from the CA (drover.runtime.tls).
    tls_cert_file: str = ""
    tls_key_file: str = ""
    tls_ca_file: str = ""
    verify_https_client: bool = False
    data_dir: str = "data"
    # The keyring file that seals variables' items (drover.runtime.keyring); unset:
    # <data_dir>/keyring.json. Every API process must read the same one.
    keyring: str = ""
    # ACLs (Nomad's `acl` block): off by default, as Nomad's; on, every request is checked
    # against its token's policies (drover.api.access). A token's expiry must lie this many
    # seconds ahead, at least and at most (Nomad's token_min/max_expiration_ttl, 1m and 24h).
    acl_enabled: bool = False
    acl_token_min_expiration_ttl: float = Field(default=60.0, ge=0.0)
    acl_token_max_expiration_ttl: float = Field(default=24 * 3600.0, gt=0.0)
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

    def database(self) -> URL:
        """The database URL with its password set: printed (str, repr), it shows `***`."""
        from sqlalchemy.engine import make_url

        url = make_url(self.database_url)
        password = _secret(
            self.database_password, self.database_password_file, "DROVER_DATABASE_PASSWORD_FILE"
        )
        return url.set(password=password) if password else url

    def nats_credentials(self) -> NatsCredentials | None:
        """What every NATS connection authenticates with (None: NATS wants none)."""
        password = _secret(self.nats_password, self.nats_password_file, "DROVER_NATS_PASSWORD_FILE")
        if not self.nats_user and not password:
            return None
        return NatsCredentials(self.nats_user, SecretStr(password))
