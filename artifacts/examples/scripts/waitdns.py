"""Waits until the rendezvous host resolves.

A replica's DNS name exists once its pod has an address, so a worker that
starts before the master would fail its first lookup. Waiting here is what
a careful training script does on any cluster.

With --is-host it exits 0 when the rendezvous host is this pod, by address.
"""
import os
import socket
import sys
import time


def wait_for(host, timeout=120.0):
    start = time.monotonic()
    deadline = start + timeout
    while True:
        try:
            address = socket.getaddrinfo(host, None)[0][4][0]
            print(f"waitdns: {host} resolved after {time.monotonic() - start:.3f}s at={time.time():.3f}", flush=True)
            return address
        except socket.gaierror as err:
            if time.monotonic() > deadline:
                sys.exit(f"{host} did not resolve within {timeout:.0f}s: {err}")
            time.sleep(0.5)


def master():
    return os.environ.get("PET_MASTER_ADDR") or os.environ.get("MASTER_ADDR")


def wait_for_master():
    if master():
        wait_for(master())


def is_host():
    if not master():
        return False
    own = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)}
    return wait_for(master()) in own


if __name__ == "__main__":
    if sys.argv[1:] == ["--is-host"]:
        sys.exit(0 if is_host() else 1)
    wait_for_master()
