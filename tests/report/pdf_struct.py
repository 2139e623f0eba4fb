"""Test helper: the tagged-PDF structure elements of a PDF, read from its bytes (no PDF library in the lock).

Reads every indirect object, also those inside FlateDecode object streams, and returns the structure elements
(``/Type/StructElem``) with their role ``/S`` and, when present, their ``/Alt`` text decoded from a PDF string
(literal with escapes, or hex / UTF-16BE with a byte-order mark).
"""

from __future__ import annotations

import re
import zlib

_STREAM = re.compile(rb"stream\r?\n(.*?)\r?\nendstream", re.S)
_ELEM = re.compile(rb"/Type\s*/StructElem\b")
_ROLE = re.compile(rb"/S\s*/([A-Za-z0-9]+)")
_ESCAPES = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b", b"f": b"\f", b"(": b"(", b")": b")", b"\\": b"\\"}


def _chunks(raw: bytes) -> list[bytes]:
    out = [raw]
    for m in _STREAM.finditer(raw):
        try:
            out.append(zlib.decompress(m.group(1)))
        except zlib.error:
            continue
    return out


def _literal(data: bytes, start: int) -> bytes:
    """The bytes of the literal string whose '(' is at ``start`` (nested parentheses and escapes)."""
    out, depth, i = bytearray(), 0, start
    while i < len(data):
        c = data[i : i + 1]
        if c == b"\\":
            nxt = data[i + 1 : i + 2]
            if nxt in _ESCAPES:
                out += _ESCAPES[nxt]
                i += 2
                continue
            octal = re.match(rb"[0-7]{1,3}", data[i + 1 : i + 4])
            if octal:
                out.append(int(octal.group(0), 8) & 0xFF)
                i += 1 + len(octal.group(0))
                continue
            i += 2  # backslash-newline: line continuation
            continue
        if c == b"(":
            depth += 1
            if depth > 1:
                out += c
        elif c == b")":
            depth -= 1
            if depth == 0:
                return bytes(out)
            out += c
        else:
            out += c
        i += 1
    raise ValueError("unterminated PDF string")


def _text(b: bytes) -> str:
    if b.startswith(b"\xfe\xff"):
        return b[2:].decode("utf-16-be")
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b.decode("latin-1")


def _alt(obj: bytes) -> str | None:
    m = re.search(rb"/Alt\s*([(<])", obj)
    if m is None:
        return None
    if m.group(1) == b"(":
        return _text(_literal(obj, m.start(1)))
    hexdigits = obj[m.start(1) + 1 : obj.index(b">", m.start(1))]
    return _text(bytes.fromhex(re.sub(rb"\s", b"", hexdigits).decode()))


def struct_elements(raw: bytes) -> list[dict]:
    """[{"role": "Figure", "alt": "..." or None}, ...] in file order."""
    out = []
    for chunk in _chunks(raw):
        for m in _ELEM.finditer(chunk):
            # the dictionary around the match: from the previous "<<" that opens it to its "endobj"/next object
            begin = chunk.rfind(b"<<", 0, m.start())
            end = chunk.find(b"endobj", m.end())
            obj = chunk[begin : end if end != -1 else len(chunk)]
            nxt = _ELEM.search(obj, m.end() - begin)
            obj = obj[: nxt.start()] if nxt else obj
            role = _ROLE.search(obj)
            out.append({"role": role.group(1).decode() if role else None, "alt": _alt(obj)})
    return out
