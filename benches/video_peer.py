#!/usr/bin/env python3
"""The peers of `flexbench probe` and `flexbench track` in the benchmark, as a user would run them:
a Python process that opens the video with OpenCV-Python and reads every frame (decode), or
reads every frame and tracks the markers with a straightforward centroid tracker (track).

    video_peer.py decode VIDEO            prints the number of frames read
    video_peer.py track VIDEO OUT_JSON    writes the tracked positions per frame

benches/peers.py times this script as a command (its process's wall time, like flexbench's) and
also imports its functions to time the same loops inside one warm Python process.
"""
import json
import sys

import cv2
import numpy as np


def decode(video):
    """Read every frame; the number read."""
    cap = cv2.VideoCapture(video)
    k = 0
    while True:
        ok, _ = cap.read()
        if not ok:
            break
        k += 1
    return k


def centroid_tracker(video):
    """Threshold, connected components, binary centroids, nearest-neighbour identities (markers
    numbered left to right in the first frame), a marker with no blob within 15 px is a gap."""
    cap = cv2.VideoCapture(video)
    prev, out = None, []
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        gray = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        _, bw = cv2.threshold(gray, 190, 255, cv2.THRESH_BINARY)
        nb, _, stats, cents = cv2.connectedComponentsWithStats(bw)
        blobs = [cents[i] for i in range(1, nb) if 10 <= stats[i, cv2.CC_STAT_AREA] <= 400]
        if prev is None:
            prev = sorted(blobs, key=lambda p: p[0])[:5]
            cur = list(prev)
        else:
            cur = []
            for p in prev:
                d = [np.hypot(*(q - p)) for q in blobs]
                j = int(np.argmin(d)) if d else -1
                cur.append(blobs[j] if j >= 0 and d[j] < 15 else None)
            prev = [c if c is not None else p for c, p in zip(cur, prev)]
        out.append(cur)
    return out


if __name__ == "__main__":
    mode, video = sys.argv[1], sys.argv[2]
    if mode == "decode":
        print(decode(video))
    elif mode == "track":
        tracked = centroid_tracker(video)
        with open(sys.argv[3], "w") as f:
            json.dump([[None if p is None else [float(p[0]), float(p[1])] for p in cur] for cur in tracked], f)
    else:
        sys.exit(f"unknown mode {mode!r}: decode or track")
