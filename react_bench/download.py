"""One bounded HTTP download, for every file the project fetches itself from a host it does not
run: the authors' pinned files (``upstream``), GPT-2's vocabulary and the hub files a task's
first run builds its data from (``tasks.hubdata``).

Decisions a next engineer needs:

- **Bounded by what is known of the file.** A download stops reading at its known size plus one
  byte (the manifest's size, the hub listing's): a host that announces more (``Content-Length``)
  is refused before its body is read, and one that streams more is cut at the first byte past
  it. The count is of the file's bytes as decoded and of the bytes on the wire, each capped,
  so a compressed body cannot blow up either.
- **A deadline for the whole transfer**, not only per read: a host that sends a byte a second
  never trips a per-read timeout. The deadline is ``DEADLINE_BASE_S`` plus the size at
  ``SLOW_LINE_BPS`` (a slow line: 50 kB/s), or ``$REACT_BENCH_DOWNLOAD_DEADLINE_S`` for every
  download; it is checked as bytes arrive, and a host that goes silent is cut by the per-read
  timeout (at most ``READ_TIMEOUT_S``, never more than the deadline).
- **Every failure is one ``DownloadError`` line** naming the file, the host (without
  credentials) and the size: its caller adds what to set. A 200 answer whose bytes are not the
  file (a sign-in page) fails on the caller's checksum; ``Received.seen`` says what came back
  (content type and the first bytes, printable and without URL credentials) for that line.
- Nothing half-downloaded is read: the bytes go to the caller's temporary path, which the
  caller renames into place only once they check out.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from react_bench.errors import ConfigError
from react_bench.redact import without_userinfo

ENV_DEADLINE = "REACT_BENCH_DOWNLOAD_DEADLINE_S"
DEADLINE_BASE_S = 20.0  # to connect and start, on any line
SLOW_LINE_BPS = 50_000  # the slowest line a default deadline allows for (400 kbit/s)
READ_TIMEOUT_S = 30.0  # the longest silence between two reads
HEAD_BYTES = 64  # the first bytes kept, to say what came back
ENCODING_SLACK = 64 * 1024  # what a compressed body may add to the file's size on the wire (headers, framing)


class DownloadError(ConfigError):
    """A download that was refused, cut at its bound, or could not be made (one line)."""


@dataclass(frozen=True)
class Received:
    """A finished download: its sha256, size, and what the host said it was."""

    sha256: str
    size: int
    content_type: str
    head: bytes  # its first bytes

    @property
    def seen(self) -> str:
        """What came back, for an error line: ``text/html, 5,120 bytes: '<!DOCTYPE html><html>...'``."""
        shown = "".join(c if c.isprintable() else " " for c in self.head.decode("utf-8", "replace"))
        shown = without_userinfo(" ".join(shown.split()))[:48]
        return f"{self.content_type or 'no content type'}, {self.size:,} bytes: {shown!r}"


def deadline_for(size: int) -> float:
    """The whole transfer's deadline for a file of ``size`` bytes (module docstring)."""
    raw = os.environ.get(ENV_DEADLINE, "").strip()
    if raw:
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(f"{ENV_DEADLINE}={raw}: not a number of seconds") from None
        if value <= 0:
            raise ConfigError(f"{ENV_DEADLINE}={raw}: must be above 0")
        return value
    return DEADLINE_BASE_S + size / SLOW_LINE_BPS


def download(url: str, dest: Path, *, label: str, size: int, headers: dict[str, str] | None = None) -> Received:
    """``url`` into ``dest``, at most ``size`` bytes within ``deadline_for(size)`` (module docstring).
    ``DownloadError`` on an error status, the network, or a bound passed; the bytes are the
    caller's to check."""
    import httpx2

    host = without_userinfo(url.split("?", 1)[0])
    deadline_s = deadline_for(size)
    limit = size + 1  # one byte past the known size is proof enough that it is not the file
    started = time.monotonic()

    def fail(why: str) -> DownloadError:
        return DownloadError(f"{label} from {host} ({size:,} bytes): {why}")

    digest = hashlib.sha256()
    written, head = 0, b""
    timeout = httpx2.Timeout(min(READ_TIMEOUT_S, deadline_s), connect=min(10.0, deadline_s))
    try:
        with httpx2.stream("GET", url, headers=headers, timeout=timeout, follow_redirects=True) as response:
            if response.status_code != 200:
                raise fail(f"the host answered {response.status_code}")
            announced = response.headers.get("content-length", "")
            encoded = "content-encoding" in response.headers
            if announced.isdigit() and not encoded and int(announced) > size:
                raise fail(f"the host announces {int(announced):,} bytes; nothing was read")
            content_type = response.headers.get("content-type", "")
            raw_limit = limit + (ENCODING_SLACK if encoded else 0)  # a small file can grow when compressed
            with open(dest, "wb") as handle:
                for block in response.iter_bytes():
                    if len(head) < HEAD_BYTES:
                        head += block[: HEAD_BYTES - len(head)]
                    written += len(block)
                    if written >= limit or response.num_bytes_downloaded >= raw_limit:
                        raise fail(
                            f"the host sent more than the file's {size:,} bytes; stopped reading at "
                            f"{max(written, response.num_bytes_downloaded):,}"
                        )
                    digest.update(block)
                    handle.write(block)
                    if time.monotonic() - started > deadline_s:
                        raise fail(
                            f"not finished within {deadline_s:.0f} s ({written:,} bytes came); "
                            f"{ENV_DEADLINE} sets the deadline"
                        )
    except httpx2.TimeoutException:
        raise fail(
            f"the host went silent ({written:,} bytes came in {time.monotonic() - started:.0f} s); "
            f"{ENV_DEADLINE} sets the deadline"
        ) from None
    except httpx2.HTTPError as err:
        raise fail(f"cannot be fetched ({type(err).__name__}: {' '.join(str(err).split())[:200]})") from None
    if time.monotonic() - started > deadline_s:
        raise fail(f"not finished within {deadline_s:.0f} s; {ENV_DEADLINE} sets the deadline")
    return Received(digest.hexdigest(), written, content_type, head)
