"""/v1/metrics: the cluster's and every service's metrics (drover.api.metrics), as Prometheus
text (the default, and `?format=prometheus`) or Nomad's JSON (`?format=json`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from drover.api.errors import ApiError
from drover.api.jsondecode import JsonRoute
from drover.api.metrics import MetricsGatherer
from drover.api.metricsformat import nomad_json, prometheus_text

router = APIRouter(route_class=JsonRoute, tags=["metrics"])
FORMATS = ("prometheus", "json")


async def _metrics(request: Request) -> MetricsGatherer:
    metrics: MetricsGatherer = request.app.state.metrics
    return metrics


@router.get("/v1/metrics", response_model=None)
async def get_metrics(
    metrics: Annotated[MetricsGatherer, Depends(_metrics)], format: Annotated[str, Query()] = "prometheus"
) -> Any:
    if format not in FORMATS:
        raise ApiError(400, f"query parameter format must be one of {', '.join(FORMATS)}; got {format!r}")
    cluster, snapshots = await metrics.gather()
    if format == "json":
        return JSONResponse(nomad_json(cluster, snapshots))
    return Response(prometheus_text(cluster, snapshots), media_type=CONTENT_TYPE_LATEST)
