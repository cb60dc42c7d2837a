"""What must never reach a file or the console: secrets, stripped where they could slip in.

- ``without_userinfo``: a URL's ``user:password@`` removed, in any text (a model's base URL with
  credentials in it, an error message that quotes the URL). Linear in the text.
- ``redacted``: the same through a config mapping (run.json's ``config`` and ``composed``).
- ``secret_name``: whether an environment variable's *name* says it holds a secret (a key, a
  token, a password); such variables travel to Ray workers by the worker's setup hook, never as
  ``runtime_env`` variables, which Ray writes in clear into its session logs.
- ``route_signature``: an HMAC, under a key of this user's that never leaves the machine
  (``<cache>/route.key``, 0600), of where a run's requests go and which variable holds its key.
  run.json carries it, so ``resume=`` can tell a route this user chose (a run of their own) from
  one a folder someone sent names (``runconfig.own_route``).

docs/security.md says what the project trusts and what it does not.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_AUTHORITY_ENDS = frozenset("/?#\\ \t\r\n\"'<>()[]{},;")
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")


def without_userinfo(text: str) -> str:
    """``text`` with the ``user:password@`` of every ``scheme://`` URL in it removed
    (``http://u:p@host/v1`` -> ``http://host/v1``); anything else unchanged."""
    if "://" not in text or "@" not in text:
        return text
    out: list[str] = []
    at, n = 0, len(text)
    while (mark := text.find("://", at)) != -1:
        start = mark + 3
        end = start
        while end < n and text[end] not in _AUTHORITY_ENDS:
            end += 1
        user_end = text.rfind("@", start, end)
        out.append(text[at:start])
        at = start if user_end == -1 else user_end + 1
        if end == start:
            continue
        out.append(text[at:end])
        at = end
    out.append(text[at:])
    return "".join(out)


def redacted(value: Any) -> Any:
    """``value`` (a config: mappings, lists, strings) with every string's URL credentials removed."""
    if isinstance(value, str):
        return without_userinfo(value)
    if isinstance(value, Mapping):
        return {k: redacted(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redacted(v) for v in value]
    return value


def secret_name(name: str) -> bool:
    """Whether an environment variable named ``name`` holds a secret, by its name."""
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


ROUTE_KEY_FILE = "route.key"


def _route_key(create: bool) -> bytes | None:
    from react_bench.paths import cache_dir

    path = Path(cache_dir()) / ROUTE_KEY_FILE
    try:
        return bytes.fromhex(path.read_text().strip())
    except (OSError, ValueError):
        if not create:
            return None
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    tmp = path.with_name(f".{ROUTE_KEY_FILE}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(key.hex())
    os.replace(tmp, path)
    return key


def _route_text(route: Mapping[str, Any]) -> bytes:
    return json.dumps({k: route.get(k) for k in sorted(route)}, sort_keys=True).encode()


def route_signature(route: Mapping[str, Any]) -> str | None:
    """This user's signature of ``route`` (provider, endpoint, key variable) for run.json; None
    where the key cannot be kept (a read-only cache): resume then asks for the route again."""
    try:
        key = _route_key(create=True)
    except OSError:
        return None
    return None if key is None else hmac.new(key, _route_text(route), hashlib.sha256).hexdigest()


def signed_here(route: Mapping[str, Any], signature: object) -> bool:
    """Whether ``signature`` is this user's for ``route`` (False where no key exists yet)."""
    key = _route_key(create=False)
    if key is None or not isinstance(signature, str):
        return False
    return hmac.compare_digest(hmac.new(key, _route_text(route), hashlib.sha256).hexdigest(), signature)
