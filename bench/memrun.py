#!/usr/bin/env python3
"""memrun.py [--until REGEX] [--settle S] [--log FILE] -- CMD...
Runs CMD (stdout+stderr to --log), measures its wall time and peak RSS (ru_maxrss of wait4).
With --until: when REGEX appears in the output, waits --settle seconds, reads /proc/PID/status
(VmRSS, RssAnon, RssFile, VmHWM) as the steady state, then ends the process (SIGTERM).
Prints one JSON line."""
import json, os, re, signal, subprocess, sys, time, threading

args = sys.argv[1:]
until, settle, log = None, 1.0, "/dev/null"
while args and args[0] != "--":
    k = args.pop(0)
    if k == "--until": until = re.compile(args.pop(0))
    elif k == "--settle": settle = float(args.pop(0))
    elif k == "--log": log = args.pop(0)
args = args[1:]
t0 = time.time()
p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.PIPE)
res = {"cmd": " ".join(args)}
found = threading.Event()

def status():
    d = {}
    try:
        for line in open(f"/proc/{p.pid}/status"):
            k, _, v = line.partition(":")
            if k in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                d[k] = int(v.split()[0])
    except OSError:
        pass
    return d

def reader():
    with open(log, "wb") as f:
        buf = b""
        for chunk in iter(lambda: p.stdout.read1(4096), b""):
            f.write(chunk); f.flush()
            if until and not found.is_set():
                buf = (buf + chunk)[-65536:]
                if until.search(buf.decode("utf-8", "replace")):
                    res["trigger_s"] = round(time.time() - t0, 3)
                    found.set()

th = threading.Thread(target=reader, daemon=True)
th.start()
if until:
    while th.is_alive() and not found.wait(0.05):
        pass
    if found.is_set():
        time.sleep(settle)
        s = status()
        res.update({"steady_rss_kb": s.get("VmRSS"), "steady_anon_kb": s.get("RssAnon"),
                    "steady_file_kb": s.get("RssFile"), "hwm_at_steady_kb": s.get("VmHWM")})
        p.send_signal(signal.SIGTERM)
        try: p.stdin.close()
        except OSError: pass
_, st, ru = os.wait4(p.pid, 0)
res["wall_s"] = round(time.time() - t0, 3)
res["rc"] = os.waitstatus_to_exitcode(st)
res["peak_rss_kb"] = ru.ru_maxrss
th.join(2)
print(json.dumps(res), flush=True)
