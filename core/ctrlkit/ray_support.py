"""Ray, for ``--executor ray``: imported here and only when a command asks for it, so that the
toolkit stays Ray-free by default (``pip install 'ctrlkit[ray]'`` brings it)."""

from __future__ import annotations

import os
import socket

from .errors import ConfigurationError

EXECUTORS = ("local", "ray")
PROBE_SECONDS = 5.0
"""How long a cluster's address may take to accept a connection: Ray itself retries an
unreachable address for minutes, printing a warning every few seconds."""
WORKER_VARIABLES = ("PYTHONPATH", "CTRLKIT_LOAD_PLUGINS", "CTRLKIT_STRICT_PLUGINS", "CTRLKIT_PLUGIN_TIMEOUT")
"""What decides which plugins a process loads (:mod:`ctrlkit.plugins`): a worker gets the driver's."""


def check_executor(executor: str) -> str:
    if executor not in EXECUTORS:
        raise ConfigurationError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    return executor


def require_ray(what: str):
    """The ``ray`` module, or one line saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigurationError(f"{what} needs Ray: pip install 'ctrlkit[ray]'") from None
    return ray


def connect(address: str | None, what: str = "--executor ray"):
    """Ray, connected to the cluster at ``address`` (``HOST:PORT`` of a running ``ray start
    --head``), or with no address to the one ``RAY_ADDRESS`` names, else to a new local instance;
    a connection already made in this process is reused. An unreachable address is one line."""
    ray = require_ray(what)
    if ray.is_initialized():
        return ray
    if address is not None:
        check_reachable(address, what)
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = address or "a new local Ray instance"
        raise ConfigurationError(f"{what}: cannot connect to {where}: {' '.join(str(exc).split())}") from None
    return ray


def check_reachable(address: str, what: str = "--executor ray") -> None:
    """One line, at once, when nothing accepts a connection at ``address`` (``HOST:PORT``, or
    ``ray://HOST:PORT`` for Ray Client); other forms (``auto``, ``local``) are left to Ray."""
    host, colon, port = address.removeprefix("ray://").rpartition(":")
    if not colon or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_SECONDS).close()
    except (OSError, ValueError) as exc:  # ValueError: a port out of range
        raise ConfigurationError(f"{what}: cannot connect to {address}: "
                                 f"{' '.join(str(getattr(exc, 'strerror', None) or exc).split())}; is a Ray cluster "
                                 f"running there (ray start --head)?") from None


def worker_environment() -> dict:
    """The ``runtime_env`` of a ctrlkit task: the driver's :data:`WORKER_VARIABLES` that are set, so
    that a worker loads the plugins the driver loads (from the same paths: the nodes have the
    driver's Python environment). Everything else (API keys, ``CTRLKIT_CACHE_DIR``, ``HF_HOME``)
    is the worker node's own."""
    return {"env_vars": {name: os.environ[name] for name in WORKER_VARIABLES if name in os.environ}}
