"""Logging and tracing setup shared by the services."""

from __future__ import annotations

import logging
import os


def setup_logging(service: str) -> None:
    logging.basicConfig(
        level=os.environ.get("DROVER_LOG_LEVEL", "INFO"),
        format=f"%(asctime)s {service} %(levelname)s %(name)s: %(message)s",
    )
