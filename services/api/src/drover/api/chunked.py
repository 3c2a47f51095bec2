"""A streamed body's chunks written without a copy.

uvicorn frames each chunk of a chunked response by joining its size line, the body and the
trailing CRLF into new bytes, so every chunk is copied once per connection before it is
written: for the event stream, each run of frames (up to megabytes) once per subscriber
(docs/experiments/event-stream.md). The transport (uvloop's) takes the three parts as they are
(`writelines`, one writev); the run every subscriber is sent is then the same bytes object,
never copied in Python.

`ChunkedCycle` is uvicorn's request-response cycle with that one change; every other message
goes through uvicorn's own `send`. It is installed for the API's process by `install()`
(tests/test_chunked.py checks a streamed response byte for byte through a real server).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from uvicorn.protocols.http import httptools_impl


class ChunkedCycle(httptools_impl.RequestResponseCycle):
    def send(self, message: Any) -> Coroutine[Any, Any, None]:
        """uvicorn's `send`, but for a chunk of a streamed body. Not a coroutine function itself:
        every other message is handed uvicorn's own coroutine, with no frame of this one between."""
        body = message.get("body")
        if (
            body
            and message.get("more_body")
            and message["type"] == "http.response.body"
            and self.chunked_encoding
            and self.response_started
            and not self.response_complete
            and self.scope["method"] != "HEAD"
        ):
            return self._send_chunk(body)
        return super().send(message)

    async def _send_chunk(self, body: bytes) -> None:
        if self.flow.write_paused and not self.disconnected:
            await self.flow.drain()
        if not self.disconnected:
            self.transport.writelines((b"%x\r\n" % len(body), body, b"\r\n"))


def install() -> None:
    """uvicorn's httptools protocol makes its cycles as ChunkedCycle from now on."""
    httptools_impl.RequestResponseCycle = ChunkedCycle  # type: ignore[misc]
