"""A headless Chromium driven over the DevTools protocol (no extra packages: aiohttp only).

``Chromium.find()`` names the browser binary or ``None``; ``async with Chromium(binary) as
browser`` starts it on a free debugging port, ``await browser.open(url)`` gives a ``Page``
that can evaluate JavaScript and capture screenshots.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import aiohttp

__all__ = ["SCREENSHOTS_ENV", "Chromium", "Page", "save_screenshot"]

SCREENSHOTS_ENV = "STORMLOOP_SCREENSHOTS"
"""A directory named here receives the PNGs browser tests take, to look at by eye."""

_BINARIES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


class Page:
    """One tab: ``evaluate`` JavaScript, ``screenshot`` to PNG bytes."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._ws = ws
        self._ids = itertools.count(1)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one DevTools command and return its result (events are skipped)."""
        msg_id = next(self._ids)
        await self._ws.send_json({"id": msg_id, "method": method, "params": params})
        while True:
            reply = await self._ws.receive_json()
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply["result"])

    async def evaluate(self, expression: str) -> Any:
        """The value of ``expression`` in the page (promises awaited)."""
        result = await self.call("Runtime.evaluate", expression=expression,
                                 returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression!r}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, timeout: float = 15.0) -> Any:
        """Poll ``expression`` until it is truthy (throwing counts as falsy: the page may
        still be loading); its value."""
        deadline = asyncio.get_running_loop().time() + timeout
        guarded = f"(() => {{ try {{ return ({expression}); }} catch (e) {{ return null; }} }})()"
        while True:
            value = await self.evaluate(guarded)
            if value:
                return value
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"{expression!r} still falsy after {timeout}s")
            await asyncio.sleep(0.1)

    async def screenshot(self, full_page: bool = True) -> bytes:
        """A PNG of the page (the whole document when ``full_page``)."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = await self.evaluate("[document.documentElement.scrollWidth, "
                                       "document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1}
            params["captureBeyondViewport"] = True
        return base64.b64decode((await self.call("Page.captureScreenshot", **params))["data"])


class Chromium:
    """A headless Chromium process with a DevTools endpoint."""

    def __init__(self, binary: str, width: int = 1400, height: int = 1000) -> None:
        self.binary = binary
        self.size = (width, height)
        self._proc: asyncio.subprocess.Process | None = None
        self._session: aiohttp.ClientSession | None = None
        self._profile = tempfile.TemporaryDirectory(prefix="chromium-")
        self._http = ""
        self._sockets: list[aiohttp.ClientWebSocketResponse] = []

    @staticmethod
    def find() -> str | None:
        """The first Chromium binary on PATH, or ``None``."""
        for name in _BINARIES:
            path = shutil.which(name)
            if path:
                return path
        return None

    async def __aenter__(self) -> Chromium:
        self._proc = await asyncio.create_subprocess_exec(
            self.binary, "--headless=new", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--no-first-run", "--remote-debugging-port=0",
            "--remote-debugging-address=127.0.0.1", f"--user-data-dir={self._profile.name}",
            f"--window-size={self.size[0]},{self.size[1]}", "about:blank",
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE)
        assert self._proc.stderr is not None
        lines = []
        try:
            async with asyncio.timeout(30):
                while True:
                    line = (await self._proc.stderr.readline()).decode(errors="replace")
                    if not line:
                        raise RuntimeError("chromium exited: " + "".join(lines[-10:]))
                    lines.append(line)
                    found = re.search(r"DevTools listening on ws://([^/]+)/", line)
                    if found:
                        self._http = f"http://{found.group(1)}"
                        break
        except BaseException:
            await self.close()
            raise
        # Keep reading stderr so a chatty browser never blocks on a full pipe.
        self._drain = asyncio.get_running_loop().create_task(self._read_rest())
        self._session = aiohttp.ClientSession()
        return self

    async def _read_rest(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        while await self._proc.stderr.readline():
            pass

    async def open(self, url: str) -> Page:
        """A new tab showing ``url`` (returns once the DevTools socket is connected)."""
        assert self._session is not None
        async with self._session.put(f"{self._http}/json/new?{url}") as resp:
            target = await resp.json(content_type=None)
        ws = await self._session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0)
        self._sockets.append(ws)
        page = Page(ws)
        await page.call("Emulation.setDeviceMetricsOverride", width=self.size[0],
                        height=self.size[1], deviceScaleFactor=1, mobile=False)
        return page

    async def close(self) -> None:
        """Close the tabs' sockets and stop the browser."""
        for ws in self._sockets:
            await ws.close()
        if self._session is not None:
            await self._session.close()
        if self._proc is not None and self._proc.returncode is None:
            self._proc.kill()
            await self._proc.wait()
        if getattr(self, "_drain", None) is not None:
            self._drain.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._drain
        self._profile.cleanup()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def save_screenshot(name: str, png: bytes) -> Path | None:
    """Write ``png`` as ``name`` into the ``STORMLOOP_SCREENSHOTS`` directory when that is
    set; the path written, or ``None``."""
    folder = os.environ.get(SCREENSHOTS_ENV)
    if not folder:
        return None
    path = Path(folder) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png)
    return path
