"""Headless Chromium for report tests: the rendered DOM and a screenshot decoded to pixels."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import tempfile
import zlib

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic",
]


def _chromium(*args):
    binary = shutil.which("chromium")
    assert binary, "chromium is missing: scripts/setup.sh installs it"
    profile = tempfile.mkdtemp(prefix="rdma-node-chromium-")
    try:
        return subprocess.run([binary, *CHROMIUM_FLAGS, "--user-data-dir=" + profile, *args],
                              capture_output=True, text=True, timeout=120, check=False)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def _url(path, fragment):
    return "file://" + os.path.abspath(path) + ("#" + fragment if fragment else "")


def rendered_dom(path, fragment="", width=None, height=900):
    """The DOM after Chromium loaded the page and ran its scripts; ``fragment`` is the URL's part after ``#``;
    ``width`` (pixels) lays the page out in a window that wide."""
    size = ["--window-size=%d,%d" % (width, height)] if width else []
    proc = _chromium(*size, "--dump-dom", _url(path, fragment))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def screenshot(path, png_path, width=1300, height=900, fragment=""):
    proc = _chromium("--window-size=%d,%d" % (width, height), "--screenshot=" + png_path, _url(path, fragment))
    assert proc.returncode == 0 and os.path.exists(png_path), proc.stderr[-2000:]
    return read_png(png_path)


def read_png(path):
    """Decode an 8-bit RGB/RGBA, non-interlaced PNG (what Chromium writes) to (width, height, rows of RGB)."""
    with open(path, "rb") as handle:
        data = handle.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color_type, _compression, _filter, interlace = header
    assert depth == 8 and color_type in (2, 6) and interlace == 0, "unsupported PNG layout %r" % (header,)
    channels = 4 if color_type == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up = previous[x]
            up_left = previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + ((left + up) >> 1)) & 0xFF
            elif kind == 4:
                estimate = left + up - up_left
                pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - up_left)
                predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else up_left)
                line[x] = (line[x] + predictor) & 0xFF
        rows.append([tuple(line[i:i + 3]) for i in range(0, stride, channels)])
        previous = line
    return width, height, rows


def count_near(rows, rgb, tolerance=24):
    """How many pixels are within ``tolerance`` of ``rgb`` on every channel."""
    return sum(1 for row in rows for pixel in row if all(abs(a - b) <= tolerance for a, b in zip(pixel, rgb)))
