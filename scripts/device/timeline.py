#!/usr/bin/env python3
"""Summarize an EMBER_VULKAN_TIMELINE file: the middle layer's Q4_0 decode mat-vecs (QKV,
gate/up, down) of the last step, per subgroup: when it started, staged x, finished each group of
rows and ended (matvec_fused_h.comp, TIMELINE). Usage: timeline.py FILE [ROW_BYTES ...]
(the bytes of one group of rows per slot, for the bandwidth over time; default 7B Q4_0)."""
import sys
import numpy as np

EV = 8
raw = np.fromfile(sys.argv[1], dtype=np.uint32).reshape(3, 1024, 16, EV, 4)
rt = raw[..., 0].astype(np.uint64) | (raw[..., 1].astype(np.uint64) << np.uint64(32))
names = ["qkv", "gate/up", "down"]
# Bytes of one group of 2 rows (Q4_0: 18 bytes a block): 7B's 4096-column rows, and down's
# column parts (86 blocks).
group_bytes = [float(x) for x in sys.argv[2:5]] or [2 * 128 * 18, 2 * 128 * 18, 2 * 86 * 18]


def pct(a):
    if a.size == 0:
        return "-"
    q = np.percentile(a, [0, 10, 50, 90, 100])
    return " ".join("%6.2f" % v for v in q)


ends = []
t_base = None
for s in range(3):
    valid = rt[s, :, :, 0] != 0
    if not valid.any():
        print(names[s], "no records")
        continue
    t = rt[s][valid].astype(np.float64)  # [n_subgroups, EV] in ns
    t0 = t[:, 0].min()
    if t_base is None:
        t_base = t0
    start = (t[:, 0] - t0) / 1e3
    staged = (t[:, 1] - t[:, 0]) / 1e3
    done = t[:, 7]
    end = (done - t0) / 1e3
    groups = (t[:, 2:7] != 0).sum(axis=1)
    print("%s: %d subgroups, starts at %.2f us after slot 0; us (min p10 p50 p90 max):" %
          (names[s], len(t), (t0 - t_base) / 1e3))
    if ends:
        print("  gap from the previous slot's last end: %.2f us" % ((t0 - ends[-1]) / 1e3))
    print("  start     ", pct(start))
    print("  staging   ", pct(staged))
    prev = t[:, 1]
    for g in range(5):
        have = t[:, 2 + g] != 0
        if not have.any():
            break
        d = (t[have, 2 + g] - prev[have]) / 1e3
        print("  group %d    " % (g + 1), pct(d), " (%d subgroups)" % have.sum())
        prev = np.where(have, t[:, 2 + g], prev)
    print("  end       ", pct(end))
    print("  groups per subgroup:", np.bincount(groups).tolist())
    # Groups finished per 0.5 us, as GB/s of their weights: completions, which bunch at the
    # ends of round trips, not the memory's traffic.
    fin = np.concatenate([t[t[:, 2 + g] != 0, 2 + g] for g in range(5)])
    bins = np.arange(0, end.max() + 0.5, 0.5)
    h, _ = np.histogram((fin - t0) / 1e3, bins=bins)
    print("  groups finished per 0.5 us (GB/s of their weights):",
          " ".join("%d" % (c * group_bytes[s] / 0.5e-6 / 1e9) for c in h))
    active = [(np.sum((start <= b) & (end > b))) for b in bins[:-1]]
    print("  subgroups running each 0.5 us:", " ".join(str(a) for a in active))
    ends.append(done.max())
