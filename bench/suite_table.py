#!/usr/bin/env python3
"""Prints bench/suite.sh's results as the Markdown tables of docs/benchmarks.md.

Usage: suite_table.py DIR [DIR...]: the unpacked out-TAG folders of suite-results.tgz. A result
file is taken from the first DIR that has it (so llama.cpp's rows can come from one tag and
Ember's from another); the load rows' JSON lines are read from all of them."""
import json
import os
import re
import sys

DIRS = sys.argv[1:]


def path(name):
    for d in DIRS:
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    return None


def ej(name):  # ember-cli bench --json (stderr lines may precede it)
    try:
        t = open(path(name)).read()
        return json.loads(t[t.index("{"):])
    except (TypeError, OSError, ValueError):
        return None


def lj(name):  # llama-bench -o json
    try:
        return json.load(open(path(name)))
    except (TypeError, OSError, ValueError):
        return []


def bb(name):  # llama-batched-bench rows: {npp: S_TG}
    out = {}
    try:
        for line in open(path(name)):
            if re.match(r"^\|\s+\d", line):
                c = [x.strip() for x in line.strip().strip("|").split("|")]
                out[int(c[0])] = float(c[7])
    except (TypeError, OSError, ValueError, IndexError):
        pass
    return out


def f(x, nd=1):
    return "-" if x is None else f"{x:,.{nd}f}"


def llama_rows(n):
    return {(x["n_prompt"], x["n_gen"], bool(x["flash_attn"])): x["avg_ts"] for x in lj(f"l_{n}_p512.json")}


def base():
    rows = [("t-q4_0", "TinyLlama-1.1B Q4_0"), ("t-q8_0", "TinyLlama-1.1B Q8_0"),
            ("t-q4_k_m", "TinyLlama-1.1B Q4_K_M"), ("l2-q4_0", "Llama-2-7B Q4_0"),
            ("l2-q8_0", "Llama-2-7B Q8_0"), ("l2-q4_k_m", "Llama-2-7B Q4_K_M")]
    print("| model (weight bytes) | Ember pp512 | llama.cpp pp512, FA off / on | Ember tg128 | llama.cpp tg128, FA off / on |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for n, label in rows:
        p = ej(f"e_{n}_p512.json")
        if not p:
            continue
        L = llama_rows(n)
        print(f"| {label} ({p['weight_bytes'] / 1e9:.2f} GB) | {f(p['pp_tok_s'], 0)} | "
              f"{f(L.get((512, 0, False)), 0)} / {f(L.get((512, 0, True)), 0)} | {f(p['tg_tok_s'])} | "
              f"{f(L.get((0, 128, False)))} / {f(L.get((0, 128, True)))} |")


def i49():  # issue 49's table: one sitting, Ember beside llama.cpp (FA off / on), ratio to the faster
    rows = [("tlong-q4_0", "TinyLlama-1.1B Q4_0", "tlong-q4_0"), ("tlong-q8_0", "TinyLlama-1.1B Q8_0", "tlong-q4_0"),
            ("tlong-q4_k_m", "TinyLlama-1.1B Q4_K_M", "tlong-q4_0"), ("l2long-q4_0", "Llama-2-7B Q4_0", "l2long-q4_0"),
            ("l2long-q8_0", "Llama-2-7B Q8_0", "l2long-q4_0"), ("l2long-q4_k_m", "Llama-2-7B Q4_K_M", "l2long-q4_0"),
            ("l31-q4_k_m", "Llama-3.1-8B Q4_K_M", "l31-q4_0")]
    bars = {"pp512": 1.3, "d16384": 2.0, "d32768": 2.0}
    cols = ["pp512", "tg128", "d4096", "d16384", "d32768"]
    print("| model (weight bytes) | pp512 | tg128 | tg128 @ 4096 | tg128 @ 16384 | tg128 @ 32768 "
          "| decode per weight byte vs Q4_0, d0 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n, label, q40 in rows:
        p = ej(f"e_{n}_p512.json")
        if not p:
            continue
        L = llama_rows(n)
        b0, b1 = bb(f"b_{n}_i49_fa0.log"), bb(f"b_{n}_i49_fa1.log")
        cells = []
        for c in cols:
            if c == "pp512":
                e, l0, l1 = p["pp_tok_s"], L.get((512, 0, False)), L.get((512, 0, True))
            elif c == "tg128":
                e, l0, l1 = p["tg_tok_s"], L.get((0, 128, False)), L.get((0, 128, True))
            else:
                d = ej(f"e_{n}_{c}.json")
                e, l0, l1 = d and d["tg_tok_s"], b0.get(int(c[1:])), b1.get(int(c[1:]))
            best = max([x for x in (l0, l1) if x] or [0])
            r = f"{e / best:.2f}x" if e and best else "-"
            if e and best and e / best < bars.get(c, 0):
                if round(e / best, 2) >= bars[c]:  # just under: two decimals would read as the bar
                    r = f"{e / best:.3f}x"
                r += " (bar " + f"{bars[c]:.1f}x)"
            nd = 0 if c == "pp512" else 1
            cells.append(f"{f(e, nd)} vs {f(l0, nd)} / {f(l1, nd)}: **{r}**")
        q = ej(f"e_{q40}_p512.json")
        pb = f"{p['tg_tok_s'] * p['weight_bytes'] / (q['tg_tok_s'] * q['weight_bytes']):.2f}" if q else "-"
        print(f"| {label} ({p['weight_bytes'] / 1e9:.2f} GB) | " + " | ".join(cells) + f" | {pb} |")


def families():
    rows = [("l2-q4_0", "Llama-2-7B Q4_0"), ("qw-q4_k_m", "Qwen2.5-7B Q4_K_M"),
            ("qw-q4_0", "Qwen2.5-7B Q4_0"), ("g3-q4_k_m", "Gemma-3-4B Q4_K_M"),
            ("g3-q4_0", "Gemma-3-4B Q4_0"), ("l31-q4_k_m", "Llama-3.1-8B Q4_K_M"),
            ("l31-q4_0", "Llama-3.1-8B Q4_0"), ("phi-q4_k_m", "Phi-3.5-mini Q4_K_M"),
            ("phi-q4_0", "Phi-3.5-mini Q4_0")]
    # Each family file's twin (suite.sh's famtwin): a Llama of its shape and type.
    twins = {"qw": ("lqw", "Qwen2.5-7B"), "g3": ("lg3", "Gemma-3-4B"), "phi": ("lphi", "Phi-3.5-mini")}
    print("| model (weight bytes) | Ember pp512 | llama.cpp pp512, FA off / on | Ember tg128 "
          "| llama.cpp tg128, FA off / on | Ember tg128 @ d4096 | llama.cpp tg128 @ d4096, FA off / on "
          "| Ember decode per weight byte vs Llama-2, d0 / d4096 | Ember tg128 vs its twin, d0 / d4096 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    ref = None
    for n, label in rows:
        p, d = ej(f"e_{n}_p512.json"), ej(f"e_{n}_d4096.json")
        if not p:
            print(f"| {label} | (no result) |")
            continue
        wb = p["weight_bytes"]
        eff = (p["tg_tok_s"] * wb, d["tg_tok_s"] * wb if d else None)
        if ref is None:
            ref = eff
        L = llama_rows(n)
        b0, b1 = bb(f"b_{n}_d4096_fa0.log"), bb(f"b_{n}_d4096_fa1.log")
        lp = f"{f(L.get((512, 0, False)), 0)} / {f(L.get((512, 0, True)), 0)}" if L else "-"
        lt = f"{f(L.get((0, 128, False)))} / {f(L.get((0, 128, True)))}" if L else "-"
        ld = f"{f(b0.get(4096))} / {f(b1.get(4096))}" if b0 else "-"
        r1 = f"{eff[1] / ref[1]:.2f}" if eff[1] and ref[1] else "-"
        fam, _, typ = n.partition("-")
        tw = "-"
        if fam in twins:
            tp, td = ej(f"e_{twins[fam][0]}-{typ}_p512.json"), ej(f"e_{twins[fam][0]}-{typ}_d4096.json")
            if tp:
                tw = f"{p['tg_tok_s'] / tp['tg_tok_s']:.2f} / " + (
                    f"{d['tg_tok_s'] / td['tg_tok_s']:.2f}" if d and td else "-")
        print(f"| {label} ({wb / 1e9:.2f} GB) | {f(p['pp_tok_s'], 0)} | {lp} | {f(p['tg_tok_s'])} | {lt} | "
              f"{f(d['tg_tok_s']) if d else '-'} | {ld} | {eff[0] / ref[0]:.2f} / {r1} | {tw} |")
    # The twins themselves (their files' bytes include an untied embedding table that a step
    # does not read, so no per-byte column).
    for fam, (tn, tlabel) in twins.items():
        for typ, tt in (("q4_k_m", "Q4_K_M"), ("q4_0", "Q4_0")):
            p, d = ej(f"e_{tn}-{typ}_p512.json"), ej(f"e_{tn}-{typ}_d4096.json")
            if p:
                print(f"| twin: a Llama of {tlabel}'s shape, {tt} | {f(p['pp_tok_s'], 0)} | - | "
                      f"{f(p['tg_tok_s'])} | - | {f(d['tg_tok_s']) if d else '-'} | - | - | 1.00 |")


def offload():
    print("| Llama-2-7B Q4_0 | layers on the GPU | pp512 | tg128 |")
    print("| --- | ---: | ---: | ---: |")
    for n, label in [("gl16", "Ember `--gpu-layers 16`"), ("lim16", "Ember `--gpu-mem-limit`"),
                     ("cpu", "Ember `--backend cpu`")]:
        e = ej(f"e_l2-q4_0_{n}.json")
        if e:
            print(f"| {label} | {e.get('gpu_layers', 0)} | {f(e['pp_tok_s'])} | {f(e['tg_tok_s'])} |")
    for n, label in [("ngl16", "llama.cpp `-ngl 16`"), ("ngl0", "llama.cpp `-ngl 0`"),
                     ("nogpu", "llama.cpp `-ngl 0`, GPU hidden")]:
        rows = {}
        for x in lj(f"l_l2-q4_0_{n}.json"):
            k = (x["flash_attn"], x["n_threads"], x["n_gpu_layers"])
            rows.setdefault(k, {})["pp" if x["n_prompt"] else "tg"] = x["avg_ts"]
        for (fa, t, ngl), v in rows.items():
            print(f"| {label}, FA {'on' if fa else 'off'}, {t} threads | {ngl} | {f(v.get('pp'))} | {f(v.get('tg'))} |")
    for n in ("gl16", "lim16"):
        e = ej(f"e_l2-q4_0_{n}.json")
        if e:
            print(f"\nEmber's split ({n}): {e.get('split')}")
    try:
        r = json.load(open(path("offload_rss.json")))
        print(f"\nPeak RSS of `--gpu-layers 16`: {r['peak_rss_kb'] / 1048576:.2f} GiB")
    except (TypeError, OSError, ValueError, KeyError):
        pass


def long_chats():
    head = ["| model | Ember @ 16384 | Ember @ 32768 | llama.cpp FA off @ 16384 / 32768 | llama.cpp FA on @ 16384 / 32768 |",
            "| --- | ---: | ---: | ---: | ---: |"]
    for n, label in [("l2long-q4_0", "Llama-2-7B Q4_0"), ("l31-q4_k_m", "Llama-3.1-8B Q4_K_M")]:
        a, b = ej(f"e_{n}_d16384.json"), ej(f"e_{n}_d32768.json")
        if not (a or b):
            continue
        b0, b1 = bb(f"b_{n}_long_fa0.log"), bb(f"b_{n}_long_fa1.log")
        while head:
            print(head.pop(0))
        print(f"| {label} | {f(a and a['tg_tok_s'])} | {f(b and b['tg_tok_s'])} | "
              f"{f(b0.get(16384))} / {f(b0.get(32768))} | {f(b1.get(16384))} / {f(b1.get(32768))} |")


def load():
    print("| file | Ember cold / warm | llama.cpp cold / warm | Ember peak / steady RSS "
          "| llama.cpp peak / steady RSS | prompt of 512: Ember / llama.cpp |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    G = 1024 * 1024
    for n, label in [("l2-q4_0", "Llama-2-7B Q4_0"), ("l2-q8_0", "Llama-2-7B Q8_0"),
                     ("l2-q4_k_m", "Llama-2-7B Q4_K_M")]:
        R = {}
        for d in DIRS:
            try:
                R.update({j["run"]: j.get("r", {}) for j in map(json.loads, open(os.path.join(d, f"load_{n}.jsonl")))})
            except (OSError, ValueError):
                pass
        if not R:
            continue
        w = lambda k: R.get(k, {}).get("wall_s")
        pk = lambda k: R.get(k, {}).get("peak_rss_kb")
        st = lambda k: R.get(k, {}).get("steady_rss_kb")
        g = lambda x: "-" if not x else f"{x / G:.2f}"
        et = ej(f"lg_{n}_et2.log")
        lt = None
        try:
            m = re.search(r"prompt eval time =\s*([0-9.]+) ms", open(path(f"lg_{n}_lt2.log")).read())
            lt = float(m.group(1))
        except (TypeError, OSError, AttributeError):
            pass
        print(f"| {label} | {f(w('ember_cold'), 2)} / {f(w('ember_warm'), 2)} s | "
              f"{f(w('llama_cold'), 2)} / {f(w('llama_warm'), 2)} s | {g(pk('ember_warm'))} / {g(st('ember_steady'))} GiB | "
              f"{g(pk('llama_warm'))} / {g(st('llama_steady'))} GiB | {f(et and et.get('ttft_ms'), 0)} / {f(lt, 0)} ms |")


def cpu():  # the cpu job: Ember's CPU backend on the GPU machine's host, 2 threads
    rows = [("t-q4_0", "TinyLlama-1.1B Q4_0"), ("t-q8_0", "TinyLlama-1.1B Q8_0"),
            ("t-q4_k_m", "TinyLlama-1.1B Q4_K_M")]
    runs = {(n, isa): ej(f"c_{n}_{isa}.json") for n, _ in rows for isa in ("host", "avx2")}
    if not any(runs.values()):
        return
    model = "-"
    try:
        m = re.search(r"^Model name:\s*(.+)$", open(path("lscpu.txt")).read(), re.M)
        model = m.group(1).strip() if m else model
    except (TypeError, OSError):
        pass
    print(f"CPU: {model}; `ember-cli bench --backend cpu --threads 2 -p 64 -n 32 -r 2`")
    print()
    print("| file | pp64 / tg32, the host's ISA | pp64 / tg32, EMBER_CPU_ISA=avx2 |")
    print("| --- | ---: | ---: |")
    for n, label in rows:
        cells = []
        for isa in ("host", "avx2"):
            r = runs[(n, isa)]
            cells.append(f"{f(r and r.get('pp_tok_s'))} / {f(r and r.get('tg_tok_s'))}")
        print(f"| {label} | {cells[0]} | {cells[1]} |")


for part in (i49, base, families, offload, long_chats, load, cpu):
    part()
    print()
