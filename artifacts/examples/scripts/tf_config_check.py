"""What a TensorFlow server does with TF_CONFIG, without TensorFlow.

Reads TF_CONFIG, resolves the address of every task in its cluster, listens
on its own address (when it has one: an evaluator is outside the cluster),
connects to every other task and names itself, and stays until every other
task of the cluster has connected to it, and a little longer. Prints one line per peer and exits
0, or exits 1 when a peer cannot be reached within the timeout.
"""
import json
import os
import socket
import sys
import threading
import time

TIMEOUT = float(os.environ.get("PEER_TIMEOUT", "180"))
# After every peer has connected, a task keeps answering this long, for
# tasks outside the cluster (an evaluator) that connect last.
LINGER = float(os.environ.get("LINGER", "10"))


def main():
    config = json.loads(os.environ["TF_CONFIG"])
    cluster, task = config["cluster"], config["task"]
    me = f"{task['type']}-{task['index']}"
    tasks = {f"{kind}-{i}": address for kind, addresses in cluster.items() for i, address in enumerate(addresses)}
    own = tasks.pop(me, None)
    deadline = time.monotonic() + TIMEOUT
    print(f"{me}: TF_CONFIG names {len(tasks)} peers; own address {own}", flush=True)

    heard = set()
    done = threading.Event()
    if own:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("0.0.0.0", int(own.rsplit(":", 1)[1])))
        listener.listen(16)
        expected = {name for name in tasks if not name.startswith("evaluator")}

        def accept():
            while True:
                conn, _ = listener.accept()
                with conn:
                    name = conn.recv(256).decode().strip()
                    conn.sendall(me.encode())
                    heard.add(name)
                    print(f"{me}: heard from {name}", flush=True)
                if expected <= heard:
                    done.set()

        threading.Thread(target=accept, daemon=True).start()
    else:
        done.set()

    for name, address in sorted(tasks.items()):
        host, port = address.rsplit(":", 1)
        while True:
            try:
                ip = socket.getaddrinfo(host, None, socket.AF_INET)[0][4][0]
                with socket.create_connection((ip, int(port)), timeout=5) as conn:
                    conn.sendall(me.encode())
                    answer = conn.recv(256).decode()
                print(f"{me}: reached {name} at {address} ({ip}), it answered {answer}", flush=True)
                break
            except OSError as err:
                if time.monotonic() > deadline:
                    print(f"{me}: cannot reach {name} at {address}: {err}", flush=True)
                    sys.exit(1)
                time.sleep(0.5)

    if not done.wait(max(0.0, deadline - time.monotonic())):
        print(f"{me}: only {sorted(heard)} connected within {TIMEOUT:.0f}s", flush=True)
        sys.exit(1)
    print(f"{me}: reached all {len(tasks)} peers", flush=True)
    if own:
        time.sleep(LINGER)


if __name__ == "__main__":
    main()
