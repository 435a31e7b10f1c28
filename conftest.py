"""Test-session guards, loaded before any test module: tests run offline.

* ``HF_HUB_OFFLINE`` / ``HF_DATASETS_OFFLINE`` are forced on (child processes inherit them).
* Any socket connection or name lookup to a non-loopback address fails the test with
  ``NetworkAccessError``. Loopback stays open: DeepSpeed and torchrun rendezvous on it.
"""

import ipaddress
import os
import socket

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MPLBACKEND", "Agg")


class NetworkAccessError(RuntimeError):
    pass


def _is_loopback(host) -> bool:
    if host in ("localhost", "", None) or isinstance(host, bytes) and host == b"localhost":
        return True
    try:
        return ipaddress.ip_address(host.decode() if isinstance(host, bytes) else host).is_loopback
    except ValueError:
        return False


_connect, _connect_ex, _getaddrinfo = (
    socket.socket.connect,
    socket.socket.connect_ex,
    socket.getaddrinfo,
)


def _check(sock, address):
    if sock.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address[0]):
        raise NetworkAccessError(f"test tried to reach {address!r}: tests must run offline")


def _guarded_connect(self, address):
    _check(self, address)
    return _connect(self, address)


def _guarded_connect_ex(self, address):
    _check(self, address)
    return _connect_ex(self, address)


def _guarded_getaddrinfo(host, *args, **kwargs):
    if not _is_loopback(host) and host != socket.gethostname():
        raise NetworkAccessError(f"test tried to resolve {host!r}: tests must run offline")
    return _getaddrinfo(host, *args, **kwargs)


@pytest.fixture(autouse=True, scope="session")
def _offline_guard():
    socket.socket.connect, socket.socket.connect_ex = _guarded_connect, _guarded_connect_ex
    socket.getaddrinfo = _guarded_getaddrinfo
    yield
    socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = (
        _connect,
        _connect_ex,
        _getaddrinfo,
    )
