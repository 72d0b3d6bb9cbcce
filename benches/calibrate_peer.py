#!/usr/bin/env python3
"""The peer of `flexbench calibrate` in the benchmark: OpenCV-Python's classic pipeline, as its
tutorial writes it (findChessboardCorners with the adaptive threshold and the normalized image,
cornerSubPix with an 11 px half-window, calibrateCamera), on every image of a folder.

    calibrate_peer.py VIEWS COLS ROWS SQUARE OUT_JSON
"""
import glob
import json
import os
import sys

import cv2
import numpy as np

views, cols, rows, square, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
obj = np.zeros((cols * rows, 3), np.float32)
obj[:, :2] = np.mgrid[0:cols, 0:rows].T.reshape(-1, 2) * square
criteria = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 30, 0.001)
objpoints, imgpoints, found, size = [], [], [], None
for path in sorted(glob.glob(os.path.join(views, "*.png"))):
    grey = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
    size = grey.shape[::-1]
    ok, corners = cv2.findChessboardCorners(grey, (cols, rows), cv2.CALIB_CB_ADAPTIVE_THRESH + cv2.CALIB_CB_NORMALIZE_IMAGE)
    if ok:
        corners = cv2.cornerSubPix(grey, corners, (11, 11), (-1, -1), criteria)
        objpoints.append(obj)
        imgpoints.append(corners)
        found.append(os.path.basename(path))
rms, k, d, _, _ = cv2.calibrateCamera(objpoints, imgpoints, size, None, None)
json.dump({"rms": rms, "fx": k[0, 0], "fy": k[1, 1], "cx": k[0, 2], "cy": k[1, 2], "found": found}, open(out, "w"))
