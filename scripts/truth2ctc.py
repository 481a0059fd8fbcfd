#!/usr/bin/env python3
"""truth2ctc.py TRUTH.csv WIDTH HEIGHT FRAMES GTDIR - lt_synth's ground truth
(frame,cell_id,x_px,y_px,radius_px,...) as a Cell Tracking Challenge GT
folder: GTDIR/TRA/man_track.txt ("L B E P") and GTDIR/TRA/man_trackTTT.tif
(16-bit label images: a disc of the true radius per cell, label = cell_id + 1,
since lt_synth2 numbers its cells from 0 and 0 is the background;
pixels whose centre lies within the radius). A cell missing for some frames
continues under a new label whose parent is the label before the gap.
Needs numpy and tifffile (the test venv has both, from py-ctcmetrics)."""
import csv
import os
import sys

import numpy as np
import tifffile


def main():
    truth, w, h, nframes, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    tra = os.path.join(out, "TRA")
    os.makedirs(tra, exist_ok=True)
    per_frame = {}
    with open(truth) as f:
        for row in csv.DictReader(f):
            fr = int(row["frame"])
            if fr < nframes:
                per_frame.setdefault(fr, []).append(
                    (int(row["cell_id"]), float(row["x_px"]), float(row["y_px"]), float(row["radius_px"])))
    segs = {}      # cell -> [label, begin, end, parent]
    last = {}      # cell -> last frame seen
    next_label = 2 + max((c for cells in per_frame.values() for c, *_ in cells), default=0)
    yy, xx = np.mgrid[0:h, 0:w]
    digits = 3 if nframes <= 1000 else 4
    for fr in range(nframes):
        img = np.zeros((h, w), np.uint16)
        for cell, x, y, r in per_frame.get(fr, []):
            if cell in segs and last[cell] == fr - 1:
                segs[cell][-1][2] = fr
            elif cell in segs:  # a gap: a new label, parent = the segment before
                segs[cell].append([next_label, fr, fr, segs[cell][-1][0]])
                next_label += 1
            else:
                segs[cell] = [[cell + 1, fr, fr, 0]]
            last[cell] = fr
            img[(xx - x) ** 2 + (yy - y) ** 2 <= r * r] = segs[cell][-1][0]
        tifffile.imwrite(os.path.join(tra, f"man_track{fr:0{digits}d}.tif"), img)
    with open(os.path.join(tra, "man_track.txt"), "w") as f:
        for cell in sorted(segs):
            for lab, b, e, p in segs[cell]:
                f.write(f"{lab} {b} {e} {p}\n")


if __name__ == "__main__":
    main()
