"""Universal Binary JSON (UBJSON, Draft 12), the binary form of a model file.

XGBoost saves ``.ubj`` models in this format; skboost's ``.ubj`` file holds
exactly the document of its ``.json`` file, so the two load to the same
model. The encoding is the specification's (https://ubjson.org):

=========  ===========================================================
marker     value
=========  ===========================================================
``Z``      null
``T F``    true, false
``i U``    int8, uint8
``I l L``  int16, int32, int64 (big-endian, as every number)
``d D``    float32, float64
``H``      a high-precision number as a decimal string (read only)
``C``      a char (read only)
``S``      a string: length (an integer value; written as ``L``, as
           XGBoost writes and expects it) then UTF-8 bytes
``[ ]``    an array; ``{ }`` an object of (length-prefixed key, value)
``N``      no-op (skipped when read)
=========  ===========================================================

Containers may be "optimised": ``$`` and a type marker (every element of
that type, no per-element marker), then ``#`` and a count, and no closing
marker. The writer uses them for arrays of numbers (the node arrays of the
trees: floats as ``D``, so values round-trip bit for bit; integers as the
smallest type holding them all), which is what XGBoost writes and reads;
ints are always written as integers and floats as floats, so that a
decoded document is the same Python value as the JSON file's.

The reader never trusts the input: every length is checked against the
bytes left, nesting is limited, and any problem is a ValueError.
"""

import math
import struct

_INT_TYPES = (("i", -2 ** 7, 2 ** 7 - 1, ">b"), ("U", 0, 2 ** 8 - 1, ">B"),
              ("I", -2 ** 15, 2 ** 15 - 1, ">h"),
              ("l", -2 ** 31, 2 ** 31 - 1, ">i"),
              ("L", -2 ** 63, 2 ** 63 - 1, ">q"))
_FORMATS = {marker: fmt for marker, _, _, fmt in _INT_TYPES}
_FORMATS.update({"d": ">f", "D": ">d"})
_MAX_DEPTH = 200


# ----------------------------------------------------------------- writing

def dumps(value):
    """The UBJSON bytes of a JSON-like value (dict with str keys, list,
    str, int, float, bool, None)."""
    out = bytearray()
    _write(value, out, 0)
    return bytes(out)


def dumps_typed(value, array_markers):
    """UBJSON bytes of ``value`` with arrays typed as XGBoost's reader
    expects them: floats as float32 (``d``), integers as int32 (``l``),
    and the arrays of an object entry named in ``array_markers`` with that
    marker (``None``: a plain array, each element marked)."""
    out = bytearray()
    _write_typed(value, out, 0, array_markers, "")
    return bytes(out)


def _write_typed(value, out, depth, markers, marker):
    """``marker``: the array marker of ``value`` ("" to choose by its
    items, None for a plain array), from its entry's name (a callable
    entry of ``markers`` chooses from the object holding it)."""
    if depth > _MAX_DEPTH:
        raise ValueError("the document nests too deeply for UBJSON")
    if isinstance(value, dict):
        out += b"{"
        for name, item in value.items():
            _write_string_body(name, out)
            inner = markers.get(name, "")
            inner = inner(value) if callable(inner) else inner
            _write_typed(item, out, depth + 1, markers, inner)
        out += b"}"
    elif isinstance(value, (list, tuple)) and marker is not None and all(
            isinstance(v, (int, float)) and not isinstance(v, bool)
            for v in value):
        items = list(value)
        marker = marker or (
            "d" if any(isinstance(v, float) for v in items) else "l")
        fmt = _FORMATS[marker] if marker != "d" else ">f"
        out += b"[$" + marker.encode() + b"#"
        _write_length(len(items), out)
        out += struct.pack(">" + fmt[1] * len(items), *items)
    elif isinstance(value, (list, tuple)):
        out += b"["
        for item in value:
            _write_typed(item, out, depth + 1, markers, "")
        out += b"]"
    elif isinstance(value, float):
        out += b"d" + struct.pack(">f", value)
    else:
        _write(value, out, depth)


def _int_marker(low, high, array=False):
    for marker, lo, hi, _ in _INT_TYPES:
        # an optimised array of uint8 means bytes to other readers
        # (py-ubjson): arrays of integers use the signed types
        if lo <= low and high <= hi and not (array and marker == "U"):
            return marker
    return None


def _write(value, out, depth):
    if depth > _MAX_DEPTH:
        raise ValueError("the document nests too deeply for UBJSON")
    if value is None:
        out += b"Z"
    elif value is True:
        out += b"T"
    elif value is False:
        out += b"F"
    elif isinstance(value, int):
        _write_int(value, out)
    elif isinstance(value, float):
        out += b"D" + struct.pack(">d", value)
    elif isinstance(value, str):
        out += b"S"
        _write_string_body(value, out)
    elif isinstance(value, (list, tuple)):
        _write_array(list(value), out, depth)
    elif isinstance(value, dict):
        out += b"{"
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"object keys must be str, got {key!r}")
            _write_string_body(key, out)
            _write(item, out, depth + 1)
        out += b"}"
    else:
        raise TypeError(f"UBJSON can not hold {type(value).__name__}")


def _write_int(value, out):
    marker = _int_marker(value, value)
    if marker is None:
        text = str(value).encode("ascii")
        out += b"H"
        _write_length(len(text), out)
        out += text
    else:
        out += marker.encode() + struct.pack(_FORMATS[marker], value)


def _write_length(n, out):
    # always int64, as XGBoost writes lengths and counts (its reader
    # expects them so)
    out += b"L" + struct.pack(">q", n)


def _write_string_body(text, out):
    data = text.encode("utf-8")
    _write_length(len(data), out)
    out += data


def _write_array(items, out, depth):
    kinds = {type(v) for v in items}
    if items and kinds == {float}:
        out += b"[$D#"
        _write_length(len(items), out)
        out += struct.pack(f">{len(items)}d", *items)
        return
    if items and kinds == {int}:
        marker = _int_marker(min(items), max(items), array=True)
        if marker is not None:
            out += b"[$" + marker.encode() + b"#"
            _write_length(len(items), out)
            out += struct.pack(">" + _FORMATS[marker][1] * len(items), *items)
            return
    out += b"["
    for item in items:
        _write(item, out, depth + 1)
    out += b"]"


# ----------------------------------------------------------------- reading

def loads(data):
    """The value of a UBJSON document (ValueError if it is not one)."""
    reader = _Reader(bytes(data))
    value = reader.value(0)
    if reader.pos != len(reader.data):
        raise ValueError(f"UBJSON: {len(reader.data) - reader.pos} bytes "
                         "after the end of the document")
    return value


class _Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def take(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("UBJSON: the document ends too early "
                             "(truncated file?)")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def marker(self):
        while True:
            m = chr(self.take(1)[0])
            if m != "N":  # no-op
                return m

    def value(self, depth, marker=None):
        if depth > _MAX_DEPTH:
            raise ValueError("UBJSON: the document nests too deeply")
        m = self.marker() if marker is None else marker
        if m == "Z":
            return None
        if m in "TF":
            return m == "T"
        if m in _FORMATS:
            fmt = _FORMATS[m]
            return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]
        if m == "H":
            return _number(self.string_body())
        if m == "C":
            return self.take(1).decode("ascii", errors="strict")
        if m == "S":
            return self.string_body()
        if m == "[":
            return self.array(depth)
        if m == "{":
            return self.object(depth)
        raise ValueError(f"UBJSON: unknown marker {m!r} at byte "
                         f"{self.pos - 1}")

    def length(self):
        m = self.marker()
        if m not in "iUIlL":
            raise ValueError(f"UBJSON: a length must be an integer, got "
                             f"marker {m!r}")
        n = self.value(0, m)
        if n < 0:
            raise ValueError("UBJSON: negative length")
        return n

    def string_body(self):
        try:
            return self.take(self.length()).decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("UBJSON: a string is not UTF-8") from None

    def container_header(self):
        """(element type or None, count or None) of an optimised container."""
        kind = count = None
        if self.data[self.pos:self.pos + 1] == b"$":
            self.pos += 1
            kind = self.marker()
            if self.data[self.pos:self.pos + 1] != b"#":
                raise ValueError("UBJSON: a typed container needs a count")
        if self.data[self.pos:self.pos + 1] == b"#":
            self.pos += 1
            count = self.length()
            # every element takes at least one byte, except typed nulls
            if kind not in ("Z", "T", "F") and count > len(self.data) - self.pos:
                raise ValueError("UBJSON: a count beyond the end of the data")
        return kind, count

    def array(self, depth):
        kind, count = self.container_header()
        if kind in _FORMATS:
            fmt = _FORMATS[kind]
            size = struct.calcsize(fmt)
            raw = self.take(size * count)
            return list(struct.unpack(f">{count}{fmt[1]}", raw))
        if count is not None:
            return [self.value(depth + 1, kind) for _ in range(count)]
        items = []
        while self.peek() != "]":
            items.append(self.value(depth + 1))
        self.pos += 1
        return items

    def object(self, depth):
        kind, count = self.container_header()
        result = {}
        if count is not None:
            for _ in range(count):
                key = self.string_body()
                result[key] = self.value(depth + 1, kind)
            return result
        while self.peek() != "}":
            key = self.string_body()
            result[key] = self.value(depth + 1)
        self.pos += 1
        return result

    def peek(self):
        while self.pos < len(self.data) and self.data[self.pos] == ord("N"):
            self.pos += 1
        if self.pos >= len(self.data):
            raise ValueError("UBJSON: the document ends inside a container")
        return chr(self.data[self.pos])


def _number(text):
    """A high-precision number: int when it is one, else float."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"UBJSON: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"UBJSON: {text!r} is not a finite number")
    return value
