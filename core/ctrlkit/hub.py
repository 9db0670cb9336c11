"""Whether the Hugging Face Hub can be reached, asked in seconds.

A model or dataset name that is not a local folder is fetched from the Hub; offline,
huggingface_hub retries each file with backoff for about a minute before transformers gives
up in two lines. Before such a load, ctrlkit checks the Hub's endpoint (or the proxy that
leads to it) with one connection of at most ``PROBE_SECONDS``; when it cannot be reached, the
load uses the local Hub cache only, and fails at once, in one line, when the name is not there.
"""

from __future__ import annotations

import os
import socket
import urllib.parse
import urllib.request
from pathlib import Path

from .secrets import scrub_text

PROBE_SECONDS = 3.0
DEFAULT_ENDPOINT = "https://huggingface.co"
_TRUE = {"1", "on", "yes", "true"}


def is_local(name: str) -> bool:
    """A path (one that exists here, or is written as a path: /x, ./x, ~/x), not a Hub name."""
    return name.startswith((".", "/", "~")) or Path(name).expanduser().exists()


def offline_setting() -> str | None:
    """``"HF_HUB_OFFLINE is set"`` (or TRANSFORMERS_OFFLINE) when the user asked for offline mode."""
    for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(variable, "").strip().lower() in _TRUE:
            return f"{variable} is set"
    return None


def hub_unreachable() -> str | None:
    """Why the Hub cannot be used now, in words, or None when its endpoint accepts a connection:
    ``HF_HUB_OFFLINE`` is set, or the host (or the proxy) cannot be resolved or connected to."""
    setting = offline_setting()
    if setting:
        return setting
    endpoint = os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT
    try:  # urllib's error for a malformed IPv6 host quotes it: not shown, as a proxy may hold a password
        target = urllib.parse.urlsplit(endpoint)
        proxy = _proxy(target.scheme, target.hostname or "")
        where = urllib.parse.urlsplit(proxy) if proxy else target
        host, port = where.hostname, where.port or (443 if where.scheme == "https" else 80)
    except ValueError:
        return "the endpoint ($HF_ENDPOINT) or its proxy is not a well-formed URL (a host in brackets that is " \
               "not an IPv6 address, or a port that is not a number from 1 to 65535)"
    if not host:
        return f"the endpoint {endpoint!r} names no host"
    shown = f"{'proxy ' if proxy else ''}{host}:{port}"
    try:
        socket.create_connection((host, port), timeout=PROBE_SECONDS).close()
    except socket.gaierror:
        return f"{shown}: the name does not resolve"
    except TimeoutError:
        return f"{shown}: no answer within {PROBE_SECONDS:g} s"
    except OSError as exc:
        return f"{shown}: {exc.strerror or exc}"
    return None


def _proxy(scheme: str, host: str) -> str | None:
    """The proxy a request to ``host`` goes through ($https_proxy and the like, minus $no_proxy)."""
    proxies = urllib.request.getproxies()
    proxy = proxies.get(scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(host):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def not_found_offline(what: str, name: str, why: str) -> str:
    """The one-line error for a Hub name that cannot be loaded while the Hub is unreachable."""
    return scrub_text(f"{what}: {name!r} is not a local folder, the Hugging Face Hub cannot be reached ({why}), "
                      f"and it is not in the local Hub cache; give the path of a local copy")
