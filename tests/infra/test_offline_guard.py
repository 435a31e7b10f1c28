"""The session guard blocks non-loopback network access and keeps loopback open."""

import os
import socket

import pytest

from conftest import NetworkAccessError


def test_offline_env():
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["HF_DATASETS_OFFLINE"] == "1"


def test_public_address_is_blocked():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    with pytest.raises(NetworkAccessError, match="offline"):
        s.connect(("93.184.216.34", 80))
    s.close()
    with pytest.raises(NetworkAccessError):
        socket.getaddrinfo("huggingface.co", 443)


def test_loopback_is_open():
    """A loopback connection is accepted and carries bytes both ways (DeepSpeed and torchrun
    rendezvous on it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=5) as client:
            peer, _ = server.accept()
            with peer:
                client.sendall(b"ping")
                assert peer.recv(4) == b"ping"
                peer.sendall(b"pong")
                assert client.recv(4) == b"pong"
            assert client.getpeername() == server.getsockname()
