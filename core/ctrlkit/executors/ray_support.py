"""Ray, for ``--executor ray``: imported here and only when a command asks for it, so that the
toolkit stays Ray-free by default (``pip install 'ctrlkit[ray]'`` brings it)."""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import os
import re
import socket
import sys
from typing import Any, Mapping, Sequence

from ..errors import ConfigurationError

PROBE_SECONDS = 5.0
"""How long a cluster's address may take to accept a connection: Ray itself retries an
unreachable address for minutes, printing a warning every few seconds."""
WORKER_VARIABLES = ("PYTHONPATH", "CTRLKIT_LOAD_PLUGINS", "CTRLKIT_STRICT_PLUGINS", "CTRLKIT_PLUGIN_TIMEOUT")
"""What decides which plugins a process loads (:mod:`ctrlkit.plugins`): a worker gets the driver's."""

_GIVEN: dict[str, str] = {}
"""The address :func:`connect` was given (or found in ``RAY_ADDRESS``) for each cluster it connected
to, by the cluster's GCS address: a Ray Client address (``ray://HOST:PORT``) names the client
server, which the GCS address is not."""



def require_ray(what: str):
    """The ``ray`` module, or one line saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigurationError(f"{what} needs Ray: pip install 'ctrlkit[ray]'") from None
    return ray


def connect(address: str | None, what: str = "--executor ray"):
    """Ray, connected to the cluster at ``address`` (``HOST:PORT`` of a running ``ray start
    --head``), or with no address to the one ``RAY_ADDRESS`` names, else to a new local instance.
    A connection already made in this process is reused for no address or the address of its
    cluster (:func:`check_same_cluster`); another cluster's is one line, as is an unreachable one."""
    ray = require_ray(what)
    if ray.is_initialized():
        check_same_cluster(ray, address, what)
        return ray
    if address is not None:
        check_reachable(address, what, ray)
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = address or "a new local Ray instance"
        raise ConfigurationError(f"{what}: cannot connect to {where}: {' '.join(str(exc).split())}") from None
    given = address or os.environ.get("RAY_ADDRESS")
    if given:
        _GIVEN[ray.get_runtime_context().gcs_address] = given
    return ray


def check_same_cluster(ray, address: str | None, what: str = "--executor ray") -> None:
    """One line when ``address`` names another cluster than the one this process is connected to:
    Ray cannot hold two connections, and would run on the first. The same cluster is its GCS
    address or the address this module connected to it with, port for port, the host by name or by
    any address it resolves to, a loopback one standing for this node's address as it does when
    Ray connects (``localhost:6379`` is the GCS at ``192.0.2.2:6379`` on this node). No address,
    or one Ray resolves itself (``auto``, ``local``), reuses the connection."""
    wanted = host_and_port(address) if address is not None else None
    if wanted is None:
        return
    current = ray.get_runtime_context().gcs_address
    known = [place for name in (current, _GIVEN.get(current)) if name and (place := host_and_port(name))]
    here = ray.util.get_node_ip_address()
    if not any(_same_place(wanted, place, here) for place in known):
        raise ConfigurationError(f"{what}: this process is connected to the Ray cluster at {current}, not {address}; "
                                 "give no address to use it, or call ray.shutdown() first")


def host_and_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of ``HOST:PORT``, ``[IPV6]:PORT`` or ``ray://HOST:PORT``; None for other forms."""
    host, colon, port = address.removeprefix("ray://").rpartition(":")
    if not colon or not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def _same_place(one: tuple[str, int], other: tuple[str, int], here: str) -> bool:
    return one[1] == other[1] and bool(_hosts(one[0], here) & _hosts(other[0], here))


def _hosts(host: str, here: str) -> set[str]:
    """``host`` and the addresses it resolves to, a loopback address as ``here``."""
    try:
        found = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        found = set()
    return {host.lower()} | {here if _is_loopback(name) else name for name in found}


def _is_loopback(name: str) -> bool:
    try:
        return ipaddress.ip_address(name.partition("%")[0]).is_loopback
    except ValueError:
        return False


def check_reachable(address: str, what: str, ray) -> None:
    """One line, at once, when nothing accepts a connection at ``address`` (``HOST:PORT``, or
    ``ray://HOST:PORT`` for Ray Client); other forms (``auto``, ``local``) are left to Ray. A
    loopback ``HOST:PORT`` is probed where ``ray`` will look for it too, this node's address (unless
    ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``): a cluster that listens on loopback alone would have
    Ray retry there for minutes."""
    place = host_and_port(address)
    if place is None:
        return
    if failure := _refusal(place):
        raise ConfigurationError(f"{what}: cannot connect to {address}: {failure}; is a Ray cluster running there "
                                 "(ray start --head)?")
    if address.startswith("ray://") or not (place[0] == "localhost" or _is_loopback(place[0])):
        return
    node = ray.util.get_node_ip_address()
    if not _is_loopback(node) and _refusal((node, place[1])):
        raise ConfigurationError(f"{what}: the Ray cluster at {address} answers on loopback only, and Ray looks for "
                                 f"it at this node's address, {node}: set RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 here, "
                                 "as where the cluster was started")


def _refusal(place: tuple[str, int]) -> str:
    """Why nothing accepts a connection at ``place``; empty when something does."""
    try:
        socket.create_connection(place, timeout=PROBE_SECONDS).close()
    except (OSError, ValueError) as exc:  # ValueError: a port out of range
        return " ".join(str(getattr(exc, "strerror", None) or exc).split())
    return ""


def worker_environment() -> dict:
    """The ``runtime_env`` of a Ray worker (a sweep cell's task, a run's generation actor):
    :func:`worker_env_vars`, or none when the driver has none of them set, so that Ray can give the
    task or actor one of the worker processes it keeps started (a runtime_env of its own needs a new
    process). Torch's threads are Ray's: OMP_NUM_THREADS is the CPUs the task or actor holds (1),
    unless the cluster was started with OMP_NUM_THREADS set, which Ray keeps."""
    env = worker_env_vars()
    return {"env_vars": env} if env else {}


def installed() -> dict:
    """What a Ray worker must have as the driver has it: the versions of ctrlkit and of each plugin
    distribution loaded (by normalized name), and ctrlkit's git commit where it runs from a checkout;
    taken once a process, as the code it imported stays what it runs."""
    return dict(_installed())


@functools.cache
def _installed() -> tuple:
    from ..results import versions

    found = versions()
    return ("ctrlkit", found["ctrlkit"]), ("git commit", found["git"]), *(
        (f"plugin {re.sub(r'[-_.]+', '-', name).lower()}", version) for name, version in found["plugins"].items())


def check_installed(driver: Mapping[str, Any]) -> None:
    """Refuse, in one line, a worker whose ctrlkit or plugins are other versions than the driver's
    (``driver``: :func:`installed` there): another install makes other outputs under the same cache
    keys. What one side lacks is not compared: a commit (no git on a node, a wheel there), a plugin
    (one the worker lacks fails the cell that names it; one the driver lacks as a distribution, it
    may have registered in its process)."""
    here = installed()
    differ = [name for name in sorted(driver.keys() & here.keys())
              if None not in (driver[name], here[name]) and driver[name] != here[name]]
    if differ:
        shown = "; ".join(f"{name} {here[name]} (the driver: {driver[name]})" for name in differ)
        raise ConfigurationError(f"--executor ray: node {socket.gethostname()} has another ctrlkit install than "
                                 f"the driver: {shown}; install the same ctrlkit and plugins on every node")


def match_torch_threads() -> None:
    """In a Ray worker, run torch on the threads OMP_NUM_THREADS names. Ray sets the variable (the
    CPUs the task or actor holds) when it hands the worker its work, and torch reads it once, when
    imported: a worker process that imported torch before that (a cluster started with
    ``RAY_preload_python_modules=torch``) would run one thread per core on one CPU's share."""
    torch = sys.modules.get("torch")
    threads = os.environ.get("OMP_NUM_THREADS", "").strip()
    if torch is not None and threads.isascii() and threads.isdigit() and int(threads) > 0:
        torch.set_num_threads(int(threads))



def stable_shards(names: Sequence[str], shards: int) -> list[int]:
    """The shard of each of ``names``: the names ranked by their sha256 (equal names by their
    position) and dealt out in that order, one to each shard in turn, so that the shards' sizes
    differ by one at most (a hash modulo ``shards`` leaves them as uneven as chance makes them: 63
    and 57 of the bundled sample's 120). The same on every machine, process and run for the same
    names, as Python's salted ``hash`` is not, and whatever order the names come in, but for equal
    names."""
    ranked = sorted(range(len(names)), key=lambda i: (hashlib.sha256(names[i].encode("utf-8", "surrogatepass"))
                                                      .digest(), i))
    shard_of = [0] * len(names)
    for rank, i in enumerate(ranked):
        shard_of[i] = rank % shards
    return shard_of


def worker_env_vars() -> dict[str, str]:
    """The environment variables of a Ray worker process (``runtime_env={"env_vars": ...}``): the
    driver's :data:`WORKER_VARIABLES` that are set, so that a worker loads the plugins the driver
    loads, from the same paths (the nodes have the driver's Python environment; the driver's
    PYTHONPATH replaces the node's, since Ray's ``${PYTHONPATH}`` expansion would leave an empty
    entry, the working folder, on a node that has none). Everything else (API keys,
    CTRLKIT_CACHE_DIR, HF_HOME) is the node's own."""
    return {name: os.environ[name] for name in WORKER_VARIABLES if name in os.environ}


def backbone_resources(options: Mapping[str, Any], cluster: Mapping[str, float]) -> dict[str, int]:
    """What a Ray actor holding a backbone with these (resolved) options reserves: a GPU when its
    ``device`` option names CUDA, or is empty (CUDA when present) on a cluster with GPUs; else a CPU."""
    device = str(options.get("device", "cpu") or ("cuda" if cluster.get("GPU", 0) else "cpu"))
    return {"num_gpus": 1} if device.startswith("cuda") else {"num_cpus": 1}


def check_capacity(resources: Mapping[str, int], count: int, cluster: Mapping[str, float], what: str) -> None:
    """Refuse, in one line, ``count`` actors each reserving ``resources`` on a cluster that has
    fewer in all (they would wait for ever)."""
    names = {"num_cpus": "CPU", "num_gpus": "GPU"}
    for key, amount in resources.items():
        have = cluster.get(names[key], 0)
        if amount * count > have:
            raise ConfigurationError(f"{what} needs {amount * count:g} {names[key]}s ({count} workers, {amount:g} "
                                     f"each); the Ray cluster has {have:g}: give fewer --workers")
