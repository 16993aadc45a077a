"""Direct TCP links between the Dask workers of a fit (``skboost.dask``).

The shards' histogram exchanges are latency-bound: hundreds of small
collective steps per fit (two per tree level). Through Dask's worker RPC
every step costs a thread hand-over to the event loop on both sides, a
message framed and deserialised by Dask, and back (~1.3 ms and ~230 MB/s
measured on two local workers). Here every pair of shards holds one plain
TCP connection, opened through Dask (each worker listens on its own
address's host and the client hands the endpoints around, so the data
still never travels through the client), and the shard's own thread sends
and receives the raw buffers itself: no event loop, no serialisation of
the histograms (their bytes are read straight into the array they are
summed from), a poll over the sockets of the step.

``SocketExchange`` has the interface of ``reduce.PeerExchange``
(``reduce``, ``allgather``, ``abort``, ``flush``) and the same guarantees:
a lost peer (its connection closes) or an ``abort`` from the client ends
the step at once with an error naming the worker; a peer that sends
nothing ends it after ``timeout`` seconds. The links are used on workers
whose Dask address is plain ``tcp://``; under TLS (or any other protocol)
the exchanges stay on Dask's own comms, so no data travels unencrypted
where the cluster encrypts.
"""

import os
import pickle
import select
import socket
import struct
import sys
import time

import numpy as np

# every message: sequence number of the step, then the payload's length
_HEADER = struct.Struct("<QQ")
_HELLO = struct.Struct("<16sQ")      # the fit's token, the sender's index
_SOCKET_BUFFER = 4 << 20
_MAX_BUFFERS = 512


class LinkError(RuntimeError):
    """The links between the shards could not be opened."""


def listen_on_worker():
    """Listening sockets of this worker, and the endpoint the other shards
    connect to: ``(host, port, local_name)``, ``host`` that of its Dask
    address, ``local_name`` a random name in Linux's abstract namespace of
    Unix sockets (None elsewhere), which a shard on the same machine
    connects to instead: no TCP stack between processes of one host (the
    histograms cross it with about a third of loopback TCP's cost).
    ``([], None)`` where the links are not used (a worker whose address is
    not plain ``tcp://``)."""
    from distributed import get_worker
    from distributed.comm import parse_address
    from distributed.comm.addressing import parse_host_port

    protocol, location = parse_address(get_worker().address)
    if protocol != "tcp":
        return [], None
    host, _ = parse_host_port(location)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server = socket.socket(family, socket.SOCK_STREAM)
    try:
        server.bind((host, 0))
        server.listen(socket.SOMAXCONN)
    except OSError:
        server.close()
        return [], None
    local, local_name = _listen_locally()
    servers = [server] + ([local] if local is not None else [])
    return servers, (host, server.getsockname()[1], local_name)


def _listen_locally():
    """A Unix socket listening on a random abstract name (Linux), and the
    name; ``(None, None)`` where there is none."""
    if not sys.platform.startswith("linux"):
        return None, None
    name = b"\0skboost-" + os.urandom(12).hex().encode()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(name)
        server.listen(socket.SOMAXCONN)
    except OSError:
        server.close()
        return None, None
    return server, name


def _connect(endpoint, timeout):
    """A connection to a shard's ``endpoint``: over its Unix socket when
    it is on this machine (the abstract name answers only there), else
    over TCP."""
    if len(endpoint) > 2 and endpoint[2] is not None:
        local = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        local.settimeout(timeout)
        try:
            local.connect(endpoint[2])
            return local
        except OSError:   # another machine: no such name here
            local.close()
    return socket.create_connection(tuple(endpoint[:2]), timeout=timeout)


def open_links(servers, index, endpoints, token, timeout=10.0):
    """Connect this shard (``index``) with every other: it connects to the
    shards after it and accepts the ones before it (on ``servers``, a
    listening socket or a list of them, which every shard opened before
    any connects). Returns the sockets in shard order (None at
    ``index``); raises ``LinkError`` on failure."""
    if isinstance(servers, socket.socket):
        servers = [servers]
    links = [None] * len(endpoints)
    deadline = time.monotonic() + timeout
    try:
        for j in range(index + 1, len(endpoints)):
            links[j] = _connect(endpoints[j], timeout)
            links[j].sendall(_HELLO.pack(token, index))
        while any(links[j] is None for j in range(index)):
            _accept_one(servers, links, index, token, deadline)
    except OSError as error:
        close_links(links)
        raise LinkError(f"{type(error).__name__}: {error}") from error
    finally:
        for server in servers:
            server.close()
    for link in links:
        if link is not None:
            _tune(link)
    return links


def _accept_one(servers, links, index, token, deadline):
    """Accept one connection on any of ``servers``; kept in ``links`` if
    it says hello with ``token`` from a shard before ``index`` not yet
    linked (else closed: not one of this fit's shards)."""
    ready, _, _ = select.select(servers, [], [],
                                max(deadline - time.monotonic(), 0.0))
    if not ready:
        raise socket.timeout("timed out waiting for the other shards")
    connection, _ = ready[0].accept()
    connection.settimeout(max(deadline - time.monotonic(), 0.01))
    hello = _receive_exactly(connection, _HELLO.size)
    peer_token, j = _HELLO.unpack(hello) if hello else (None, -1)
    if peer_token != token or not 0 <= j < index or links[j]:
        connection.close()
        return
    links[j] = connection


def close_links(links):
    for link in links:
        if link is not None:
            link.close()


def _tune(link):
    if link.family != socket.AF_UNIX:
        link.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):
        try:
            link.setsockopt(socket.SOL_SOCKET, option, _SOCKET_BUFFER)
        except OSError:
            pass
    link.setblocking(False)


def _receive_exactly(connection, n):
    data = b""
    while len(data) < n:
        chunk = connection.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def new_token():
    return os.urandom(16)


class _Incoming:
    """One peer's message of a step being read: the header, then the
    payload into ``buffer`` (given: its size is known; else allocated
    from the header)."""

    def __init__(self, seq, buffer=None):
        self.expected_seq = seq
        self.header = bytearray(_HEADER.size)
        self.buffer = buffer
        self.view = memoryview(self.header)
        self.in_header = True

    def take(self, link):
        """Read what the socket has (never past this message); True when
        the message is complete. Raises ConnectionError on end of file."""
        while True:
            n = link.recv_into(self.view, len(self.view))
            if n == 0:
                raise ConnectionError("connection closed")
            self.view = self.view[n:]
            if len(self.view):
                continue
            if not self.in_header:
                return True
            self._start_payload()
            if not len(self.view):
                return True

    def _start_payload(self):
        self.in_header = False
        seq, size = _HEADER.unpack(self.header)
        if seq != self.expected_seq:
            raise ConnectionError(f"step {seq} during step "
                                  f"{self.expected_seq} (a bug: please "
                                  "report it)")
        if self.buffer is None:
            self.buffer = bytearray(size)
        self.view = memoryview(self.buffer).cast("B")
        if len(self.view) != size:
            raise ConnectionError(f"a message of {size} bytes where "
                                  f"{len(self.view)} were expected")


class SocketExchange:
    """A shard's exchanges with the other shards over direct TCP links.

    Parameters
    ----------
    index : int
        This shard's position among the shards.
    addresses : list of str
        The Dask address of every shard's worker (named in errors).
    bin_ranges : list of (int, int)
        The bins each shard owns.
    links : list of socket or None
        The connection to every other shard (``open_links``).
    timeout : float
        Seconds a step waits for a silent peer.
    """

    poll_seconds = 0.5
    kind = "tcp"   # direct links (over TCP, or Unix sockets on one host)

    def __init__(self, index, addresses, bin_ranges, links, timeout=600.0):
        self.index = index
        self.addresses = addresses
        self.bin_ranges = bin_ranges
        self.links = links
        self.timeout = timeout
        self.seq = 0
        self.aborted = None
        self.sent_bytes = 0
        self._buffers = {}
        # "unix" when every link is a Unix socket (shards on one host)
        self.transport = ("unix" if all(
            link.family == socket.AF_UNIX for link in links
            if link is not None) else "tcp")

    def abort(self, reason):
        """Stop the step under way (called from the event loop)."""
        self.aborted = reason

    def flush(self):
        """Nothing to wait for: a step ends when its sends are done."""

    def close(self):
        close_links(self.links)

    def reduce(self, hists, rows, out=None, out_rows=None):
        """The sum over every shard of ``hists[rows]`` (this shard's
        histograms: ``hists`` of shape (n_rows, n_bins, 2), int64) on this
        shard's bins; valid until the next call (its buffer is reused).
        With ``out``, the sum of ``rows[k]`` goes into ``out[out_rows[k]]``
        instead (rows of the scanner's pool: no further copy) and ``out``
        is returned.

        The pieces go out straight from ``hists`` (one contiguous slice
        per row, no copy) and come in into buffers kept from step to step:
        fresh buffers of megabytes cost a page fault every 4 KiB."""
        self.seq += 1
        rows = np.asarray(rows)
        first, stop = self.bin_ranges[self.index]
        sends, receives = {}, {}
        for j in self._peers():
            a, b = self.bin_ranges[j]
            if b > a:
                sends[j] = [memoryview(hists[r, a:b]).cast("B")
                            for r in rows]
                self.sent_bytes += rows.shape[0] * (b - a) * 2 * 8
            if stop > first:
                receives[j] = self._buffer(j, rows.shape[0], stop - first)
        self._step(sends, receives)
        if out is None:
            out = self._buffer(self.index, rows.shape[0], stop - first)
            out_rows = range(rows.shape[0])
        received = [receives[j] for j in sorted(receives)]
        # row by row (np.take is slow here); int64: exact in any order
        for k, (row, target) in enumerate(zip(rows, out_rows)):
            if not received:
                out[target] = hists[row, first:stop]
                continue
            np.add(hists[row, first:stop], received[0][k], out=out[target])
            for more in received[1:]:
                out[target] += more[k]
        return out

    def _buffer(self, key, n, width):
        """A kept int64 buffer of shape (n, width, 2)."""
        size = n * width * 2
        kept = self._buffers.get(key)
        if kept is None or kept.shape[0] < size:
            kept = self._buffers[key] = np.empty(max(size, 2 * (
                0 if kept is None else kept.shape[0])), dtype=np.int64)
        return kept[:size].reshape(n, width, 2)

    def allgather(self, obj):
        """``obj`` of every shard, in shard order (this one's included)."""
        self.seq += 1
        payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        peers = self._peers()
        received = self._step({j: payload for j in peers},
                              {j: None for j in peers})
        out = [None] * len(self.links)
        for j, buffer in received.items():
            out[j] = pickle.loads(buffer)
        out[self.index] = obj
        return out

    def _peers(self):
        return [j for j in range(len(self.links)) if j != self.index]

    def _step(self, sends, receives):
        """Send ``sends[j]`` to each peer j and read one message from each
        peer of ``receives`` (into the buffer given, or a new one); returns
        the buffers read, by peer."""
        outgoing = {j: [_framed(self.seq, p), 0] for j, p in sends.items()}
        incoming = {j: _Incoming(self.seq, buffer)
                    for j, buffer in receives.items()}
        done = {}
        deadline = time.monotonic() + self.timeout
        poller = select.poll()
        while outgoing or incoming:
            self._send_some(outgoing)
            self._receive_some(incoming, done)
            if not (outgoing or incoming):
                break
            events = self._wait(poller, outgoing, incoming)
            self._check_waiting(incoming, outgoing,
                                deadline if not events else None)
        return done

    def _send_some(self, outgoing):
        """Send what the sockets take of every peer's message (each a
        list of buffers and the position of the first unsent one)."""
        for j in list(outgoing):
            message = outgoing[j]
            buffers = message[0]
            try:
                while message[1] < len(buffers):
                    # at most _MAX_BUFFERS per call (IOV_MAX is 1024)
                    k = message[1]
                    n = self.links[j].sendmsg(buffers[k:k + _MAX_BUFFERS])
                    while k < len(buffers) and n >= len(buffers[k]):
                        n -= len(buffers[k])
                        k += 1
                    if n:
                        buffers[k] = buffers[k][n:]
                    message[1] = k
            except (BlockingIOError, InterruptedError):
                continue
            except OSError as error:
                raise self._lost(j, error) from error
            del outgoing[j]

    def _receive_some(self, incoming, done):
        for j in list(incoming):
            message = incoming[j]
            try:
                complete = message.take(self.links[j])
            except (BlockingIOError, InterruptedError):
                continue
            except OSError as error:
                raise self._lost(j, error) from error
            if complete:
                done[j] = incoming.pop(j).buffer

    def _wait(self, poller, outgoing, incoming):
        """Poll the step's sockets (up to ``poll_seconds``)."""
        for j in self._peers():
            mask = ((select.POLLOUT if j in outgoing else 0)
                    | (select.POLLIN if j in incoming else 0))
            if mask:
                poller.register(self.links[j], mask)
            else:
                try:
                    poller.unregister(self.links[j])
                except KeyError:
                    pass
        return poller.poll(self.poll_seconds * 1000)

    def _check_waiting(self, incoming, outgoing, deadline):
        """An abort from the client, or (``deadline`` given: nothing came
        in the last poll) the step's time is up: an error."""
        if self.aborted is not None:
            raise RuntimeError(
                f"skboost.dask: training stopped ({self.aborted})")
        if deadline is not None and time.monotonic() > deadline:
            missing = sorted(self.addresses[j]
                             for j in set(incoming) | set(outgoing))
            raise RuntimeError(
                "skboost.dask: no histograms from (or to) the worker(s) "
                f"{', '.join(missing)} within {self.timeout:.0f} s")

    def _lost(self, j, error):
        return RuntimeError(
            f"skboost.dask: lost the worker {self.addresses[j]} during the "
            f"histogram exchange ({type(error).__name__}: {error}); "
            "training stopped")


def _framed(seq, payload):
    """A message: the header, then the payload (bytes, or a list of
    byte memoryviews sent one after the other), as memoryviews."""
    parts = payload if isinstance(payload, list) else [
        memoryview(payload).cast("B")]
    size = sum(len(part) for part in parts)
    return [memoryview(_HEADER.pack(seq, size))] + parts
