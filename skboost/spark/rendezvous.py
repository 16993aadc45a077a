"""Where the barrier tasks of a Spark fit find each other's endpoints.

``BarrierTaskContext.allGather`` does it, but Spark's barrier waits in
steps of one second (its tasks poll the coordinator's answer every
second), which is a second of every fit. The driver instead serves one
short exchange over TCP: each task connects, sends its index, its stage,
its endpoint and its failure so far (JSON, one line), and once every task
of the stage has sent its line, each gets all of them back. Tasks that cannot reach the driver (a firewall between executors
and driver) fall back to ``allGather``.
"""

import json
import socket
import threading

# a task that reaches the driver gets its answer when its peers arrive:
# the barrier stage starts them together, so the wait is short, but a
# peer's executor may be slow to start
CONNECT_SECONDS = 10.0
# how long a task waits there for its peers: a task whose peers never
# come (a stage Spark launched in part) errs instead of hanging
PEERS_SECONDS = 300.0


class Rendezvous:
    """The driver's side: a listening socket and a thread answering a
    stage's tasks once all ``n_tasks`` arrived (a context manager: closed
    with the fit)."""

    def __init__(self, host, n_tasks, token):
        self.n_tasks, self.token = n_tasks, token.hex()
        self.server = socket.create_server(("", 0))
        self.address = (host, self.server.getsockname()[1])
        self.waiting = {}   # stage -> {index: (entry, connection)}
        self.thread = threading.Thread(target=self._serve, daemon=True,
                                       name="skboost-spark-rendezvous")
        self.thread.start()

    def _serve(self):
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:   # closed: the fit is over
                return
            try:
                self._arrived(connection)
            except (OSError, ValueError, KeyError, TypeError):
                connection.close()   # not one of this fit's tasks

    def _arrived(self, connection):
        connection.settimeout(CONNECT_SECONDS)
        message = json.loads(connection.makefile("r").readline())
        if message["token"] != self.token:
            raise ValueError("another fit's task")
        # a retried stage keeps its id: a task of the new attempt takes
        # the place of its predecessor (killed with the failed attempt)
        group = self.waiting.setdefault(message["stage"], {})
        if message["index"] in group:
            group[message["index"]][1].close()
        group[message["index"]] = (message["entry"], connection)
        if len(group) < self.n_tasks:
            return
        del self.waiting[message["stage"]]
        answer = (json.dumps([group[k][0] for k in sorted(group)])
                  + "\n").encode()
        for _, peer in group.values():
            try:
                peer.sendall(answer)
            except OSError:
                pass   # that task is gone: its peers will find out
            peer.close()

    def close(self):
        self.server.close()
        for group in self.waiting.values():
            for _, connection in group.values():
                connection.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def gather(context, address, token, index, entry):
    """Every task's ``entry`` (JSON values), in task order: from the
    driver's ``Rendezvous`` at ``address``, or through
    ``BarrierTaskContext.allGather`` when the driver cannot be reached."""
    if address is not None:
        try:
            connection = socket.create_connection(tuple(address),
                                                  timeout=CONNECT_SECONDS)
        except OSError:
            connection = None
        if connection is not None:
            with connection:
                connection.settimeout(PEERS_SECONDS)   # peers may be slow
                connection.sendall((json.dumps({
                    "token": token.hex(), "index": index, "entry": entry,
                    "stage": context.stageId()}) + "\n").encode())
                try:
                    return json.loads(connection.makefile("r").readline())
                except socket.timeout:
                    raise RuntimeError(
                        f"skboost.spark: the stage's other tasks did not "
                        f"arrive within {PEERS_SECONDS:.0f} s") from None
    return [json.loads(m) for m in context.allGather(json.dumps(entry))]
