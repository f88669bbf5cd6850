#!/usr/bin/env python3
"""Reduce a raw result file of a benchmark driver to the small summary a record keeps.

    python3 bench/summarize.py results/coll.json > docs/measurements/NAME/summary.json
    python3 bench/summarize.py results/coll.json results/overlap.json > .../summary.json

The drivers (bench/p2p.py, coll.py, overlap.py, net.py, tune.py) write every run and every
row of a measurement to results/NAME.json: megabytes, which stay out of git (results/ is
ignored). A record in docs/measurements/ keeps instead this summary: the medians over rounds
the driver's tables show, per (library or goal algorithm/MPI variant, operation, size, rank
count ...), the ratios the targets are judged by, the targets, the driver's notes and where
and how it ran. It is made from the raw file alone, with the driver's own code where a figure
needs more than the raw file's "summary" (p2p's state-matched ratios, tune's decision table).

Numbers are rounded to 4 significant digits (integers from 1000 up), which is as many as the
drivers' tables print. Tables are columnar to stay small: {"key": [...], "columns": [...],
"rows": [[key..., value...], ...]}, one row per line; null where a library has no value.

Per benchmark (the raw file's "benchmark" field):
  p2p      medians_us (latency tests, per size x library), bandwidth_gbps, localop_us, ratios
           (goal variants / best Open MPI setting, state-matched as in the driver's table; for a
           file today's driver does not reproduce that way, ratios_of_medians instead), targets
  coll     medians_us (per ranks x collective x bytes, a column per library:setting: goal
           algorithms, goal variants' AUTO, MPI variants), vs_mpi (the fastest MPI setting and
           goal AUTO / its median), targets (with the rounds' verdict and the pairs' where
           close calls were measured again), runs (each run's probes)
  overlap  one table per test (overlap, cpu, idle, hostoverhead, background, na): the median
           over rounds of every numeric field per (setup, library, op, bytes, variant, ...),
           the vCPU state each setup was summarized in, the network's own cost
  net      the driver's summary (per library and rail count: latencies, bandwidth, efficiency)
  tune     medians_us per (collective, ranks, bytes) x algorithm, the fastest algorithm, and the
           ranges the driver's decision (switch cost as measured) makes of them
Anything else with a "summary" field: that summary, rounded.

A file of several --noise conditions (bench/noise.py): {"noise": [kinds], "conditions": {kind:
that condition's summary}}.

Several files (a record with more than one run): a JSON object of their summaries, keyed by
file name ("coll.json", "coll-K.json", ...), in the order given.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

SIG = 4


# ---------------------------------------------------------------------------------------
# small helpers

def rnd(x):
    """x rounded to SIG significant digits (integers from 1000 up); NaN -> None; recursive."""
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    if isinstance(x, float):
        if math.isnan(x) or math.isinf(x):
            return None
        if abs(x) >= 1000:
            return int(round(x))
        v = float(f"{x:.{SIG}g}")
        return int(v) if v == int(v) and abs(v) >= 1 else v
    if isinstance(x, dict):
        return {k: rnd(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [rnd(v) for v in x]
    return x


def table(key: list[str], columns: list[str], rows: list[list]) -> dict:
    return {"key": key, "columns": columns, "rows": [rnd(r) for r in rows]}


def drop_empty_columns(t: dict) -> dict:
    """Remove value columns that are null in every row."""
    nk = len(t["key"])
    keep = [i for i, _ in enumerate(t["columns"]) if any(r[nk + i] is not None for r in t["rows"])]
    t["columns"] = [t["columns"][i] for i in keep]
    t["rows"] = [r[:nk] + [r[nk + i] for i in keep] for r in t["rows"]]
    return t


def header(raw: dict, path: Path) -> dict:
    """What every summary starts with: the source file, the machine, the libraries, the notes."""
    data = path.read_bytes()
    m = raw.get("machine") or {}
    libs = {}
    for name, info in (raw.get("libraries") or {}).items():
        info = info if isinstance(info, dict) else {}
        libs[name] = {}
        if info.get("version"):
            libs[name]["version"] = C.short_version(info["version"])
        if info.get("note"):
            libs[name]["note"] = info["note"]
    out = {
        "benchmark": raw.get("benchmark"),
        "summary_of": {"file": path.name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()},
        "made_by": "bench/summarize.py",
        "machine": {k: m.get(k) for k in ("hostname", "nproc", "cpu_model", "kernel", "time_utc") if k in m},
    }
    if raw.get("args"):
        out["args"] = {k: v for k, v in raw["args"].items() if v not in (None, "", [], False) and k != "verbose"}
    if isinstance(raw.get("method"), str) and len(raw["method"]) < 1000:
        out["method"] = raw["method"]
    if raw.get("binding"):
        out["binding"] = raw["binding"]
    if libs:
        out["libraries"] = libs
    if raw.get("notes"):
        out["notes"] = raw["notes"]
    return out


def runs_table(runs: list[dict], key: list[str]) -> dict:
    """Each run's place and the state it ran in (core-to-core probe, CPU speed ratio, foreign CPU use)."""
    cols = ["c2c_ns", "cpu_ratio_before", "cpu_ratio_after", "foreign_pct", "disturbed", "unstable", "rc"]
    rows = [[r.get(k) for k in key] + [r.get(c) for c in cols] for r in runs]
    for row in rows:
        for i, k in enumerate(key):
            if k == "round" and isinstance(row[i], int):
                row[i] += 1  # rounds count from 1, as in the tables
    return drop_empty_columns(table(key, cols, rows))


# ---------------------------------------------------------------------------------------
# p2p

def summarize_p2p(raw: dict, out: dict) -> dict:
    import p2p as P
    rows, runs = raw.get("rows") or [], raw.get("runs") or []
    libs = list(dict.fromkeys(r["lib"] for r in runs)) or sorted({x["lib"] for x in rows})
    summ = {(s["lib"], s["test"], s["bytes"]): s for s in raw.get("summary") or []}
    lat_tests = sorted({k[1] for k in summ if k[1].startswith("latency")})
    lat = [[t, n] + [summ.get((l, t, n), {}).get("median_us") for l in libs]
           for t in lat_tests for n in sorted({k[2] for k in summ if k[1] == t})]
    out["medians_us"] = drop_empty_columns(table(["test", "bytes"], libs, lat))
    bw = [[n] + [summ.get((l, "bandwidth", n), {}).get("gbps") for l in libs]
          for n in sorted({k[2] for k in summ if k[1] == "bandwidth"})]
    out["bandwidth_gbps"] = drop_empty_columns(table(["bytes"], libs, bw))
    loc = {l: summ[(l, "runwait_localop", 8)]["median_us"] for l in libs if (l, "runwait_localop", 8) in summ}
    if loc:
        out["localop_us"] = rnd(loc)
    # goal / best Open MPI setting (under --noise: the best peer, as bench/p2p.py judges): as the
    # driver's table has them (each goal run against the peers' runs in its core-to-core state),
    # when today's bench/p2p.py reproduces the file's targets with them; else (a file from an
    # older driver) the ratio of the medians, named so
    goals = [l for l in libs if l.startswith("goal")]
    _, peers, pname, col = P.judged_by(raw.get("noise") or "none", libs)
    peer_libs = [l for l in libs if l in peers]
    if goals and peer_libs and rows:
        selected, _ = P.select_state(rows, runs, libs, bool((raw.get("args") or {}).get("all_states")))
        ix = P.index(selected, rows)
        tests = {"sched": ("latency_sched", "latency", "median_us", False),
                 "rw": ("latency_runwait", "latency", "median_us", False),
                 "bw": ("bandwidth", "bandwidth", "gbps", True)}

        def matched(g, what, n):
            gt, mt, fld, hb = tests[what]
            return P.ratio(ix, g, gt, mt, n, libs, fld, hb, peers)

        def of_medians(g, what, n):
            gt, mt, fld, hb = tests[what]
            gv = summ.get((g, gt, n), {}).get("gbps" if hb else "median_us")
            ms = [summ[(l, mt, n)].get("gbps" if hb else "median_us") for l in peer_libs if (l, mt, n) in summ]
            ms = [m for m in ms if C.isnum(m)]
            if not (C.isnum(gv) and ms):
                return None
            return gv / (max(ms) if hb else min(ms))

        recorded = [(t["lib"], "sched" if t["section"] == "latency" else "bw", t["bytes"], t["value"])
                    for t in raw.get("targets") or []
                    if t["section"] in ("latency", "bandwidth") and C.isnum(t.get("value")) and t["lib"] in goals]
        same = all(C.isnum(v := matched(g, w, n)) and abs(v / ref - 1) < 0.005 for g, w, n, ref in recorded)
        how = matched if same and recorded else of_medians
        cols, rr = [], []
        for g in goals:
            cols += [f"{g}:sched/{col}", f"{g}:rw/{col}", f"{g}:bw/{col}"]
        for n in sorted(set(P.LAT_SIZES) | set(P.BW_SIZES)):
            row = [n]
            for g in goals:
                row += [how(g, "sched", n) if n in P.LAT_SIZES else None,
                        how(g, "rw", n) if n in P.LAT_SIZES else None,
                        how(g, "bw", n) if n in P.BW_SIZES else None]
            rr.append(row)
        name = "ratios" if how is matched else "ratios_of_medians"
        out[name] = drop_empty_columns(table(["bytes"], cols, rr))
        out[name]["how"] = (
            f"goal's run / the {pname} setting's runs in the same core-to-core state, median over goal's "
            "runs, as bench/p2p.py's table (sched: latency_sched, rw: latency_runwait, bw: bandwidth, "
            "higher is better)" if how is matched else
            f"goal's median / the {pname} setting's median (sched: latency_sched, rw: latency_runwait, "
            "bw: bandwidth, higher is better); not the driver's state-matched ratios, which today's "
            "bench/p2p.py does not reproduce from this file: its table (NAME.txt) and targets have those")
    out["targets"] = table(["lib", "section", "bytes", "relation", "bound"], ["value", "unit", "ok"],
                           [[t["lib"], t["section"], t["bytes"], t["relation"], t["bound"], t.get("value"),
                             t.get("unit"), t.get("ok")] for t in raw.get("targets") or []])
    out["runs"] = runs_table(runs, ["lib", "round"])
    return out


# ---------------------------------------------------------------------------------------
# coll

def summarize_coll(raw: dict, out: dict) -> dict:
    import coll as K
    summ = raw.get("summary") or []
    points = sorted({(s["ranks"], s["coll"], s["bytes"]) for s in summ},
                    key=lambda p: (p[0], K.COLLS.index(p[1]) if p[1] in K.COLLS else 99, p[2]))
    settings = list(dict.fromkeys((s["lib"], s["setting"]) for s in summ))
    order = lambda ls: (0 if ls == ("goal", "AUTO") else 1 if ls[0] == "goal" else  # noqa: E731
                        2 if ls[0].startswith("goal") else 3, ls[0], ls[1])
    settings.sort(key=order)
    val = {(s["ranks"], s["coll"], s["bytes"], s["lib"], s["setting"]): s["median_us"] for s in summ}
    cols = [f"{l}:{st}" for l, st in settings]
    out["medians_us"] = table(["ranks", "coll", "bytes"], cols,
                              [[*p] + [val.get((*p, l, st)) for l, st in settings] for p in points])
    mpi = [ls for ls in settings if ls[0] in K.MPI_LIBS]
    vs = []
    for p in points:
        g = val.get((*p, "goal", "AUTO"))
        have = [(val[(*p, *ls)], ls) for ls in mpi if (*p, *ls) in val]
        if not have:
            continue
        best, (bl, bs) = min(have)
        vs.append([*p, f"{bl}:{bs}", g / best if g is not None and best else None])
    if vs:
        out["vs_mpi"] = table(["ranks", "coll", "bytes"], ["best_mpi", "goal_auto/best_mpi"], vs)
    trows = []
    for t in raw.get("targets") or []:
        rv, pd = t.get("rounds_verdict") or {}, t.get("paired") or {}
        ref = f"{t['ref_lib']}:{t['ref_setting']}" if t.get("ref_lib") else None
        trows.append([t["ranks"], t["coll"], t["bytes"], t["relation"], t["bound"], t.get("value"), t.get("ok"),
                      t.get("goal_us"), t.get("ref_us"), ref,
                      rv.get("value") if pd.get("decides") else None, rv.get("ok") if pd.get("decides") else None,
                      [p["ratio"] for p in pd.get("pairs", [])] or None])
    if trows:
        out["targets"] = drop_empty_columns(table(
            ["ranks", "coll", "bytes", "relation", "bound"],
            ["value", "ok", "goal_us", "ref_us", "ref", "rounds_value", "rounds_ok", "pair_ratios"], trows))
        out["targets_met"] = f"{sum(1 for t in raw['targets'] if t.get('ok'))}/{len(raw['targets'])}"
    out["runs"] = runs_table(raw.get("runs") or [], ["lib", "ranks", "round"])
    return out


# ---------------------------------------------------------------------------------------
# overlap

def summarize_overlap(raw: dict, out: dict) -> dict:
    import overlap as O
    summ = raw.get("summary") or []
    for test in list(dict.fromkeys(s["test"] for s in summ)):
        mine = [s for s in summ if s["test"] == test]
        key = [k for k in O.KEY_FIELDS if k != "test" and any(s.get(k) is not None for s in mine)]
        cols = [f for f in ("rounds", *O.NUMERIC, "why") if any(f in s for s in mine)]
        out[test] = drop_empty_columns(table(key, cols, [[s.get(k) for k in key + cols] for s in mine]))
    if raw.get("vcpu_state"):
        out["vcpu_state"] = raw["vcpu_state"]
    if raw.get("net_cost"):
        out["net_cost"] = rnd(raw["net_cost"])
    out["runs"] = runs_table(raw.get("runs") or [], ["setup", "lib", "round"])
    return out


# ---------------------------------------------------------------------------------------
# net, tune, anything else

def summarize_net(raw: dict, out: dict) -> dict:
    out["rate_per_rail"] = raw.get("rate_per_rail")
    out["summary"] = rnd(raw.get("summary"))
    return out


def summarize_tune(raw: dict, out: dict) -> dict:
    import tune as T
    if (raw.get("goal") or {}).get("version"):
        out.setdefault("libraries", {})["goal"] = {"version": raw["goal"]["version"]}
    med = T.medians(raw.get("rows") or [])
    algs = sorted({k[3] for k in med}, key=lambda a: (a != "AUTO", a))
    pts = sorted({k[:3] for k in med}, key=lambda p: (T.COLLS.index(p[0]) if p[0] in T.COLLS else 99, p[1], p[2]))
    rows = []
    for p in pts:
        times = {a: med.get((*p, a)) for a in algs}
        real = {a: t for a, t in times.items() if a != "AUTO" and C.isnum(t)}
        rows.append([*p] + [times[a] for a in algs] + [min(real, key=real.get) if real else None])
    out["medians_us"] = drop_empty_columns(table(["coll", "ranks", "bytes"], algs + ["fastest"], rows))
    try:
        cost = float((raw.get("args") or {}).get("switch_cost", 0.15))
    except ValueError:
        cost = 0.15
    ranges = []
    for (coll, n), rr in T.decide(med, cost).items():
        for max_bytes, alg, _ in rr:
            ranges.append([coll, n, None if max_bytes >= T.U64_MAX else max_bytes, alg])
    out["decision"] = {"switch_cost": cost, "key": ["coll", "ranks", "up_to_bytes", "alg"], "rows": ranges,
                       "how": "bench/tune.py's choice per size range (up_to_bytes null: every larger size)"}
    out["runs"] = runs_table(raw.get("runs") or [], ["ranks", "round"])
    return out


def summarize_other(raw: dict, out: dict) -> dict:
    if "summary" not in raw:
        raise SystemExit(f"summarize.py: {out['summary_of']['file']}: no 'summary' field and an unknown "
                         f"benchmark {raw.get('benchmark')!r}: nothing to reduce")
    out["summary"] = rnd(raw["summary"])
    return out


BY_BENCHMARK = {"p2p": summarize_p2p, "coll": summarize_coll, "overlap": summarize_overlap,
                "net": summarize_net, "tune": summarize_tune}


def summarize(path: Path) -> dict:
    raw = json.loads(path.read_text())
    if not isinstance(raw, dict):
        raise SystemExit(f"summarize.py: {path}: not a driver's result file (a JSON object with 'benchmark')")
    if "conditions" in raw:
        # --noise with several kinds (bench/noise.py): each condition is a result of its own.
        return {"noise": raw.get("noise"), "conditions": {
            kind: BY_BENCHMARK.get(raw.get("benchmark"), summarize_other)(cond, header(cond, path))
            for kind, cond in raw["conditions"].items()}}
    out = header(raw, path)
    return BY_BENCHMARK.get(raw.get("benchmark"), summarize_other)(raw, out)


# ---------------------------------------------------------------------------------------
# output: indented, but a list of scalars (a table row) on one line

def dump(obj, ind: int = 0) -> str:
    pad, inner = " " * ind, " " * (ind + 1)
    scalar = lambda v: not isinstance(v, (dict, list))  # noqa: E731
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f"{inner}{json.dumps(k)}: {dump(v, ind + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list):
        # a table row: scalars, perhaps with a list of scalars among them
        if all(scalar(v) or (isinstance(v, list) and all(scalar(w) for w in v)) for v in obj) \
                and (not obj or any(scalar(v) for v in obj)) \
                and not (all(isinstance(v, str) for v in obj) and sum(map(len, obj)) > 100):
            return json.dumps(obj, ensure_ascii=False)
        if not obj:
            return "[]"
        return "[\n" + ",\n".join(inner + dump(v, ind + 1) for v in obj) + "\n" + pad + "]"
    return json.dumps(obj, ensure_ascii=False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("raw", nargs="+", type=Path, help="result file(s) a driver wrote (results/NAME.json)")
    ap.add_argument("-o", "--output", type=Path, help="write here instead of standard output")
    a = ap.parse_args()
    if len({p.name for p in a.raw}) < len(a.raw):
        ap.error("two result files of the same name: the summary names each by its file name")
    got = {p.name: summarize(p) for p in a.raw}
    text = dump(got[a.raw[0].name] if len(got) == 1 else got) + "\n"
    if a.output:
        a.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
