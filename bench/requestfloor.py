"""The floors under bench/requests.py: what answering a request costs an HTTP server on this
host with no Drover code in the path. Served by uvicorn with the API's own settings
(`drover.api.server.uvicorn_config`: uvloop, httptools, no access log), in a process of its
own, answering each kind of request with the bytes the API answered it with (status, Nomad's
headers, body), kept in memory:

- `asgi`: a bare ASGI app, the kind looked up from the path's last segment;
- `fastapi`: a FastAPI app with one route, `/floor/{kind}` (a path parameter, as the API's
  routes have), returning a `Response` of those bytes.

    python -m bench.requestfloor --serve asgi|fastapi ANSWERS   (prints its port)

ANSWERS: a JSON file of {kind: [status, [[header, value], ...], body]}.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

Answer = tuple[int, list[tuple[bytes, bytes]], bytes]
ARMS = ("asgi", "fastapi")


def load(path: Path) -> dict[str, Answer]:
    raw: dict[str, Any] = json.loads(path.read_text())
    return {
        kind: (status, [(k.encode(), v.encode()) for k, v in headers], body.encode())
        for kind, (status, headers, body) in raw.items()
    }


def bare(answers: dict[str, Answer]) -> ASGIApp:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        status, headers, body = answers[scope["path"].rsplit("/", 1)[1]]
        headers = [*headers, (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def one_route(answers: dict[str, Answer]) -> ASGIApp:
    from fastapi import FastAPI, Response

    app = FastAPI()
    headers = {kind: {k.decode(): v.decode() for k, v in h} for kind, (_, h, _) in answers.items()}

    @app.api_route("/floor/{kind}", methods=["GET", "PUT"])
    async def floor(kind: str) -> Response:
        status, _, body = answers[kind]
        return Response(content=body, status_code=status, headers=headers[kind])

    return app


class Floor:
    """One floor's server process."""

    def __init__(self, arm: str, answers: Path) -> None:
        cmd = [sys.executable, "-m", "bench.requestfloor", "--serve", arm, str(answers)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.base = f"http://127.0.0.1:{int(self.proc.stdout.readline())}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=10)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--serve", choices=ARMS, required=True)
    ap.add_argument("answers", type=Path)
    args = ap.parse_args()
    import uvicorn

    from drover.api.server import uvicorn_config

    answers = load(args.answers)
    app = bare(answers) if args.serve == "asgi" else one_route(answers)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)  # connections wait in the backlog until uvicorn serves
    print(sock.getsockname()[1], flush=True)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    uvicorn.Server(uvicorn_config(app, "127.0.0.1", 0)).run(sockets=[sock])


if __name__ == "__main__":
    main()
