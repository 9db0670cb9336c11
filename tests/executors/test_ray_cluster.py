"""The tests' Ray cluster (conftest ``ray_cluster``): it listens on loopback only, as every server a
test starts must, and answers only a client holding the session's token."""

import ipaddress
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's /proc/net")

LISTENING = {"tcp": "0A", "tcp6": "0A", "udp": "07", "udp6": "07"}  # TCP_LISTEN; an unconnected UDP socket


def _address(hex_host: str):
    """An address as /proc/net writes it: hex, each 32-bit word in the machine's byte order."""
    raw = bytes.fromhex(hex_host)
    if sys.byteorder == "little":
        raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return ipaddress.ip_address(raw)


def _is_loopback(address) -> bool:
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1, an IPv6 socket's IPv4 loopback
    return address.is_loopback or bool(mapped and mapped.is_loopback)


def _listening(pids) -> list[tuple[int, object, int]]:
    """``(pid, address, port)`` of each TCP socket listening, and each UDP socket bound, in ``pids``."""
    owner = {}
    for pid in pids:
        try:
            descriptors = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:  # the process has gone
            continue
        for descriptor in descriptors:
            try:
                target = os.readlink(descriptor)
            except OSError:
                continue
            if target.startswith("socket:["):
                owner[int(target[len("socket:[") : -1])] = pid
    found = []
    for table, state in LISTENING.items():
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == state and int(fields[9]) in owner:
                host, port = fields[1].split(":")
                found.append((owner[int(fields[9])], _address(host), int(port, 16)))
    return found


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def test_the_socket_reader_finds_a_known_socket_and_reads_addresses_as_written():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert (os.getpid(), ipaddress.ip_address("127.0.0.1"), port) in _listening([os.getpid()])
    if sys.byteorder == "little":
        assert _address("0100007F") == ipaddress.ip_address("127.0.0.1")
        assert _address("0000000000000000FFFF00000100007F") == ipaddress.ip_address("::ffff:127.0.0.1")
    assert not _is_loopback(_address("0" * 32)) and not _is_loopback(_address("0" * 8))  # :: and 0.0.0.0
    assert _is_loopback(ipaddress.ip_address("::ffff:127.0.0.1")) and _is_loopback(ipaddress.ip_address("::1"))


def test_every_socket_of_the_cluster_and_its_driver_listens_on_loopback_only(ray_cluster):
    from ctrlkit.executors.ray_support import connect

    ray = connect(ray_cluster.address)  # this process is a driver: it serves the workers too
    worker = ray.get(ray.remote(lambda: os.getpid()).remote())  # a worker process, started for the task
    pids = ray_cluster.processes()
    assert worker in pids
    found = _listening([*pids, os.getpid()])
    names = {_name(pid) for pid, _, _ in found}
    assert {"gcs_server", "raylet"} <= names, names  # the core servers were seen
    port = int(ray_cluster.address.rpartition(":")[2])
    assert any(_name(pid) == "gcs_server" and at == port for pid, _, at in found)
    assert any(pid == worker for pid, _, _ in found) and any(pid == os.getpid() for pid, _, _ in found)
    exposed = [(pid, _name(pid), str(address), at) for pid, address, at in found if not _is_loopback(address)]
    assert not exposed, f"listening beyond loopback: {exposed}"


CONNECT = """
import sys
import ray
try:
    ray.init(address=sys.argv[1], include_dashboard=False, log_to_driver=False)
except ConnectionError:
    sys.exit(3)
print(ray.cluster_resources().get("CPU"))
"""


@pytest.mark.parametrize("token, refused", [("the session's", False), ("another", True), (None, True)])
def test_the_cluster_answers_only_the_sessions_token(ray_cluster, tmp_path, token, refused):
    env = {**os.environ, "RAY_NUM_REDIS_GET_RETRIES": "2", "HOME": str(tmp_path)}  # no ~/.ray/auth_token
    if token == "another":
        env["RAY_AUTH_TOKEN"] = os.urandom(32).hex()
    elif token is None:  # a client that sends none
        del env["RAY_AUTH_TOKEN"], env["RAY_AUTH_MODE"]
    done = subprocess.run([sys.executable, "-c", CONNECT, ray_cluster.address], capture_output=True, text=True,
                          env=env, timeout=120)
    if refused:
        assert done.returncode == 3, done.stderr[-2000:]
        assert "Authentication token is missing or incorrect" in done.stderr
    else:
        assert done.returncode == 0 and done.stdout.strip() == "2.0", done.stderr[-2000:]
