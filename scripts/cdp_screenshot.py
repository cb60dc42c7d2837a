"""Screenshot a page once its scripts have rendered: headless Chromium over the DevTools
protocol (``--screenshot`` alone captures before a single-page app has loaded its data).

    python scripts/cdp_screenshot.py URL OUT.png [--wait 6] [--width 1400 --height 900] [--click TEXT]

``--click TEXT`` clicks the first element whose text is TEXT after loading, then waits again
(to open a sample in the viewer, say). Needs Debian's chromium and aiohttp (the viewer extra).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import socket
import subprocess
import tempfile
from pathlib import Path

import aiohttp

CLICK = """(() => { const t = %s; const all = [...document.querySelectorAll('*')];
  const hit = all.reverse().find(e => e.children.length === 0 && e.textContent.trim() === t);
  if (hit) { hit.scrollIntoView(); hit.click(); return true; } return false; })()"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def shoot(url: str, out: Path, wait: float, width: int, height: int, clicks: list[str]) -> None:
    port = free_port()
    profile = tempfile.mkdtemp()
    browser = subprocess.Popen(
        [
            "chromium",
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            f"--remote-debugging-port={port}",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        async with aiohttp.ClientSession() as http:
            for _ in range(100):
                try:
                    async with http.get(f"http://127.0.0.1:{port}/json/list") as r:
                        pages = [p for p in await r.json() if p["type"] == "page"]
                    break
                except aiohttp.ClientError:
                    await asyncio.sleep(0.1)
            async with http.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                ids = iter(range(1, 1000))

                async def call(method: str, **params: object) -> dict:
                    n = next(ids)
                    await ws.send_str(json.dumps({"id": n, "method": method, "params": params}))
                    async for msg in ws:
                        data = json.loads(msg.data)
                        if data.get("id") == n:
                            return data.get("result", {})
                    raise RuntimeError("the browser closed the connection")

                await call("Page.navigate", url=url)
                await asyncio.sleep(wait)
                for text in clicks:
                    await call("Runtime.evaluate", expression=CLICK % json.dumps(text))
                    await asyncio.sleep(wait)
                shot = await call("Page.captureScreenshot", format="png")
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(base64.b64decode(shot["data"]))
    finally:
        browser.terminate()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("out", type=Path)
    parser.add_argument("--wait", type=float, default=6.0)
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--click", action="append", default=[])
    args = parser.parse_args()
    asyncio.run(shoot(args.url, args.out, args.wait, args.width, args.height, args.click))


if __name__ == "__main__":
    main()
