#!/usr/bin/env python3
"""Checks a browser's screenshot of the HTML report: what a person sees in the window.

    screenshot_check.py PNG WIDTH HEIGHT [--flame]

Exits 0 when the PNG is WIDTH x HEIGHT, the leak headline's red shows in the top 200 rows
(the summary comes first, above the fold), the page is not blank, and with --flame the flame
graph's warm colours fill a band somewhere in the window. Prints what it found either way.
Reads the PNG with the standard library alone (8-bit RGB or RGBA, not interlaced: what
Chromium writes)."""
import struct
import sys
import zlib

LEAK_RED = (0xC0, 0x39, 0x2B)


def read_png(path):
    with open(path, "rb") as stream:
        data = stream.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    at, idat, header = 8, b"", None
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        at += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}, interlace {interlace}")
    channels = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * channels
    rows, previous, at = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
        at += 1 + stride
        for i in range(stride):  # undo the row's filter (PNG spec, section 9)
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, channels)])
        previous = line
    return width, height, rows


def near(pixel, colour, tolerance=40):
    return all(abs(a - b) <= tolerance for a, b in zip(pixel, colour))


def warm(pixel):  # the flame graph's hues: red-orange to yellow, clearly saturated
    r, g, b = pixel
    return r > 200 and 90 < g < 230 and b < 120


def main():
    path, width, height = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    want_flame = "--flame" in sys.argv[4:]
    got_width, got_height, rows = read_png(path)
    problems = []
    if (got_width, got_height) != (width, height):
        problems.append(f"size {got_width}x{got_height}, not {width}x{height}")
    red_on_top = sum(near(pixel, LEAK_RED) for row in rows[:200] for pixel in row)
    if red_on_top < 50:
        problems.append(f"the leak headline's red is not in the top 200 rows ({red_on_top} pixels)")
    colours = len({pixel for row in rows[::7] for pixel in row[::7]})
    if colours < 8:
        problems.append(f"the window is nearly blank ({colours} colours)")
    warm_rows = sum(1 for row in rows if sum(warm(pixel) for pixel in row) > len(row) // 2)
    if want_flame and warm_rows < 36:
        problems.append(f"no flame graph in the window ({warm_rows} rows mostly its colours, 36 wanted)")
    print(f"{path}: {got_width}x{got_height}, {red_on_top} headline-red pixels on top, {colours} colours, "
          f"{warm_rows} flame-graph rows")
    for problem in problems:
        print(f"{path}: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
