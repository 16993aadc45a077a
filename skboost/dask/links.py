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

Shards of one machine (every link a Unix socket) share memory besides
(``SocketExchange.share_memory``): each maps an outbox (a Linux
``memfd``, whose descriptor travels over the Unix socket) into every
other, copies the pieces of a reduce there and sends only a note of
where they lie; a peer sums straight from that mapping. The histograms
then cross no socket: a socket copies them twice (into the kernel and
out), a third of a shard's exchange time on two local workers.
"""

import mmap
import os
import pickle
import select
import socket
import struct
import sys
import time

import numpy as np

from ..tree._histogram_sums import sum_histogram_rows

# every message: sequence number of the step, then the payload's length
_HEADER = struct.Struct("<QQ")
_HELLO = struct.Struct("<16sQ")      # the fit's token, the sender's index
_SOCKET_BUFFER = 4 << 20
_MAX_BUFFERS = 512
# a reduce's pieces in the sender's outbox: offset in bytes, rows, bins
_NOTE = struct.Struct("<QQQ")
_NOTE_TAG = b"shared:"
# histograms built in the sender's outbox (``outbox_histograms``): the
# bins of its rows, the first bin and number of bins of the piece, then
# the rows (int64)
_ROWS_NOTE = struct.Struct("<QQQ")
_ROWS_NOTE_TAG = b"pooled:"


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


class _SharedRegion:
    """Memory mapped by several processes: a Linux ``memfd`` of ``size``
    bytes (its pages are allocated as they are first written), mapped
    here; ``fd`` is the descriptor to send to the other processes (closed
    by ``close_descriptor`` once sent)."""

    def __init__(self, fd, size, writable):
        self.fd, self.size = fd, size
        self.map = mmap.mmap(fd, size, prot=mmap.PROT_READ | (
            mmap.PROT_WRITE if writable else 0))

    @classmethod
    def create(cls, size):
        fd = os.memfd_create("skboost-histograms", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, size)
            return cls(fd, size, writable=True)
        except OSError:
            os.close(fd)
            raise

    @classmethod
    def open(cls, fd, size):
        """A peer's region from its descriptor (refused when the file is
        shorter than ``size``: reading past its end would be a SIGBUS)."""
        if os.fstat(fd).st_size < size:
            os.close(fd)
            raise OSError("a shared region shorter than announced")
        region = cls(fd, size, writable=False)
        region.close_descriptor()
        return region

    def close_descriptor(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def array(self, offset, n, width):
        """The int64 histograms (n, width, 2) at byte ``offset``."""
        return np.ndarray((n, width, 2), dtype=np.int64, buffer=self.map,
                          offset=offset)


def _shared_memory_possible(links):
    """Whether this shard can share memory with its peers: every link a
    Unix socket (one machine) and Linux's ``memfd_create``."""
    return (hasattr(os, "memfd_create") and hasattr(socket, "send_fds")
            and all(link.family == socket.AF_UNIX
                    for link in links if link is not None))


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
    n_threads : int
        Threads summing the histograms of a reduce.
    """

    poll_seconds = 0.5
    kind = "tcp"   # direct links (over TCP, or Unix sockets on one host)
    # A step first polls its sockets without sleeping (yielding the core
    # to any other runnable thread) for up to this long before it sleeps
    # in poll(): when the peers arrive within it (the shards run in step)
    # no wake-up is paid. A wake-up from poll() is dear where an idle core
    # halts (a virtual machine's vCPU): on the 2-core benchmark machine
    # (a VM) the step of a shard that arrived over 300 us before its peer
    # ended a median 90 us (mean 320-840 us) after the peer's arrival with
    # a 100 us spin, against 37 us (mean 45 us) with 2 ms; the waits of a
    # fit (two workers, benchmarks/bench_dask.py) went from 0.23 s to
    # 0.16 s a worker. The shards' arrivals at a step are a few hundred
    # microseconds apart (median; 90% within 1.1 ms); a shard that waits
    # longer sleeps after the spin, which yields the core to any other
    # runnable thread at every turn.
    spin_seconds = 2e-3

    def __init__(self, index, addresses, bin_ranges, links, timeout=600.0,
                 n_threads=1):
        self.index = index
        self.n_threads = n_threads
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
        # share_memory: this shard's outbox and every peer's (mapped), and
        # the step of the last reduce whose pieces went through them
        self.outbox, self.inboxes = None, {}
        self._shared_seq = -1
        self.shared_bytes = 0   # of sent_bytes, those through the outbox
        self._outbox_hists = None   # the outbox as histograms (built in)

    def abort(self, reason):
        """Stop the step under way (called from the event loop)."""
        self.aborted = reason

    def flush(self):
        """Nothing to wait for: a step ends when its sends are done."""

    def close(self):
        close_links(self.links)
        self.outbox, self.inboxes = None, {}
        self._outbox_hists = None

    def reduce(self, hists, rows, out=None, out_rows=None,
               subtract_from=None):
        """The sum over every shard of ``hists[rows]`` (this shard's
        histograms: ``hists`` of shape (n_rows, n_bins, 2), int64) on this
        shard's bins; valid until the next call (its buffer is reused).
        With ``out``, the sum of ``rows[k]`` goes into ``out[out_rows[k]]``
        instead (rows of the scanner's pool: no further copy) and ``out``
        is returned; with ``subtract_from`` too, each sum is also taken
        off ``out[subtract_from[k]]`` (its parent's summed histogram,
        which becomes the other child's) in the same pass.

        Over shared memory (``share_memory``) the pieces are copied into
        this shard's outbox (or, built there, ``outbox_histograms``, stay
        where they are) and each peer is sent a note of where its piece
        lies, then sums from the mapping; else they go out straight
        from ``hists`` (one contiguous slice per row, no copy) and come in
        into buffers kept from step to step: fresh buffers of megabytes
        cost a page fault every 4 KiB."""
        built_in_outbox = (hists is self._outbox_hists
                           and self.outbox_writable())
        self.seq += 1
        rows = np.asarray(rows)
        first, stop = self.bin_ranges[self.index]
        shared = self._outbox_free(rows.shape[0], hists.shape[1])
        if built_in_outbox:
            shared, sends = True, self._pooled_sends(hists, rows)
        elif shared:
            sends = self._shared_sends(hists, rows)
        else:
            sends = self._socket_sends(hists, rows)
        receives = {j: None if shared else self._buffer(
            j, rows.shape[0], stop - first)
            for j in self._peers() if stop > first}
        received = self._step(sends, receives)
        if shared:
            received = {j: self._inbox_piece(j, note, rows.shape[0],
                                             stop - first)
                        for j, note in received.items()}
        else:   # the messages' buffers: row k is node k's, from bin 0
            received = {j: (buffer, None, 0)
                        for j, buffer in received.items()}
        if out is None:
            out = self._buffer(self.index, rows.shape[0], stop - first)
            out_rows = np.arange(rows.shape[0])
        # int64: exact in any order; one pass per node over every piece
        sum_histogram_rows(
            out, out_rows,
            [(hists, rows, first)] + [received[j] for j in sorted(received)],
            parent_rows=subtract_from, n_threads=self.n_threads)
        return out

    def _socket_sends(self, hists, rows):
        """Each peer's piece as slices of ``hists`` (sent as they are)."""
        sends = {}
        for j in self._peers():
            a, b = self.bin_ranges[j]
            if b > a:
                sends[j] = [memoryview(hists[r, a:b]).cast("B")
                            for r in rows]
                self.sent_bytes += rows.shape[0] * (b - a) * 2 * 8
        return sends

    def _outbox_free(self, n_rows, n_bins):
        """Whether this reduce's pieces go through the outbox: memory is
        shared, they fit, and every peer is done reading the last ones.
        A peer reads them during its reduce and sends its next message
        after: a step completed since the last shared reduce (the
        all-gather that follows every reduce of ``ShardFinder``) means
        every peer has; two reduces in a row go by the sockets."""
        return (self.outbox is not None
                and self.seq > self._shared_seq + 1
                and n_rows * n_bins * 2 * 8 <= self.outbox.size)

    def outbox_histograms(self, n_bins):
        """The outbox as int64 histograms ``(rows, n_bins, 2)`` (None
        without shared memory, or when not one fits): a finder that builds
        its histograms there before a reduce saves their copy into the
        outbox (``reduce`` sends the peers the rows instead). Write there
        only while ``outbox_writable``."""
        rows = 0 if self.outbox is None else self.outbox.size // (n_bins * 16)
        if rows == 0:
            return None
        if (self._outbox_hists is None
                or self._outbox_hists.shape[:2] != (rows, n_bins)):
            self._outbox_hists = self.outbox.array(0, rows, n_bins)
        return self._outbox_hists

    def outbox_writable(self):
        """Whether the peers are done reading this shard's outbox: a step
        completed since the last reduce that went through it (see
        ``_outbox_free``)."""
        return self.outbox is not None and self.seq > self._shared_seq

    def _pooled_sends(self, hists, rows):
        """Each peer's note of where its piece of ``hists[rows]`` lies in
        the outbox, the histograms having been built there (no copy)."""
        self._shared_seq = self.seq
        sends = {}
        for j in self._peers():
            a, b = self.bin_ranges[j]
            if b > a:
                size = rows.shape[0] * (b - a) * 2 * 8
                self.sent_bytes += size
                self.shared_bytes += size
                sends[j] = (_ROWS_NOTE_TAG
                            + _ROWS_NOTE.pack(hists.shape[1], a, b - a)
                            + rows.astype("<i8").tobytes())
        return sends

    def _shared_sends(self, hists, rows):
        """Each peer's piece copied into the outbox (one after the other);
        the notes that tell the peers where."""
        self._shared_seq = self.seq
        sends, offset = {}, 0
        for j in self._peers():
            a, b = self.bin_ranges[j]
            if b > a:
                piece = self.outbox.array(offset, rows.shape[0], b - a)
                for k, r in enumerate(rows):
                    piece[k] = hists[r, a:b]
                self.sent_bytes += piece.nbytes
                self.shared_bytes += piece.nbytes
                sends[j] = _NOTE_TAG + _NOTE.pack(offset, rows.shape[0],
                                                  b - a)
                offset += piece.nbytes
        return sends

    def _inbox_piece(self, j, note, n_rows, width):
        """Peer j's piece of this reduce, in its outbox mapped here,
        where its note says (checked against what this step expects):
        a source of ``sum_histogram_rows``, (histograms, their rows, their
        first bin)."""
        note = bytes(note)
        if note.startswith(_ROWS_NOTE_TAG):
            return self._inbox_rows(j, note, n_rows, width)
        if not note.startswith(_NOTE_TAG) or len(note) != len(
                _NOTE_TAG) + _NOTE.size:
            raise self._lost(j, ConnectionError("not a note of shared "
                                                "histograms"))
        offset, n, w = _NOTE.unpack(note[len(_NOTE_TAG):])
        inbox = self.inboxes[j]
        if n != n_rows or w != width or offset + n * w * 16 > inbox.size:
            raise self._lost(j, ConnectionError(
                f"shared histograms ({n} x {w} at {offset}) where "
                f"{n_rows} x {width} were expected"))
        return inbox.array(offset, n, w), None, 0

    def _inbox_rows(self, j, note, n_rows, width):
        """Peer j's piece of this reduce where it built its histograms
        (a ``_pooled_sends`` note): its outbox as histograms, the rows
        and this shard's first bin (checked: the rows inside the outbox,
        the bins this shard's)."""
        head = len(_ROWS_NOTE_TAG) + _ROWS_NOTE.size
        if len(note) != head + 8 * n_rows:
            raise self._lost(j, ConnectionError(
                f"a note of {len(note)} bytes for {n_rows} histograms"))
        n_bins, first, w = _ROWS_NOTE.unpack(note[len(_ROWS_NOTE_TAG):head])
        rows = np.frombuffer(note, dtype="<i8", offset=head)
        inbox = self.inboxes[j]
        capacity = inbox.size // (n_bins * 16) if n_bins else 0
        if (w != width or first != self.bin_ranges[self.index][0]
                or first + w > n_bins or rows.shape[0] and (
                    rows.min() < 0 or rows.max() >= capacity)):
            raise self._lost(j, ConnectionError(
                f"shared histograms (rows {rows.tolist()} of {n_bins} bins, "
                f"bins {first}+{w}) where {n_rows} x {width} from bin "
                f"{self.bin_ranges[self.index][0]} were expected"))
        return inbox.array(0, capacity, n_bins), rows, first

    def _buffer(self, key, n, width):
        """A kept int64 buffer of shape (n, width, 2)."""
        size = n * width * 2
        kept = self._buffers.get(key)
        if kept is None or kept.shape[0] < size:
            kept = self._buffers[key] = np.empty(max(size, 2 * (
                0 if kept is None else kept.shape[0])), dtype=np.int64)
        return kept[:size].reshape(n, width, 2)

    def share_memory(self, size, timeout=10.0):
        """Pass the histograms of the following reduces through shared
        memory (an outbox of ``size`` bytes per shard) when every shard
        can (every link a Unix socket, Linux); a collective step of every
        shard. Returns whether memory is shared; if not (or a shard could
        not map its peers' outboxes), the sockets carry the histograms."""
        able = _shared_memory_possible(self.links) and size > 0
        if not all(self.allgather(able)):
            return False
        mapped = False
        try:
            self._swap_outboxes(size, timeout)
            mapped = True
        except (OSError, ValueError):
            pass
        if all(self.allgather(mapped)):
            return True
        self.outbox, self.inboxes = None, {}
        self._outbox_hists = None
        return False

    def _swap_outboxes(self, size, timeout):
        """Send this shard's outbox's descriptor to every peer, and map
        theirs (each peer's message: its size, then the descriptor)."""
        self.outbox = _SharedRegion.create(size)
        try:
            for j in self._peers():
                link = self.links[j]
                link.setblocking(True)
                link.settimeout(timeout)
                try:
                    socket.send_fds(link, [struct.pack("<Q", size)],
                                    [self.outbox.fd])
                finally:
                    link.setblocking(False)
        finally:
            self.outbox.close_descriptor()
        for j in self._peers():
            self.inboxes[j] = self._receive_outbox(self.links[j], timeout)

    @staticmethod
    def _receive_outbox(link, timeout):
        link.setblocking(True)
        link.settimeout(timeout)
        try:
            data, fds, _, _ = socket.recv_fds(link, 8, 1)
            # the note may come in pieces (a stream); the descriptor with
            # its first byte
            while 0 < len(data) < 8:
                data += link.recv(8 - len(data))
        finally:
            link.setblocking(False)
        if len(data) != 8 or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            raise OSError("no shared region from the peer")
        return _SharedRegion.open(fds[0], struct.unpack("<Q", data)[0])

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
        spin_until = time.perf_counter() + self.spin_seconds
        poller = select.poll()
        while outgoing or incoming:
            self._send_some(outgoing)
            self._receive_some(incoming, done)
            if not (outgoing or incoming):
                break
            if time.perf_counter() < spin_until:
                os.sched_yield()   # the core to anyone else who wants it
                continue
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
