"""The docker driver's garbage collection, as Nomad's docker driver collects: an image no
container of this agent uses any more is removed once gc.image_delay has passed (its tag, so an
image under another name stays), and every dangling period the containers labelled for this
node that no task owns and older than the creation grace are removed (an agent killed between
creating a container and saving its ID leaves one)."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from drover.client.dockeroptions import DockerOptions
from drover.control.client.dockerspec import LABEL_PREFIX

if TYPE_CHECKING:
    from drover.client.dockerdriver import DockerDriver

log = logging.getLogger("drover.client")
LABEL_NODE_ID = LABEL_PREFIX + "node_id"


class DockerCollector:
    def __init__(self, options: DockerOptions, node_id: str) -> None:
        self.options = options
        self.node_id = node_id
        self.image_users: dict[str, set[str]] = {}  # image -> IDs of this agent's containers using it
        self.unused_since: dict[str, float] = {}  # image -> when its last user went
        self.last_sweep = time.monotonic()

    def use(self, image: str, container_id: str) -> None:
        if image:
            self.image_users.setdefault(image, set()).add(container_id)
            self.unused_since.pop(image, None)

    def release(self, image: str, container_id: str) -> None:
        users = self.image_users.get(image)
        if users is not None:
            users.discard(container_id)
            if not users:
                self.unused_since[image] = time.monotonic()

    async def collect(self, driver: DockerDriver, owned: set[str]) -> None:
        """Remove the images unused for gc.image_delay and, every dangling period, the
        containers no task owns. `owned`: the container IDs the agent's tasks hold."""
        now = time.monotonic()
        if self.options.gc_image:
            for image, since in list(self.unused_since.items()):
                if now - since < self.options.gc_image_delay or self.image_users.get(image):
                    continue
                self.unused_since.pop(image, None)
                self.image_users.pop(image, None)
                try:
                    await driver.call(driver.api().remove_image, image)
                    log.info("removed image %s: unused for %gs", image, self.options.gc_image_delay)
                except Exception as e:  # in use by a container not ours, or gone already
                    log.info("image %s not removed: %s", image, getattr(e, "explanation", None) or e)
        if self.options.dangling_enabled and now - self.last_sweep >= self.options.dangling_period:
            self.last_sweep = now
            try:
                removed = await driver.call(self._sweep, driver, owned)
            except Exception as e:
                log.warning("dangling containers: %s", e)
                return
            for name in removed:
                log.info("removed dangling container %s: no task of this agent owns it", name)

    def _sweep(self, driver: DockerDriver, owned: set[str]) -> list[str]:
        api = driver.api()
        removed = []
        for c in api.containers(all=True, filters={"label": f"{LABEL_NODE_ID}={self.node_id}"}):
            if c["Id"] in owned or time.time() - c.get("Created", 0) < self.options.dangling_grace:
                continue
            api.remove_container(c["Id"], force=True)
            removed.append((c.get("Names") or [c["Id"][:12]])[0].lstrip("/"))
        return removed
