"""The `docker` task driver, on the Docker SDK for Python, as Nomad's docker driver behaves: a
task is a container named `<task>-<alloc id>` and labelled with Nomad's com.hashicorp.nomad.*
labels (drover.control.client.dockerspec turns the task's config into the container's), its
output copied into Drover's rotated log files (drover.client.dockerlogs), stopped with its
kill_signal and kill_timeout, removed once it has ended; a restart is a new container.

The containers outlive the agent: after a restart it re-attaches to them (by the ID it saved,
else by name and labels) without restarting them. One thread follows the engine's `die`
events for this node's containers; a slow poll covers an event missed while the engine's
stream was down. Unused images and dangling containers are collected (drover.client.dockergc).
Every SDK call runs on a thread pool of the driver's own: none blocks the agent's event loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from drover.client.dockergc import LABEL_NODE_ID, DockerCollector
from drover.client.dockerlogs import LogFollower
from drover.client.dockeroptions import DockerOptions
from drover.client.drivers import ExecResult, ExitResult, StartError, TaskContext, kill_signal
from drover.control.client.dockerspec import (
    LABEL_ALLOC_ID,
    BindMount,
    ContainerContext,
    ContainerSpecError,
    PortMapping,
    container_spec,
    parse_image,
)
from drover.control.client.taskenv import TaskDirs
from drover.model.allocated import AllocatedResources
from drover.model.durations import SECOND, parse_duration
from drover.model.job import LogConfig, Task
from drover.model.node import DriverInfo

log = logging.getLogger("drover.client")
T = TypeVar("T")

# Where a docker task finds its directories (Nomad's docker driver mounts them there).
CONTAINER_DIRS = TaskDirs("/alloc", "/local", "/secrets")
# A container whose `die` event was missed is noticed within this long.
POLL_EVERY = 10.0
DEFAULT_PULL_TIMEOUT = 5 * 60.0
# After a container ends, how long its log followers get to copy what is left.
LOG_DRAIN = 5.0
POOL_SIZE = 256


def _client(options: DockerOptions, timeout: float = 60.0) -> Any:
    import docker

    # Each followed log stream holds a connection: a pool that large keeps them.
    if options.endpoint:
        return docker.DockerClient(base_url=options.endpoint, timeout=int(timeout), max_pool_size=POOL_SIZE)
    return docker.from_env(timeout=int(timeout), max_pool_size=POOL_SIZE)


def fingerprint(options: DockerOptions) -> tuple[DriverInfo, dict[str, str]]:
    """The engine's health and the `driver.docker*` attributes (none when it does not answer)."""
    try:
        client = _client(options, timeout=5)
        version = client.version()
        client.close()
    except Exception as e:
        log.info("docker driver: no engine: %s", e)
        return DriverInfo(
            detected=False, healthy=False, health_description="Failed to connect to docker daemon"
        ), {}
    attributes = {"driver.docker": "1", "driver.docker.version": str(version.get("Version", ""))}
    if options.allow_privileged:
        attributes["driver.docker.privileged.enabled"] = "1"
    if options.volumes_enabled:
        attributes["driver.docker.volumes.enabled"] = "1"
    attributes["driver.docker.os_type"] = str(version.get("Os", "linux"))
    return DriverInfo(
        detected=True, healthy=True, health_description="Healthy", attributes=attributes
    ), attributes


def _not_found(e: Exception) -> bool:
    import docker.errors

    return isinstance(e, docker.errors.NotFound)


class DockerHandle:
    """A running container of a task: waited on through the driver's event watcher."""

    def __init__(
        self, driver: DockerDriver, container_id: str, image: str, signal: str, followers: list[LogFollower]
    ) -> None:
        self.driver = driver
        self.container_id = container_id
        self.image = image
        self.signal = signal
        self.followers = followers
        self._exited: asyncio.Future[ExitResult] = asyncio.get_running_loop().create_future()
        self._result: ExitResult | None = None
        self._checks: set[asyncio.Task[None]] = set()

    def died(self) -> None:
        """The engine said the container died (or may have): find out how, off the loop."""
        if not self._exited.done():
            check = asyncio.ensure_future(self._check())
            self._checks.add(check)
            check.add_done_callback(self._checks.discard)

    async def _check(self) -> None:
        try:
            attrs = await self.driver.call(self.driver.api().inspect_container, self.container_id)
        except Exception as e:
            if _not_found(e):
                self._set(ExitResult(-1, message="the container is gone"))
            return  # the engine away: the next poll asks again
        state = attrs.get("State", {})
        if state.get("Running") or state.get("Restarting"):
            return
        oom = bool(state.get("OOMKilled"))
        self._set(
            ExitResult(int(state.get("ExitCode", -1)), message="OOM Killed" if oom else "", oom_killed=oom)
        )

    def _set(self, result: ExitResult) -> None:
        if not self._exited.done():
            self._exited.set_result(result)

    async def wait(self) -> ExitResult:
        if self._result is not None:
            return self._result
        while not self._exited.done():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._exited), POLL_EVERY)
            if not self._exited.done():
                await self._check()
        result = self._exited.result()
        if self._result is None:
            self._result = result
            await self.driver.finished(self)
        return result

    async def stop(self, kill_timeout: float) -> None:
        """Nomad's docker Kill: without a kill_signal the engine stops the container (its stop
        signal, SIGKILL after the timeout); with one, that signal, then a stop without delay
        once kill_timeout has passed."""
        api = self.driver.api()
        try:
            if not self.signal:
                await self.driver.call(api.stop, self.container_id, timeout=max(0, int(kill_timeout)))
            else:
                await self.driver.call(api.kill, self.container_id, signal=self.signal)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self._exited), kill_timeout)
                if not self._exited.done():
                    await self.driver.call(api.stop, self.container_id, timeout=0)
        except Exception as e:
            if not _not_found(e) and "is not running" not in str(e):
                log.warning("stopping container %s: %s", self.container_id[:12], e)
        await self._check()

    async def send(self, signal_name: str) -> None:
        """The signal to the container's main process (the engine's kill with a signal)."""
        await self.driver.call(self.driver.api().kill, self.container_id, signal=kill_signal(signal_name))

    async def exec(self, command: list[str], timeout: float) -> ExecResult:
        """Run `command` in the container (a script check, a template's change script), as
        Nomad's docker driver ExecTask does: its exit code and output (stdout and stderr)."""
        api = self.driver.api()
        try:
            exec_id = (await self.driver.call(api.exec_create, self.container_id, command))["Id"]
            output = await asyncio.wait_for(self.driver.call(api.exec_start, exec_id), timeout)
            code = (await self.driver.call(api.exec_inspect, exec_id)).get("ExitCode")
        except TimeoutError:
            return ExecResult(exit_code=-1, timed_out=True)
        except Exception as e:  # the engine's refusal (no such container, not running)
            return ExecResult(error=f"failed to exec into task: {e}")
        return ExecResult(exit_code=int(code if code is not None else -1), output=bytes(output or b""))

    def state(self) -> dict[str, Any]:
        return {
            "driver": "docker",
            "container_id": self.container_id,
            "image": self.image,
            "signal": self.signal,
        }


class DockerDriver:
    name = "docker"
    container_dirs = CONTAINER_DIRS

    def __init__(self, options: DockerOptions, node_id: str) -> None:
        self.options = options
        self.node_id = node_id
        self._client: Any = None
        self._lock = threading.Lock()
        # Calls that block for long (a stop waits out its kill_timeout) each hold a thread.
        self.pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="docker")
        self.handles: dict[str, DockerHandle] = {}  # watched, by container ID
        self.gc = DockerCollector(options, node_id)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watcher: threading.Thread | None = None

    # --- the engine ---
    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    self._client = _client(self.options)
                except Exception as e:
                    raise StartError(f"Failed to create docker client: {e}", recoverable=True) from e
            return self._client

    def api(self) -> Any:
        return self.client().api

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, lambda: fn(*args, **kwargs))

    def _watch(self) -> None:
        """Start the `die` event watcher once, on the running loop."""
        if self._watcher is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._watcher = threading.Thread(target=self._events, name="docker-events", daemon=True)
        self._watcher.start()

    def _events(self) -> None:
        filters = {"type": "container", "event": ["die", "oom"], "label": [f"{LABEL_NODE_ID}={self.node_id}"]}
        while True:
            try:
                for event in self.client().events(decode=True, filters=filters):
                    handle = self.handles.get(event.get("id", ""))
                    if handle is not None and self._loop is not None:
                        self._loop.call_soon_threadsafe(handle.died)
            except Exception as e:
                log.debug("docker events: %s; watching again", e)
            time.sleep(1.0)
            # Whatever died while the stream was down.
            if self._loop is not None:
                for handle in list(self.handles.values()):
                    self._loop.call_soon_threadsafe(handle.died)

    # --- starting ---
    async def start(
        self, task: Task, task_dir: Path, log_dir: Path, env: dict[str, str], ctx: TaskContext | None = None
    ) -> DockerHandle:
        if ctx is None:
            raise StartError("the docker driver needs the task's alloc")
        self._watch()
        signal = kill_signal(task.kill_signal) if task.kill_signal else ""
        try:
            spec = container_spec(task.config, self._context(task, task_dir, env, ctx, signal))
        except ContainerSpecError as e:
            raise StartError(
                f"Failed to create container configuration for image {task.config.get('image')!r}: {e}"
            ) from e
        spec["security_opt"] = _seccomp_profiles(spec.get("security_opt"))
        if not spec["security_opt"]:
            del spec["security_opt"]
        image = str(spec["image"])
        await self._image(image, task.config, ctx)
        container_id, adopted = await self.call(self._create, spec)
        handle = DockerHandle(self, container_id, image, signal, [])
        self.handles[container_id] = handle
        self.gc.use(image, container_id)
        if not adopted:
            try:
                await self.call(self.api().start, container_id)
            except Exception as e:
                await self.finished(handle)
                raise StartError(f"Failed to start container {container_id}: {e}", recoverable=True) from e
        # Followed once started: the engine ends a follow of a container not yet running at once.
        handle.followers = self._follow(container_id, task, task_dir, log_dir, bool(spec.get("tty")))
        handle.died()  # it may have ended already
        return handle

    def _context(
        self, task: Task, task_dir: Path, env: dict[str, str], ctx: TaskContext, signal: str
    ) -> ContainerContext:
        alloc, job, node = ctx.alloc, ctx.job, ctx.node
        ports: dict[str, PortMapping] = {}
        resources = alloc.allocated_resources
        if resources is not None:
            for p in resources.shared.ports:
                ports.setdefault(p.label, PortMapping(p.label, p.host_ip, p.value, p.to))
            nets = [*resources.shared.networks]
            if (own := resources.tasks.get(task.name)) is not None:
                nets += own.networks
            for net in nets:
                for port in [*net.reserved_ports, *net.dynamic_ports]:
                    ports.setdefault(port.label, PortMapping(port.label, net.ip, port.value, port.to))
        alloc_dir = ctx.alloc_dir / "alloc"
        return ContainerContext(
            alloc_id=alloc.id, job_id=job.id, job_name=job.name or job.id, parent_job_id=job.parent_id or "",
            namespace=alloc.namespace or job.namespace, task_group=alloc.task_group, task_name=task.name,
            node_id=node.id, node_name=node.name, env=dict(env), ports=list(ports.values()),
            alloc_dir=str(alloc_dir), task_local_dir=str(task_dir / "local"),
            task_secrets_dir=str(task_dir / "secrets"), task_dir=str(task_dir),
            host_volumes=[BindMount(m.host_path, m.task_path, m.read_only) for m in ctx.mounts],
            cpu_shares=task.resources.cpu, total_compute=node.node_resources.cpu.cpu_shares,
            cpu_cores=node.node_resources.cpu.total_cpu_cores,
            memory_mb=task.resources.memory_mb, memory_max_mb=_memory_max(task, resources),
            kill_signal=signal, allow_privileged=self.options.allow_privileged,
            volumes_enabled=self.options.volumes_enabled,
        )  # fmt: skip

    async def _image(self, image: str, config: dict[str, Any], ctx: TaskContext) -> None:
        """The image present: inspected, or pulled (always with force_pull or a "latest" tag,
        as Nomad does; a pull that fails falls back to a local copy then, since a machine
        without its registry can still run what it has)."""
        repo, tag = parse_image(image)
        force = bool(config.get("force_pull"))
        if not force and tag != "latest" and await self._present(image):
            return
        timeout = DEFAULT_PULL_TIMEOUT
        if config.get("image_pull_timeout"):
            timeout = parse_duration(config["image_pull_timeout"]) / SECOND
        # A digest reference ("repo@sha256:...") has no tag: pulled whole.
        ref = f"{repo}:{tag}" if tag else repo
        ctx.emit("Driver", "Downloading image", image=ref)
        auth = _auth(config.get("auth"))
        try:
            await asyncio.wait_for(
                self.call(self.api().pull, repo, tag=tag or None, auth_config=auth), timeout
            )
        except Exception as e:
            if not force and await self._present(image):
                log.info("pulling %s failed (%s): using the local image", image, e)
                return
            why = f"timed out after {timeout:g}s" if isinstance(e, TimeoutError) else _engine_words(e)
            raise StartError(f"Failed to pull `{image}`: {why}", recoverable=True) from e

    async def _present(self, image: str) -> bool:
        try:
            await self.call(self.api().inspect_image, image)
        except StartError:
            raise
        except Exception as e:
            if _not_found(e):
                return False
            raise StartError(
                f"Failed to inspect image {image!r}: {_engine_words(e)}", recoverable=True
            ) from e
        return True

    def _create(self, spec: dict[str, Any]) -> tuple[str, bool]:
        """Create the container (off the loop): (its ID, whether it was this task's running
        container already, left by an agent killed before it saved the ID)."""
        containers = self.client().containers
        name = str(spec["name"])
        try:
            existing = containers.get(name)
        except Exception as e:
            if not _not_found(e):
                raise StartError(f"Failed to create container: {_engine_words(e)}", recoverable=True) from e
        else:
            labels = existing.labels or {}
            mine = labels.get(LABEL_ALLOC_ID) == spec["labels"][LABEL_ALLOC_ID]
            if mine and existing.status == "running":
                log.info("re-attached to running container %s (%s)", name, existing.id[:12])
                return str(existing.id), True
            existing.remove(force=True)
        image = spec.pop("image")
        try:
            container = containers.create(image, **spec)
        except Exception as e:
            raise StartError(f"failed to create container: {_engine_words(e)}", recoverable=True) from e
        return str(container.id), False

    def _follow(
        self, container_id: str, task: Task, task_dir: Path, log_dir: Path, tty: bool
    ) -> list[LogFollower]:
        logs = task.log_config or LogConfig()
        if logs.disabled:
            return []
        streams = ("stdout",) if tty else ("stdout", "stderr")
        return [
            LogFollower(
                self.api(),
                container_id,
                log_dir,
                task_dir,
                task.name,
                s,
                logs.max_files,
                logs.max_file_size_mb,
                tty,
            ).start()
            for s in streams
        ]

    # --- after an agent's restart ---
    async def reattach(
        self, state: dict[str, Any], task: Task, task_dir: Path, log_dir: Path
    ) -> DockerHandle | None:
        """The handle of a container this agent started before its restart, its output
        followed again from where it stopped; None when the container is gone."""
        self._watch()
        container_id = str(state.get("container_id", ""))
        try:
            attrs = await self.call(self.api().inspect_container, container_id)
        except Exception as e:
            log.warning("re-attaching to container %s: %s", container_id[:12], e)
            return None
        tty = bool(attrs.get("Config", {}).get("Tty"))
        followers = self._follow(container_id, task, task_dir, log_dir, tty)
        handle = DockerHandle(
            self, container_id, str(state.get("image", "")), str(state.get("signal", "")), followers
        )
        self.handles[container_id] = handle
        self.gc.use(handle.image, container_id)
        handle.died()
        return handle

    # --- after a container ends ---
    async def finished(self, handle: DockerHandle) -> None:
        """A container ended: its output copied, the container removed, its image released."""
        self.handles.pop(handle.container_id, None)
        for follower in handle.followers:
            await self.call(follower.join, LOG_DRAIN)
        if self.options.gc_container:
            with contextlib.suppress(Exception):
                await self.call(self.api().remove_container, handle.container_id, force=True)
        self.gc.release(handle.image, handle.container_id)

    async def collect(self, owned: set[str]) -> None:
        """The GC's round (drover.client.dockergc); `owned`: the containers tasks hold."""
        await self.gc.collect(self, owned | set(self.handles))


def _seccomp_profiles(options: Any) -> list[str]:
    """`security_opt` with each `seccomp=<file>` replaced by the file's JSON, as Nomad sends
    it (the engine takes the profile, not a path on the agent's machine)."""
    out = []
    for opt in options or []:
        kind, _, value = str(opt).partition("=")
        if kind == "seccomp" and value not in ("", "unconfined", "builtin"):
            try:
                opt = f"seccomp={Path(value).read_text()}"
            except OSError as e:
                raise StartError(f"failed to read seccomp profile {value!r}: {e.strerror}") from e
        out.append(opt)
    return out


def _auth(auth: Any) -> dict[str, str] | None:
    """The task's `auth` block as the engine takes it (kept, used when pulling)."""
    if isinstance(auth, list):
        auth = auth[0] if auth else None
    if not isinstance(auth, dict) or not auth:
        return None
    return {k: str(v) for k, v in auth.items() if k in ("username", "password", "email", "server_address")}


def _engine_words(e: Exception) -> str:
    """What the engine said, without the SDK's request detail."""
    explanation = getattr(e, "explanation", None)
    return str(explanation) if explanation else str(e)


__all__ = ["CONTAINER_DIRS", "DockerDriver", "DockerHandle", "DockerOptions", "fingerprint"]


def _memory_max(task: Task, resources: AllocatedResources | None) -> int:
    """The task's memory_max as its placement gave it: 0 (its memory is its limit) unless the
    scheduler configuration allowed memory oversubscription (drover.scheduler.allocated)."""
    given = resources.tasks.get(task.name) if resources is not None else None
    return given.memory.memory_max_mb if given is not None else task.resources.memory_max_mb
