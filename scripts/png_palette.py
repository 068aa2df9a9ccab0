#!/usr/bin/env python3
"""Rewrites 8-bit RGB/RGBA PNGs (as Chromium's --screenshot writes them) as palette PNGs.

usage: png_palette.py FILE.png ...

Python's standard library only (no Pillow, optipng or pngquant needed). A screenshot of a chart
has a few hundred colours, most of them the anti-aliased edges of text and lines: the 256 most
frequent colours become the palette and every other colour its nearest one (squared RGB
distance), which leaves flat colours exact and shifts only some edge pixels a little. A file is
rewritten only when the result is smaller. Prints each file's size before and after.
"""
import os
import struct
import sys
import zlib
from collections import Counter


def chunks(data):
    i = 8
    while i < len(data):
        n, = struct.unpack(">I", data[i:i + 4])
        yield data[i + 4:i + 8], data[i + 8:i + 8 + n]
        i += 12 + n


def unfilter(raw, width, height, bpp):
    """the image's rows (bytes) from the inflated IDAT stream"""
    stride = width * bpp
    rows, prev, at = [], bytearray(stride), 0
    for _ in range(height):
        ft, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
        at += 1 + stride
        if ft == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif ft == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif ft == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif ft == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return rows


def chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + \
        struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def palettize(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return f"{path}: not a PNG"
    ihdr, idat = None, b""
    for kind, body in chunks(data):
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    width, height, depth, ctype, _, _, interlace = ihdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        return f"{path}: left as it is (not 8-bit RGB/RGBA, or interlaced)"
    bpp = 3 if ctype == 2 else 4
    rows = unfilter(zlib.decompress(idat), width, height, bpp)
    # pixels as RGB triples (alpha dropped: a screenshot is opaque)
    pix = [[r[i:i + 3] for i in range(0, len(r), bpp)] for r in rows]
    freq = Counter(p for r in pix for p in r)
    palette = [c for c, _ in freq.most_common(256)]
    index = {c: k for k, c in enumerate(palette)}
    for c in freq:
        if c not in index:
            index[c] = min(range(len(palette)), key=lambda k: sum(
                (a - b) ** 2 for a, b in zip(c, palette[k])))
    body = b"".join(b"\x00" + bytes(index[p] for p in r) for r in pix)
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 3, 0, 0, 0)) \
        + chunk(b"PLTE", b"".join(palette)) + chunk(b"IDAT", zlib.compress(body, 9)) \
        + chunk(b"IEND", b"")
    before = len(data)
    if len(out) < before:
        with open(path, "wb") as f:
            f.write(out)
    return f"{path}: {before // 1024} KiB -> {min(before, len(out)) // 1024} KiB " \
           f"({len(freq)} colours, {len(palette)} in the palette)"


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    for p in sys.argv[1:]:
        print(palettize(p))
