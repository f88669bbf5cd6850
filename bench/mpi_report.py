#!/usr/bin/env python3
"""Tables, plots and the shape check of `goal bench mpi`'s result (bench/mpi.py).

    python3 bench/mpi_report.py results/mpi.json           # the tables again (from the rows)
    python3 bench/mpi_report.py results/mpi.json --plot    # and the plots (results/mpi_*.png)
    python3 bench/mpi_report.py results/mpi.json --check   # the JSON's shape: exit 1 naming what is missing

summarize() turns the rows of bench/mpi.py's runs into the summary lists of the JSON (medians over
rounds; ratios with the layer / native as the median of each round's ratio), the ceiling of each
overlap point across hosts (bench/mpi.py's header has the formula), issue 41's verdicts and the
text tables. check() is what `make bench-mpi-check` asks of a --quick run's JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402
import netfloor as F  # noqa: E402

MiB = 1 << 20
TARGET_PCT = 90.0      # issue 41: Iallreduce and Ibcast of 1 MiB across hosts
CEILING_SLACK = 3.0    # ... or within 3 points of the ceiling where that is lower
NOISE = 1.05           # "no slower than native": a ratio within 5 % of 1 (rounds of a VM differ more)
SETUP_TITLES = {"local": "local: 2 ranks on this machine",
                "2x1": "2x1: 2 emulated hosts x 1 rank, 1 Gbit/s"}
COLORS = {"openmpi": "#9ecae1", "openmpi+goal": "#08519c", "mpich": "#a1d99b", "mpich+goal": "#006d2c"}


def median_over_rounds(rows, key, field):
    """{key(row): median of row[field] over rounds} and {key: {round: value}}"""
    per: dict = {}
    for x in rows:
        if C.isnum(x.get(field)):
            per.setdefault(key(x), {})[x["round"]] = x[field]
    return {k: C.median(v.values()) for k, v in per.items()}, per


def paired(per, native_key, goal_key):
    """(median, min, max) over rounds of goal / native, the rounds where both ran"""
    a, b = per.get(native_key, {}), per.get(goal_key, {})
    rs = [b[r] / a[r] for r in a if r in b and a[r] > 0]
    return (C.median(rs), min(rs), max(rs)) if rs else (None, None, None)


def blocking_points(colls: str, sizes: str) -> int:
    """Rows mpi_coll.c prints for the blocking variant: one per collective and size, the barrier's
    once (it moves no data)."""
    cs = colls.split(",")
    return (len(cs) - ("barrier" in cs)) * len(sizes.split(",")) + ("barrier" in cs)


def moved_mib(op, nbytes) -> float:
    """MiB an operation moves in all between 2 ranks, the least any algorithm moves"""
    return {"bcast": 1, "allreduce": 2}.get(op, 0) * nbytes / MiB


# The reference progress thread (bench/ref_progress.c) runs the overlap points across hosts that
# move this much or more: what a thread with no library keeps of the overlap on this machine.
REF_MIN_BYTES = 64 << 10
# Its two runs per point, as the rows name them: (lib, words for the table).
REF_LIBS = (("thread", "ordinary thread"), ("thread-rt", "real-time thread"))


def ref_points(ops: str) -> list[tuple[str, int]]:
    """(op, bytes) of overlap.c's --ops that the reference runs: bcast and allreduce from
    REF_MIN_BYTES."""
    out = []
    for item in ops.split(","):
        name, _, size = item.strip().partition(":")
        if name in ("bcast", "allreduce") and size:
            try:
                n = C.parse_size(size)
            except ValueError:
                continue  # overlap.c names what is wrong with it
            if n >= REF_MIN_BYTES:
                out.append((name, n))
    return out


def op_name(op, nbytes) -> str:
    return "barrier" if op == "barrier" else f"{op} {C.fmt_bytes(nbytes)}"


def r2(v, d=1):
    return round(v, d) if C.isnum(v) else None


def usable_rows(doc: dict) -> list[dict]:
    """The rows of runs that produced rows."""
    ok = {(r["setup"], r["lib"], r["program"], r["round"]) for r in doc["runs"] if r["rows"]}
    return [x for x in doc["rows"] if (x["setup"], x["lib"], x["program"], x["round"]) in ok]


def latency_of(rows: list[dict]) -> list[dict]:
    """Pure latency with the layer / native per setup, MPI and operation: medians over rounds and
    the median of each round's ratio."""
    okey = lambda x: (x["setup"], x["lib"], x["op"], x["bytes"], x["variant"])  # noqa: E731
    ov = [x for x in rows if x.get("test") == "overlap" and x["variant"] == "none"]
    _, per = median_over_rounds(ov, okey, "t_pure_us")
    out = []
    for (setup, lib, op, nb, var) in sorted(per, key=str):
        if "+" in lib:
            continue
        nk, gk = (setup, lib, op, nb, var), (setup, lib + "+goal", op, nb, var)
        ratio = paired(per, nk, gk)
        out.append({"setup": setup, "mpi": lib, "op": op, "bytes": nb,
                    "native_us": r2(C.median(per[nk].values())),
                    "goal_us": r2(C.median(per[gk].values())) if gk in per else None,
                    "ratio": r2(ratio[0], 3), "ratio_min": r2(ratio[1], 3), "ratio_max": r2(ratio[2], 3)})
    return out


def blocking_of(rows: list[dict]) -> list[dict]:
    """Blocking collectives with the layer / native per setup, MPI, collective and size: medians
    over rounds and the median of each round's ratio."""
    bl = [x for x in rows if x.get("test") == "coll" and x.get("variant") == "blocking"]
    bk = lambda x: (x["setup"], x["lib"], x["coll"], x["bytes"])  # noqa: E731
    _, per = median_over_rounds(bl, bk, "median_us")
    out = []
    for (setup, lib, coll, nb) in sorted(per, key=str):
        if "+" in lib:
            continue
        gk = (setup, lib + "+goal", coll, nb)
        ratio = paired(per, (setup, lib, coll, nb), gk)
        out.append({"setup": setup, "mpi": lib, "coll": coll, "bytes": nb,
                    "native_us": r2(C.median(per[(setup, lib, coll, nb)].values()), 2),
                    "goal_us": r2(C.median(per[gk].values()), 2) if gk in per else None,
                    "ratio": r2(ratio[0], 3), "ratio_min": r2(ratio[1], 3),
                    "ratio_max": r2(ratio[2], 3), "rounds": len(per[(setup, lib, coll, nb)])})
    return out


def decided(e: dict):
    """A latency or blocking entry's ratio as judged: its pairs' median where pairs ran, else the
    rounds'."""
    return e.get("pairs_ratio", e.get("ratio"))


# What a latency entry and a blocking entry name their operation by.
PAIR_FIELD = {"latency": "op", "blocking": "coll"}


def pair_key(kind: str, e: dict) -> tuple:
    """The key of a latency or blocking entry's back-to-back pairs: which program ran them is part
    of it (an MPI_Barrier's pairs are not its MPI_Ibarrier's)."""
    return (kind, e["setup"], e["mpi"], e[PAIR_FIELD[kind]], e["bytes"])


def pairs_of(doc: dict) -> dict:
    """The pairs a summary kept in its latency and blocking entries, keyed as summarize() takes them
    (so that the tables made again from a JSON's rows keep their "p")."""
    return {pair_key(kind, e): {"pairs": e["pairs"], "pairs_ratio": e["pairs_ratio"]}
            for kind in PAIR_FIELD for e in doc.get(kind) or [] if "pairs" in e}


def summarize(doc: dict, ncpu: int, pairs: dict | None = None) -> None:
    """Adds overlap, background, latency, blocking, calls, verdict, notes and table to doc.
    pairs: {pair_key(...): {"pairs": [ratios], "pairs_ratio": median}} from bench/mpi.py's
    back-to-back pairs (of overlap.c's non-blocking operation, or of mpi_coll.c's blocking call),
    kept in the latency and blocking entries and deciding their verdict."""
    rows, runs = usable_rows(doc), doc["runs"]
    ov = [x for x in rows if x.get("test") == "overlap"]
    bg = [x for x in rows if x.get("test") == "background"]
    cost = (doc.get("net_cost") or {}).get("cpu_us_per_mib")
    okey = lambda x: (x["setup"], x["lib"], x["op"], x["bytes"], x["variant"])  # noqa: E731
    ovl = {f: median_over_rounds(ov, okey, f) for f in ("overlap_pct", "t_pure_us", "t_cpu_us", "t_ovrl_us")}
    doc["overlap"] = []
    for k in sorted(ovl["overlap_pct"][0], key=str):
        e = dict(zip(("setup", "lib", "op", "bytes", "variant"), k))
        e.update({f: r2(ovl[f][0].get(k)) for f in ovl}, rounds=len(ovl["overlap_pct"][1][k]))
        # Which rank's CPU the operation cost: per rank, the median over rounds of overlap.c's
        # per-rank median of t_ovrl - t_cpu (IMB's method takes the worst rank).
        lost = [x["lost_us_by_rank"] for x in ov if okey(x) == k and isinstance(x.get("lost_us_by_rank"), list)]
        if lost and all(len(v) == len(lost[0]) for v in lost):
            e["lost_us_by_rank"] = [r2(C.median(col)) for col in zip(*lost)]
        if k[0] != "local":
            # Two bounds on what any library can reach across the emulated hosts: the network's
            # busy time spread over the CPUs (docs/measurements/cluster-2026-11-26/'s method), and
            # the worst rank's loss beside a plain socket transfer (bench/netfloor.py). The lower binds.
            if cost and C.isnum(e["t_pure_us"]) and e["t_pure_us"] > 0:
                c = cost * moved_mib(k[2], k[3]) / ncpu
                e["ceiling_busy_pct"] = r2(max(0.0, 100 * (1 - c / e["t_pure_us"])))
            fl = F.ceiling_pct(doc.get("net_floor"), k[2], k[3], e["t_pure_us"])
            if fl is not None:
                e["ceiling_floor_pct"] = r2(fl)
            bounds = [e[f] for f in ("ceiling_busy_pct", "ceiling_floor_pct") if f in e]
            if bounds:
                e["ceiling_pct"] = min(bounds)
        else:
            e["ceiling_pct"] = 100.0
        doc["overlap"].append(e)
    # The reference progress thread (bench/ref_progress.c), per priority, beside the layer's rows.
    refs = doc.get("reference") or []
    rkey = lambda x: (x["lib"], x["op"], x["bytes"])  # noqa: E731
    rmed = {f: median_over_rounds(refs, rkey, f)[0] for f in ("overlap_pct", "t_pure_us")}
    doc["reference_overlap"] = [dict(zip(("lib", "op", "bytes"), k), setup="2x1", overlap_pct=r2(v),
                                     t_pure_us=r2(rmed["t_pure_us"].get(k)))
                                for k, v in sorted(rmed["overlap_pct"].items(), key=str)]
    bkey = lambda x: (x["setup"], x["lib"], x["op"], x["bytes"])  # noqa: E731
    done, lost = median_over_rounds(bg, bkey, "done_pct")[0], median_over_rounds(bg, bkey, "lost_pct")[0]
    doc["background"] = [dict(zip(("setup", "lib", "op", "bytes"), k), done_pct=r2(v), lost_pct=r2(lost.get(k)))
                         for k, v in sorted(done.items(), key=str)]
    mpis = sorted({x["lib"].split("+")[0] for x in rows}, key=lambda m: m != "openmpi")
    doc["latency"], doc["blocking"] = latency_of(rows), blocking_of(rows)
    for kind in PAIR_FIELD:
        for e in doc[kind]:
            p = (pairs or {}).get(pair_key(kind, e))
            if p:
                e["pairs"], e["pairs_ratio"] = p["pairs"], p["pairs_ratio"]
    calls: dict = {}
    doc["schedules"] = {}
    for r in runs:
        if r["lib"].endswith("+goal"):
            sc = doc["schedules"].setdefault(f"{r['setup']}/{r['program']}/{r['lib']}", {"compiled": 0, "reused": 0})
            for f in sc:
                sc[f] += r["layer"].get(f, 0)
            c = calls.setdefault(f"{r['setup']}/{r['program']}/{r['lib']}", {})
            for fn, v in r["layer"]["calls"].items():
                s = c.setdefault(fn, {"goal": 0, "mpi": 0})
                s["goal"] += v["goal"]
                s["mpi"] += v["mpi"]
    doc["calls"] = calls
    doc["fell_back"] = sum(v["mpi"] for c in calls.values() for v in c.values())
    doc["verdict"] = verdicts(doc, mpis)
    doc["notes"] = notes(doc, ncpu)
    doc["table"] = tables(doc, mpis)


def find(entries, **kw):
    return next((e for e in entries if all(e.get(k) == v for k, v in kw.items())), None)


def verdicts(doc, mpis) -> list[dict]:
    """Issue 41's "Done when" for each MPI: the overlap targets across hosts (2x1), the latency
    and blocking ratios in every setup."""
    out = []
    for setup in ("2x1", "local"):
        for mpi in mpis:
            lib = mpi + "+goal"
            for op in ("allreduce", "bcast") if setup != "local" else ():
                e = find(doc["overlap"], setup=setup, lib=lib, op=op, bytes=MiB, variant="none")
                if not e:
                    continue
                need = min(TARGET_PCT, e["ceiling_pct"] - CEILING_SLACK) if C.isnum(e.get("ceiling_pct")) \
                    else TARGET_PCT
                nat = find(doc["overlap"], setup=setup, lib=mpi, op=op, bytes=MiB, variant="none") or {}
                out.append({"setup": setup, "mpi": mpi, "what": f"I{op} 1 MiB overlap %",
                            "value": e["overlap_pct"], "native": nat.get("overlap_pct"),
                            "ceiling": e.get("ceiling_pct"), "need": r2(need), "cmp": ">=",
                            "met": C.isnum(e["overlap_pct"]) and e["overlap_pct"] >= need})
            b = find(doc["background"], setup=setup, lib=lib, op="barrier")
            if b and setup != "local":
                nat = find(doc["background"], setup=setup, lib=mpi, op="barrier") or {}
                out.append({"setup": setup, "mpi": mpi, "what": "Ibarrier finished during the computation (done %)",
                            "value": b["done_pct"], "native": nat.get("done_pct"), "need": 100.0, "cmp": ">=",
                            "met": b["done_pct"] == 100})
            lat = [e for e in doc["latency"] if e["setup"] == setup and e["mpi"] == mpi and C.isnum(decided(e))]
            if lat:
                worst = max(lat, key=decided)
                out.append({"setup": setup, "mpi": mpi, "what": "pure latency with the layer / native, worst op",
                            "value": decided(worst), "op": op_name(worst["op"], worst["bytes"]), "need": NOISE,
                            "pairs": "pairs" in worst, "cmp": "<=", "met": decided(worst) <= NOISE})
            blk = [e for e in doc["blocking"] if e["setup"] == setup and e["mpi"] == mpi and C.isnum(decided(e))]
            if blk:
                worst = max(blk, key=decided)
                out.append({"setup": setup, "mpi": mpi, "what": "blocking with the layer / native, worst point",
                            "value": decided(worst), "op": f"{worst['coll']} {C.fmt_bytes(worst['bytes'])}",
                            "median": r2(C.median(decided(e) for e in blk), 3), "need": NOISE,
                            "pairs": "pairs" in worst, "cmp": "<=", "met": decided(worst) <= NOISE})
    return out


def notes(doc, ncpu) -> list[str]:
    out = []
    nc = doc.get("net_cost")
    if nc:
        out.append(f"the emulated network's own CPU cost: {nc['cpu_us_per_mib']:.0f} us of CPU per MiB moved "
                   f"({nc['mib']} MiB between the two hosts by plain sockets, {nc['mbit_s']:.0f} Mbit/s"
                   f"{'; the least of ' + ', '.join(f'{v:.0f}' for v in nc['tries']) if len(nc.get('tries', [])) > 1 else ''}"
                   "); ceiling % = "
                   f"100 (1 - cost x MiB moved / {ncpu} CPUs / t_pure), MiB moved = the size (bcast), 2 x (allreduce)")
    fl = doc.get("net_floor")
    if fl:
        lost = "; ".join(f"{op} {' / '.join(f'{v:.0f}' for v in e['lost_us_by_cpu'])}" for op, e in fl["ops"].items())
        out.append(f"what the emulated network takes from each rank's computation (bench/netfloor.py: a busy loop per "
                   f"CPU while plain sockets move {C.fmt_bytes(fl['bytes'])} per operation, {fl['reps']} operations, "
                   f"median over {len(next(iter(fl['ops'].values()))['windows'])} window(s)), us lost per operation on "
                   f"rank 0 / rank 1's CPU: {lost}; ceiling % = 100 (1 - the worst rank's loss / t_pure)")
    if doc.get("cluster_skipped"):
        out.append(f"NO CLUSTER SETUP: {doc['cluster_skipped']}")
    load = (doc["machine"].get("loadavg_start") or [0])[0]
    if load > 0.5:
        out.append(f"the load average was {load:.1f} at the start: other processes shared the CPUs, so every time "
                   "here is noisy and the network's CPU cost (machine-wide busy time) and with it the ceiling are "
                   "overstated")
    out.append(f"served calls that fell back to MPI, all runs with the layer: {doc['fell_back']}")
    out.append("ratios are the median over rounds of each round's (with the layer) / (native); a ratio above 1 by "
               "less than the rounds' spread (ratio_min..ratio_max in the JSON) is noise")
    skipped = [f"{x['setup']}/{x['lib']} {x.get('what')} {op_name(x.get('op'), x.get('bytes'))}"
               for x in doc["rows"] if x.get("test") == "skipped"]
    if skipped:
        out.append(f"{len(skipped)} point(s) not measured, the run out of time (overlap.c --max-s): "
                   + ", ".join(skipped))
    hung = [f"{r['setup']}/{r['program']}/{r['lib']}#{r['round'] + 1}" for r in doc["runs"] if r["finalize_hang"]]
    if hung:
        out.append(f"{len(hung)} run(s) printed every row but did not leave MPI_Finalize within 20 s (killed, rows "
                   f"kept): {', '.join(hung)}")
    for r in doc["runs"]:
        if not r["ok"]:
            out.append(f"FAILED {r['setup']}/{r['program']}/{r['lib']} round {r['round'] + 1}: "
                       + "; ".join(r.get("problems") or [r.get("failure", "?")]))
    return out


def fmt(v, d=0, suffix=""):
    return f"{v:.{d}f}{suffix}" if C.isnum(v) else "-"


def tables(doc, mpis) -> str:
    libs = [l for m in mpis for l in (m, m + "+goal")]
    out = []
    for setup in doc["args"]["setups"]:
        ops = sorted({(e["op"], e["bytes"]) for e in doc["overlap"] if e["setup"] == setup},
                     key=lambda o: (o[0] != "barrier", o[0], o[1]))
        out.append(f"== {SETUP_TITLES.get(setup, setup)}")
        if ops:
            out.append("overlap % without progress calls [t_pure us]; ceiling % of the run with the layer (where "
                       "two were measured, the lower, then (busy time / the worst rank's loss))")
            rows = []
            for op, nb in ops:
                row = [op_name(op, nb)]
                for lib in libs:
                    e = find(doc["overlap"], setup=setup, lib=lib, op=op, bytes=nb, variant="none") or {}
                    row.append(f"{fmt(e.get('overlap_pct'))} [{fmt(e.get('t_pure_us'))}]")
                    if lib.endswith("+goal"):
                        row.append(fmt(e.get("ceiling_pct")) if "ceiling_floor_pct" not in e else
                                   f"{fmt(e.get('ceiling_pct'))} ({fmt(e.get('ceiling_busy_pct'))} / "
                                   f"{fmt(e['ceiling_floor_pct'])})")
                rows.append(row)
            head = ["op"] + [h for l in libs for h in ((l, "ceiling") if l.endswith("+goal") else (l,))]
            out.append(C.table(head, rows))
            rows = [[op_name(op, nb)] + [" / ".join(fmt(v) for v in e.get("lost_us_by_rank") or []) or "-" for e in (
                find(doc["overlap"], setup=setup, lib=lib, op=op, bytes=nb, variant="none") or {} for lib in libs)]
                for op, nb in ops]
            if any(c != "-" for r in rows for c in r[1:]):
                out.append("time each rank lost beside its computation, us (rank 0 / rank 1 ...: median t_ovrl - t_cpu; "
                           "the overlap % above takes the worst rank)")
                out.append(C.table(["op"] + libs, rows))
            ref = [e for e in doc.get("reference_overlap", []) if e["setup"] == setup]
            if ref:
                out.append("a plain progress thread on the same hosts (bench/ref_progress.c: sockets and poll, no "
                           "library; same method): overlap % [t_pure us]")
                rows = []
                for op, nb in sorted({(e["op"], e["bytes"]) for e in ref}):
                    es = [find(ref, lib=lib, op=op, bytes=nb) or {} for lib, _ in REF_LIBS]
                    rows.append([op_name(op, nb)] + [f"{fmt(e.get('overlap_pct'))} [{fmt(e.get('t_pure_us'))}]" for e in es])
                out.append(C.table(["op"] + [words for _, words in REF_LIBS], rows))
            out.append("background: done % (finished during the computation, no MPI calls) / lost %")
            rows = [[op_name(op, nb)] + [
                f"{fmt(b.get('done_pct'))} / {fmt(b.get('lost_pct'))}"
                for b in (find(doc["background"], setup=setup, lib=l, op=op, bytes=nb) or {} for l in libs)]
                for op, nb in ops]
            out.append(C.table(["op"] + libs, rows))
            out.append("pure latency (t_pure) with the layer / native (p: the median of back-to-back pairs)")
            lat = lambda m, op, nb: find(doc["latency"], setup=setup, mpi=m, op=op, bytes=nb) or {}  # noqa: E731
            rows = [[op_name(op, nb)] + [fmt(decided(lat(m, op, nb)), 2) + (" p" if "pairs" in lat(m, op, nb) else "")
                                         for m in mpis] for op, nb in ops]
            out.append(C.table(["op"] + mpis, rows))
        sizes = sorted({e["bytes"] for e in doc["blocking"] if e["setup"] == setup and e["bytes"]})
        colls = list(dict.fromkeys(e["coll"] for e in doc["blocking"] if e["setup"] == setup))
        cell = lambda e: (f"{fmt(decided(e), 2)}{' p' if 'pairs' in e else ''} [{fmt(e.get('native_us'), 1)}]"  # noqa: E731
                          if e else "")
        for m in mpis:
            if not any(e["setup"] == setup and e["mpi"] == m for e in doc["blocking"]):
                continue
            out.append(f"blocking collectives, {m}: with the layer / native (native median us in [ ]; "
                       "barrier: no data, first column; p: the median of back-to-back pairs)")
            rows = [[c] + [cell(find(doc["blocking"], setup=setup, mpi=m, coll=c, bytes=0 if c == "barrier" else s)
                                if c != "barrier" or i == 0 else None) for i, s in enumerate(sizes)]
                    for c in colls]
            out.append(C.table(["coll"] + [C.fmt_bytes(s) for s in sizes], rows))
        out.append("")
    out.append("layer report (GOAL_DEBUG=1, summed over ranks and rounds): calls on goal / fell back to MPI")
    for k, c in doc["calls"].items():
        sc = doc.get("schedules", {}).get(k) or {}
        out.append(f"  {k}: " + (", ".join(f"{fn} {v['goal']} / {v['mpi']}" for fn, v in sorted(c.items()))
                                 or "nothing served (the rule left every call to MPI)")
                   + (f"; schedules {sc['compiled']} compiled, {sc['reused']} reused" if sc.get("compiled") else ""))
    out.append("")
    out.append("issue 41, done when:")
    for v in doc["verdict"]:
        extra = f" ({v['op']})" if v.get("op") else ""
        ceil = f", ceiling {fmt(v['ceiling'])}" if C.isnum(v.get("ceiling")) else ""
        nat = f", native {fmt(v['native'])}" if "native" in v else ""
        d = 0 if v["cmp"] == ">=" else 2
        out.append(f"  [{'met' if v['met'] else 'NOT met'}] {v['setup']} {v['mpi']}: {v['what']}{extra}: "
                   f"{fmt(v['value'], d)} (need {v['cmp']} {fmt(v['need'], d)}{ceil}{nat})")
    out += [f"NOTE: {n}" for n in doc["notes"]]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------

def plot(doc, out: Path) -> list[Path]:
    plt = C.pyplot()
    if plt is None:
        return []
    written = []
    setups = [s for s in doc["args"]["setups"] if any(e["setup"] == s for e in doc["overlap"])]
    libs = [l for l in COLORS if any(e["lib"] == l for e in doc["overlap"])]
    stamp = f"{doc['machine'].get('hostname', '')}, {doc['args']['rounds']} round(s)" + \
        (" [quick]" if doc["args"].get("quick") else "")
    if setups:
        fig, axes = plt.subplots(3, len(setups), figsize=(7 * len(setups), 11), squeeze=False)
        for j, setup in enumerate(setups):
            ops = sorted({(e["op"], e["bytes"]) for e in doc["overlap"] if e["setup"] == setup},
                         key=lambda o: (o[0] != "barrier", o[0], o[1]))
            x = range(len(ops))
            w = 0.8 / max(1, len(libs))
            for i, lib in enumerate(libs):
                es = [find(doc["overlap"], setup=setup, lib=lib, op=o, bytes=b, variant="none") or {} for o, b in ops]
                xs = [p + (i - (len(libs) - 1) / 2) * w for p in x]
                axes[0][j].bar(xs, [e.get("overlap_pct") or 0 for e in es], w, color=COLORS[lib], label=lib)
                if lib.endswith("+goal") and setup != "local":
                    axes[0][j].scatter(xs, [e.get("ceiling_pct") for e in es], marker="_", s=200, color="k",
                                       label="ceiling (with the layer)" if i == 1 else None, zorder=3)
                    # Where the worst rank's loss set it, the busy-time ceiling it replaced, in grey.
                    busy = [(p, e["ceiling_busy_pct"]) for p, e in zip(xs, es) if "ceiling_floor_pct" in e
                            and C.isnum(e.get("ceiling_busy_pct")) and e["ceiling_busy_pct"] != e.get("ceiling_pct")]
                    if busy:
                        axes[0][j].scatter(*zip(*busy), marker="_", s=200, color="grey", zorder=3,
                                           label="ceiling from busy time alone" if i == 1 else None)
                bs = [find(doc["background"], setup=setup, lib=lib, op=o, bytes=b) or {} for o, b in ops]
                axes[2][j].bar(xs, [e.get("done_pct") or 0 for e in bs], w, color=COLORS[lib], label=lib)
            for (rlib, words), mark in zip(REF_LIBS, ("o", "^")):
                pts = [(p, (find(doc.get("reference_overlap", []), setup=setup, lib=rlib, op=o, bytes=b) or {})
                        .get("overlap_pct")) for p, (o, b) in zip(x, ops)]
                pts = [(p, v) for p, v in pts if C.isnum(v)]
                if pts:
                    axes[0][j].scatter([p for p, _ in pts], [v for _, v in pts], marker=mark, s=30, edgecolors="#d95f02",
                                       facecolors="none" if mark == "o" else "#d95f02", label=f"plain {words}", zorder=4)
            for k, m in enumerate([l for l in libs if "+" not in l]):
                es = [find(doc["latency"], setup=setup, mpi=m, op=o, bytes=b) or {} for o, b in ops]
                xs = [p + (k - 0.5) * 0.4 for p in x]
                axes[1][j].bar(xs, [e.get("ratio") or 0 for e in es], 0.4, color=COLORS[m + "+goal"],
                               label=f"{m}+goal / {m}")
            if setup != "local":
                axes[0][j].axhline(TARGET_PCT, color="r", ls=":", lw=1, label="target 90 %")
            axes[0][j].set_ylim(0, 105)
            axes[2][j].set_ylim(0, 105)
            axes[1][j].axhline(1.0, color="k", lw=0.8)
            axes[1][j].set_yscale("log")
            for r, lab in enumerate(("IMB overlap %, no progress calls", "t_pure with the layer / native (log)",
                                     "background: finished during the computation %")):
                ax = axes[r][j]
                ax.set_xticks(list(x))
                ax.set_xticklabels([op_name(*o) for o in ops], rotation=20, fontsize=8)
                ax.set_ylabel(lab, fontsize=9)
                ax.grid(True, axis="y", alpha=0.3)
                ax.legend(fontsize=7)
            axes[0][j].set_title(SETUP_TITLES.get(setup, setup), fontsize=11)
        fig.suptitle(f"unmodified MPI overlap program (IMB-NBC),\nnative and with libgoal-mpi preloaded — {stamp}",
                     fontsize=11)
        fig.tight_layout()
        p = out.parent / (out.name + "_overlap.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        written.append(p)
    bsetups = [s for s in doc["args"]["setups"] if any(e["setup"] == s for e in doc["blocking"])]
    mpis = [m for m in ("openmpi", "mpich") if any(e["mpi"] == m for e in doc["blocking"])]
    if bsetups and mpis:
        fig, axes = plt.subplots(len(bsetups), len(mpis), figsize=(7 * len(mpis), 4.5 * len(bsetups)),
                                 squeeze=False)
        for i, setup in enumerate(bsetups):
            for j, m in enumerate(mpis):
                ax = axes[i][j]
                es = [e for e in doc["blocking"] if e["setup"] == setup and e["mpi"] == m and C.isnum(decided(e))]
                sizes = sorted({e["bytes"] for e in es if e["bytes"]})
                for c in dict.fromkeys(e["coll"] for e in es):
                    # the barrier moves no data: one point at the smallest size
                    pts = sorted((e["bytes"] or sizes[0], decided(e)) for e in es if e["coll"] == c)
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3,
                            label=c + (" (no data)" if c == "barrier" else ""))
                ax.axhline(1.0, color="k", lw=0.8)
                ax.set_yscale("log")
                C.bytes_axis(ax, sizes)
                ax.set_ylabel("time with the layer / native (log)")
                ax.set_title(f"{SETUP_TITLES.get(setup, setup)} — {m}", fontsize=10)
                ax.grid(True, alpha=0.3)
                ax.legend(fontsize=7, ncol=2)
        fig.suptitle(f"blocking collectives (on goal where its rule says so, docs/mpi.md):\nlibgoal-mpi preloaded / native — {stamp}", fontsize=11)
        fig.tight_layout()
        p = out.parent / (out.name + "_blocking.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        written.append(p)
    return written


# ---------------------------------------------------------------------------------------

def check(doc: dict) -> list[str]:
    """What a result of bench/mpi.py lacks (empty: its shape is right)."""
    bad = []
    for k in ("benchmark", "args", "machine", "runs", "rows", "overlap", "background", "latency", "blocking",
              "calls", "fell_back", "verdict", "notes", "table"):
        if k not in doc:
            bad.append(f"no '{k}'")
    if bad:
        return bad
    a = doc["args"]
    for r in doc["runs"]:
        if not r["ok"]:
            bad.append(f"run {r['setup']}/{r['program']}/{r['lib']} failed: {r.get('problems') or r.get('failure')}")
    if doc["fell_back"]:
        bad.append(f"{doc['fell_back']} served call(s) fell back to MPI")
    if "2x1" in a["setups"] and "overlap" in a["programs"] and doc.get("net_cost") and not doc.get("net_floor"):
        bad.append("net_floor: the emulated network's loss per rank was not measured (bench/netfloor.py)")
    if "2x1" in a["setups"] and "overlap" in a["programs"] and doc.get("net_cost"):
        for op, nb in ref_points(a["ops"]):
            for lib, _ in REF_LIBS:
                e = find(doc.get("reference_overlap", []), lib=lib, op=op, bytes=nb) or {}
                if not (C.isnum(e.get("overlap_pct")) and C.isnum(e.get("t_pure_us"))):
                    bad.append(f"reference progress thread ({lib}) {op} {nb}: no result")
    mpis = [m for m in a["mpis"] if m in doc.get("libraries", {})]
    if not mpis:
        bad.append("no MPI measured")
    ops = [o.split(":")[0] for o in a["ops"].split(",")]
    for setup in a["setups"]:
        for m in mpis:
            for lib in (m, m + "+goal"):
                if "overlap" in a["programs"]:
                    es = [e for e in doc["overlap"] if (e["setup"], e["lib"], e["variant"]) == (setup, lib, "none")]
                    if sorted({e["op"] for e in es}) != sorted(set(ops)):
                        bad.append(f"overlap {setup}/{lib}: ops {sorted({e['op'] for e in es})}, want {sorted(set(ops))}")
                    fl = doc.get("net_floor") or {}
                    for e in es:
                        for f in ("t_pure_us", "t_cpu_us", "t_ovrl_us", "overlap_pct", "ceiling_pct"):
                            if not C.isnum(e.get(f)) and not (f == "ceiling_pct" and not doc.get("net_cost")):
                                bad.append(f"overlap {setup}/{lib} {e['op']} {e['bytes']}: no {f}")
                        if setup != "local" and e["op"] in fl.get("ops", {}) and e["bytes"] == fl.get("bytes") \
                                and not C.isnum(e.get("ceiling_floor_pct")):
                            bad.append(f"overlap {setup}/{lib} {e['op']} {e['bytes']}: no ceiling_floor_pct")
                    if lib.endswith("+goal") and not find(doc["background"], setup=setup, lib=lib, op="barrier"):
                        bad.append(f"background {setup}/{lib}: no barrier")
                    key = f"{setup}/overlap/{lib}"
                    if lib.endswith("+goal"):
                        c = doc["calls"].get(key, {})
                        for fn in ("MPI_Ibarrier", "MPI_Ibcast", "MPI_Iallreduce"):
                            if not c.get(fn, {}).get("goal"):
                                bad.append(f"{key}: no {fn} on goal in the layer's report")
            if "blocking" in a["programs"]:
                es = [e for e in doc["blocking"] if (e["setup"], e["mpi"]) == (setup, m)]
                want = blocking_points(a["colls"], a["sizes"])
                if len(es) != want or not all(C.isnum(e["ratio"]) for e in es):
                    bad.append(f"blocking {setup}/{m}: {sum(C.isnum(e['ratio']) for e in es)} ratios, want {want}")
    if not any(v["what"].startswith("Iallreduce") for v in doc["verdict"]) and "overlap" in a["programs"]:
        bad.append("no verdict on Iallreduce 1 MiB")
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("file", type=Path, help="a result of bench/mpi.py (results/mpi.json)")
    ap.add_argument("--check", action="store_true", help="check the JSON's shape only")
    ap.add_argument("--plot", action="store_true", help="write the plots beside the file")
    a = ap.parse_args()
    doc = json.loads(a.file.read_text())
    if a.check:
        bad = check(doc)
        for b in bad:
            print(f"bench-mpi-check: {a.file}: {b}")
        if not bad:
            print(f"bench-mpi-check: {a.file}: shape right, {len(doc['runs'])} runs, "
                  f"{doc['fell_back']} served calls fell back to MPI")
        return 1 if bad else 0
    summarize(doc, doc["machine"].get("nproc") or 1, pairs_of(doc))
    print(doc["table"])
    if a.plot:
        print("wrote " + ", ".join(map(str, plot(doc, a.file.with_suffix("")))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
