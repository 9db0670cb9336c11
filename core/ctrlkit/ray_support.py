"""Ray, for ``--executor ray``: imported here and only when a command asks for it, so that the
toolkit stays Ray-free by default (``pip install 'ctrlkit[ray]'`` brings it)."""

from __future__ import annotations

from .errors import ConfigurationError

EXECUTORS = ("local", "ray")


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
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = address or "a new local Ray instance"
        raise ConfigurationError(f"{what}: cannot connect to {where}: {' '.join(str(exc).split())}") from None
    return ray
