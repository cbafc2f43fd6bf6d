"""The dashboard as an ASGI app (``streamlit run dashboard/server.py``; ``make run`` uses it).

It serves ``dashboard/app.py`` unchanged, with one middleware: every HTML page it sends tells
Streamlit's frontend that the server lives at the site's root (``window.__streamlit`` with
``BACKEND_BASE_URL``). Without it, a page opened at its own address (``/membership``) first
probes ``/membership/_stcore/health`` and ``/membership/_stcore/host-config``: two 404s in the
browser's console on every direct visit, before the frontend falls back to the root. Nothing
else changes: the same script, the same config, the password gate in ``app.py``. It also starts
the pages' and runs' imports (:mod:`dashboard.warmup`) and the process's local pool
(:func:`core.runs.pool.prewarm_in_background`) in the background.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import streamlit as st
from starlette.middleware import Middleware

from core.runs.pool import prewarm_in_background
from dashboard import warmup
from dashboard.base.jobs import default_nice

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: paths served by Streamlit itself (assets, the websocket, media): passed through untouched
_PASS_THROUGH = ("/_stcore", "/static", "/media", "/component", "/app/static", "/auth")
_SCRIPT = (b'<script>window.__streamlit = {BACKEND_BASE_URL: window.location.origin + "/"};'
           b"</script>")


def inject_base_url(html: bytes) -> bytes:
    """``html`` with the base-URL script as the first element of ``<head>`` (unchanged when
    there is no ``<head>`` or the script is already there)."""
    if _SCRIPT in html or b"<head>" not in html:
        return html
    return html.replace(b"<head>", b"<head>" + _SCRIPT, 1)


class BaseUrlMiddleware:
    """ASGI middleware that puts :func:`inject_base_url` into every HTML response."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(_PASS_THROUGH):
            await self.app(scope, receive, send)
            return
        # the page is a few kB: ask for it uncompressed, so the script can go in
        scope = {**scope, "headers": [(k, v) for k, v in scope.get("headers", [])
                                      if k.lower() != b"accept-encoding"]}
        start: Message = {}
        chunks: list[bytes] = []

        async def send_patched(message: Message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            body = b"".join(chunks)
            headers = list(start.get("headers", []))
            if dict(headers).get(b"content-type", b"").startswith(b"text/html"):
                body = inject_base_url(body)
                headers = [(k, v) for k, v in headers if k.lower() != b"content-length"]
                headers.append((b"content-length", str(len(body)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, send_patched)


# the pages' and the runs' imports start now, in the background, rather than with the first
# page a user opens (PRIVLAB_PREWARM=0 turns both this and the pool off; app.py asks again,
# for servers started on app.py itself)
warmup.start()
# the Compare page runs its points on the process's local pool: its workers start now, in the
# background, rather than with the first comparison
prewarm_in_background(nice=default_nice())
app = st.App("app.py", middleware=[Middleware(BaseUrlMiddleware)])
