"""A Ray cluster of one machine for the tests and the benchmarks: ``ray start --head --block`` as a
process of its own, reachable on loopback only, and only with a token of this process's own.

Ray (2.60) binds its servers (GCS, raylet, object manager, workers, the runtime env agent) to the
node's IP address, and takes ``--node-ip-address=127.0.0.1`` for the machine's outward address
unless ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` (off: one node only); a client resolves a loopback
address the same way, so the variable must be set for the cluster and for every client alike.
:func:`set_environment` sets it, with the token, in ``os.environ``, where the commands started
later find it; before anything imports ray, which reads both when imported. Without a token in the
environment, ``ray start`` takes ~/.ray/auth_token when there is one (any ``ray.init()`` of a new
local instance writes it), while a client not told ``RAY_AUTH_MODE=token`` is refused.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

START_SECONDS = 180


def set_environment() -> None:
    """The variables the cluster and its clients share (see the module docstring), in ``os.environ``."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(32))
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"


def _cluster_environment(extra: dict[str, str]) -> dict[str, str]:
    """This process's environment without OMP_NUM_THREADS (the tests set it to 1 for themselves), as
    a cluster started from a plain shell has it: Ray then gives each task and actor as many torch
    threads as the CPUs it holds; and ``extra``."""
    return {**{name: value for name, value in os.environ.items() if name != "OMP_NUM_THREADS"}, **extra}


_DIES_WITH_PARENT = (
    "import ctypes, os, signal, sys; ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)
"""Runs its arguments as a process that gets SIGTERM when its parent dies (Linux's PR_SET_PDEATHSIG,
kept across exec): a test process killed outright leaves no cluster behind."""


def _free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports free now: a cluster's fixed defaults (the client server's
    10001, the dashboard agent's 52365) would clash with a second cluster on the machine."""
    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [probe.getsockname()[1] for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def _client_server_port(port: int) -> list[str]:
    """The Ray Client server's port, where Ray starts one: only with grpc installed (``ray[client]``),
    and a port given without it is refused."""
    return [f"--ray-client-server-port={port}"] if importlib.util.find_spec("grpc") else []


class LocalCluster:
    """``with LocalCluster(cpus) as cluster:`` a running head at ``cluster.address`` (``127.0.0.1:PORT``),
    started with ``environment`` added to this process's; ``cluster.pid`` is its ``ray start``
    process, ``cluster.start_seconds`` how long it took to start.
    Leaving the block stops it (SIGTERM: it takes its processes with it, and leaves any other cluster
    on the machine alone) and removes its temporary folder."""

    def __init__(self, cpus: int, environment: dict[str, str] | None = None):
        self.cpus = cpus
        self.environment = dict(environment or {})
        self.address = ""
        self.pid = 0
        self.start_seconds = 0.0
        self._head: subprocess.Popen | None = None
        self._temp: Path | None = None

    def __enter__(self) -> "LocalCluster":
        if os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER") != "0" or "RAY_AUTH_TOKEN" not in os.environ:
            raise RuntimeError("call local_ray.set_environment() first, before anything imports ray")
        port, client_port, agent_port = _free_ports(3)
        self._temp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # Ray's socket paths must stay short
        log = self._temp / "start.log"
        started = time.perf_counter()
        with log.open("w") as output:
            self._head = subprocess.Popen(
                [sys.executable, "-c", _DIES_WITH_PARENT, str(Path(sys.executable).with_name("ray")), "start",
                 "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={port}", f"--num-cpus={self.cpus}",
                 f"--dashboard-agent-listen-port={agent_port}", *_client_server_port(client_port),
                 "--include-dashboard=false", f"--temp-dir={self._temp}", "--disable-usage-stats"],
                stdout=output, stderr=subprocess.STDOUT, env=_cluster_environment(self.environment))
        self.pid = self._head.pid
        try:
            while "Ray runtime started" not in log.read_text(errors="replace"):
                if self._head.poll() is not None or time.perf_counter() - started > START_SECONDS:
                    raise RuntimeError(f"ray start failed:\n{log.read_text(errors='replace')[-3000:]}")
                time.sleep(0.2)
        except BaseException:
            self.__exit__()
            raise
        self.start_seconds = time.perf_counter() - started
        self.address = f"127.0.0.1:{port}"
        return self

    def processes(self) -> list[int]:
        """The ids of the ``ray start`` process and all its descendants (GCS, raylet, agents, workers)."""
        children: dict[int, list[int]] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                text = stat.read_text()
            except OSError:  # the process has gone
                continue
            children.setdefault(int(text.rpartition(")")[2].split()[1]), []).append(int(stat.parent.name))
        found, pending = [], [self.pid]
        while pending:
            pid = pending.pop()
            found.append(pid)
            pending.extend(children.get(pid, []))
        return found

    def settle(self, quiet_cpu_seconds: float = 0.05, most_seconds: float = 60.0) -> float:
        """Wait until the cluster's processes, together, use less than ``quiet_cpu_seconds`` of CPU in
        a second (a new cluster starts its idle workers in the background, as a running one does not);
        return the seconds waited."""
        started = time.perf_counter()
        before = self._cpu_seconds()
        while time.perf_counter() - started < most_seconds:
            time.sleep(1.0)
            now = self._cpu_seconds()
            if now - before < quiet_cpu_seconds:
                break
            before = now
        return time.perf_counter() - started

    def _cpu_seconds(self) -> float:
        ticks = 0
        for pid in self.processes():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
        return ticks / os.sysconf("SC_CLK_TCK")

    def __exit__(self, *exc_info) -> None:
        if self._head is not None:
            self._head.terminate()
            try:
                self._head.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._head.kill()
                self._head.wait()
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)
