#!/usr/bin/env python3
"""Prints bench/h200.sh's results as the Markdown tables of docs/benchmarks.md.

Usage: table.py OUT_DIR "t4 t8 ..."; reads OUT_DIR/ROW_BUILD_ROUND.json (ember-cli bench --json)
and OUT_DIR/ROW_llama.json (llama-bench -o json), and prints tokens per second, the mean over
rounds, with each build's spread over rounds (max - min, in percent of the mean)."""
import glob
import json
import os
import sys

LABELS = {"t": "TinyLlama-1.1B", "l": "Llama-2-7B"}
TYPES = {"4": "Q4_0", "8": "Q8_0", "k": "Q4_K_M"}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def ember(out, row, build, key):
    runs = [load(p) for p in sorted(glob.glob(os.path.join(out, f"{row}_{build}_*.json")))]
    vals = [r[key] for r in runs if r and key in r]
    if not vals:
        return None
    mean = sum(vals) / len(vals)
    return mean, (max(vals) - min(vals)) / mean * 100


def llama(out, row, test, fa):
    runs = load(os.path.join(out, f"{row}_llama.json")) or []
    for r in runs:
        n_prompt, n_gen = (512, 0) if test == "pp" else (0, 128)
        if r.get("n_prompt") == n_prompt and r.get("n_gen") == n_gen and bool(r.get("flash_attn")) == fa:
            return r["avg_ts"]
    return None


def fmt(v, digits=0):
    return "–" if v is None else f"{v:,.{digits}f}"


def fmt_ember(v, digits):
    return "–" if v is None else f"{v[0]:,.{digits}f} (±{v[1] / 2:.1f}%)"


def commit(out, build):
    path = os.path.join(out, f"commit_{build}")
    return open(path).read().strip() if os.path.exists(path) else build


def main():
    out, rows = sys.argv[1], sys.argv[2].split()
    has_old = bool(glob.glob(os.path.join(out, "*_old_*.json")))
    for test, key, digits in (("pp", "pp_tok_s", 0), ("tg", "tg_tok_s", 1)):
        name = "pp512" if test == "pp" else "tg128"
        head = f"| {name} (tokens/s) | Ember {commit(out, 'new')} |"
        if has_old:
            head += f" Ember {commit(out, 'old')} | new vs old |"
        head += " llama.cpp CUDA, FA off | llama.cpp CUDA, FA on |"
        print(head)
        print("|" + " --- |" * head.count(" |"))
        for row in rows:
            line = f"| {LABELS[row[0]]} {TYPES[row[1]]} |"
            new = ember(out, row, "new", key)
            line += f" {fmt_ember(new, digits)} |"
            if has_old:
                old = ember(out, row, "old", key)
                line += f" {fmt_ember(old, digits)} |"
                delta = (new[0] / old[0] - 1) * 100 if new and old else None
                line += " – |" if delta is None else f" {delta:+.1f}% |"
            for fa in (False, True):
                line += f" {fmt(llama(out, row, test, fa), digits)} |"
            print(line)
        print()


main()
