#!/usr/bin/env python3
"""goal tune: measure every collective algorithm and write GOAL_ALG_AUTO's decision table.

    python3 bench/tune.py --prefix DIR                  # measure, then write the table and the docs
    python3 bench/tune.py --prefix DIR --quick          # smoke run (few sizes, one round)
    python3 bench/tune.py --from results/tune.json      # only rewrite the outputs from a measurement
    python3 bench/tune.py --prefix DIR --colls alltoall --update
                                                        # measure one collective again, keep the
                                                        # others' measurements from results/tune.json

Runs bench/goal_coll.c (the thesis' method, 6.5: Run+Wait per iteration on every rank, barrier
before each iteration of a collective that does not synchronise (bench/separator.h's, as in
bench/coll.py), mean over ranks, median over iterations) for every collective and every goal
algorithm, over group sizes (default 2, 3, 4) and message sizes (every power of two from 8 B to 4 MiB), several rounds interleaved; the
median over rounds decides. For each (collective, group size) the fastest algorithm per
message size is chosen by dynamic programming: the total relative loss against the fastest
algorithm over all sizes plus --switch-cost (0.15) per change of algorithm between neighbouring
sizes is minimised, so that noise does not cut the size axis into slivers; adjacent sizes with
the same choice become one range.

Writes
  crates/goal-sched/src/coll/auto_table.rs   the table as Rust source: `pub(crate) const TABLE`
                                             and `pub(crate) fn lookup(coll, size, bytes)`
  docs/collectives.md                        the measured table and the numbers behind it,
                                             between the `<!-- tune:begin -->` / `<!-- tune:end -->`
                                             markers (the rest of the page is left alone)
  results/tune.json                          every measurement
Group sizes above the largest measured one are not in the table (`lookup` returns None there,
and `auto` keeps its built-in rules). Size = one rank's contribution in bytes (the `bytes`
argument of `goal_sched::coll::auto`).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

KiB, MiB = 1 << 10, 1 << 20
COLLS = ["barrier", "bcast", "gather", "scatter", "allgather", "alltoall", "reduce", "allreduce",
         "reduce_scatter_block"]
RUST_COLL = {"barrier": "Barrier", "bcast": "Bcast", "gather": "Gather", "scatter": "Scatter",
             "allgather": "Allgather", "alltoall": "Alltoall", "reduce": "Reduce", "allreduce": "Allreduce",
             "reduce_scatter_block": "ReduceScatterBlock"}
RUST_ALG = {"LINEAR": "Linear", "LINEAR_SYNC": "LinearSync", "BINOMIAL": "Binomial",
            "RECURSIVE_DOUBLING": "RecursiveDoubling", "BRUCK": "Bruck", "RING": "Ring",
            "PIPELINE": "Pipeline", "RABENSEIFNER": "Rabenseifner"}
# what each algorithm is called for each collective (goal_sched::coll::describe)
DESCRIBE_SPECIAL = {("alltoall", "LINEAR"): "linear (every message at once)",
                    ("alltoall", "LINEAR_SYNC"): "pairwise exchange",
                    ("reduce_scatter_block", "RECURSIVE_DOUBLING"): "recursive halving",
                    ("reduce_scatter_block", "LINEAR"): "linear (every block straight to its rank)",
                    ("barrier", "BRUCK"): "Bruck (dissemination)",
                    ("bcast", "RING"): "scatter + ring allgather"}
DESCRIBE = {"LINEAR": "linear", "LINEAR_SYNC": "linear_sync", "BINOMIAL": "binomial tree",
            "RECURSIVE_DOUBLING": "recursive doubling", "BRUCK": "Bruck", "RING": "ring",
            "PIPELINE": "pipeline", "RABENSEIFNER": "Rabenseifner"}
TABLE_RS = C.REPO / "crates" / "goal-sched" / "src" / "coll" / "auto_table.rs"
DOCS = C.REPO / "docs" / "collectives.md"
BEGIN, END = "<!-- tune:begin -->", "<!-- tune:end -->"
U64_MAX = (1 << 64) - 1


def describe(coll: str, alg: str) -> str:
    return DESCRIBE_SPECIAL.get((coll, alg), DESCRIBE.get(alg, alg.lower()))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prefix", type=Path, help="goal install prefix (make install PREFIX=DIR)")
    ap.add_argument("--from", dest="from_json", type=Path, help="do not measure: use this tune.json")
    ap.add_argument("--ranks", default="2,3,4", help="group sizes (default 2,3,4)")
    ap.add_argument("--colls", default="", help="comma list of collectives (default: all)")
    ap.add_argument("--sizes", default="", help="comma list of sizes (K/M suffixes; default: every power "
                    "of two 8 B .. 4 MiB)")
    ap.add_argument("--rounds", type=int, help="runs per group size, interleaved (default 3, quick 1)")
    ap.add_argument("--quick", action="store_true", help="smoke run: sizes 8 B, 4 KiB, 64 KiB, 1 MiB, one round")
    ap.add_argument("--budget-ms", type=float, help="measuring time per point (default 20, quick 5)")
    ap.add_argument("--progress", default="", help="GOAL_PROGRESS for the measurement (default: goal's default)")
    ap.add_argument("--no-pin", action="store_true", help="do not pin rank r to CPU r %% ncpus")
    ap.add_argument("--switch-cost", type=float, default=0.15,
                    help="cost of changing the algorithm between neighbouring sizes, in units of a size's "
                         "fastest time (default 0.15: switch only to gain more than 15 %% overall)")
    ap.add_argument("--out", default=str(C.REPO / "results" / "tune"), help="JSON output without extension")
    ap.add_argument("--table", type=Path, default=TABLE_RS, help=f"Rust table to write (default {TABLE_RS.relative_to(C.REPO)})")
    ap.add_argument("--docs", type=Path, default=DOCS, help=f"page to update (default {DOCS.relative_to(C.REPO)})")
    ap.add_argument("--no-write", action="store_true", help="print the table, write only the JSON")
    ap.add_argument("--update", action="store_true",
                    help="with --colls: replace only these collectives' rows in the existing JSON (--out) and "
                         "decide the table from the result, so that the other entries stay as measured")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per run (default 900)")
    ap.add_argument("--wait-idle", type=float, default=10, help="wait up to N s for an idle machine before a run")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    if a.from_json is None and a.prefix is None:
        ap.error("--prefix DIR is required (or --from results/tune.json)")
    a.ranks = [int(x) for x in a.ranks.split(",") if x.strip()]
    if a.rounds is None:
        a.rounds = 1 if a.quick else 3
    if a.budget_ms is None:
        a.budget_ms = 5 if a.quick else 20
    return a


def default_sizes(quick: bool) -> list[int]:
    if quick:
        return [8, 4 * KiB, 64 * KiB, MiB]
    out, s = [], 8
    while s <= 4 * MiB:
        out.append(s)
        s *= 2
    return out


# ---------------------------------------------------------------------------------------
# measuring

def measure(a) -> dict:
    goal = C.find_goal(a.prefix)
    exe = C.build_goal_program(goal, C.BENCH / "goal_coll.c", C.BUILD / "goal_coll",
                                 [C.BENCH / "p2p_common.h", C.BENCH / "coll_common.h", C.BENCH / "separator.h"])
    sizes = [int(s) for s in a.sizes.split(",")] if a.sizes and a.sizes.replace(",", "").isdigit() else None
    if a.sizes and sizes is None:
        sizes = [int(x[:-1]) * {"K": KiB, "M": MiB}[x[-1].upper()] if x[-1].upper() in "KM" else int(x)
                 for x in a.sizes.split(",") if x]
    sizes = sizes or default_sizes(a.quick)
    env = {"GOAL_PROGRESS": a.progress} if a.progress else {}
    rows, runs = [], []
    for r in range(a.rounds):
        order = a.ranks[r % len(a.ranks):] + a.ranks[:r % len(a.ranks)]
        for n in order:
            cmd = [str(goal.goalrun), "-n", str(n), str(exe), "--name", "goal", "--algs", "all",
                   "--sizes", ",".join(map(str, sizes)), "--budget-ms", str(a.budget_ms),
                   "--min-iters", "5" if a.quick else "9", "--max-iters", "200" if a.quick else "600",
                   "--sep-file", C.SEP_FILE]
            # goal_coll measures more collectives than the table has rows for (allgatherv,
            # alltoallv): only those the table decides.
            cmd += ["--colls", a.colls or ",".join(COLLS)]
            if not a.no_pin:
                cmd.append("--pin")
            if a.wait_idle > 0:
                C.wait_for_idle(a.wait_idle)
            c2c = C.c2c_probe()
            C.log(f"[round {r + 1}/{a.rounds}] {n} ranks: every algorithm, {len(sizes)} sizes ...")
            with C.SeparatorFile() as sep, C.CpuMeter() as m:
                res = C.run(sep.put_in(cmd), env=env, timeout=a.timeout, cwd=C.REPO)
            if not res.ok:
                raise C.BenchError(f"goal_coll failed with {n} ranks: {res.describe()}")
            got = [x for x in C.parse_rows(res.stdout) if x.get("test") == "coll"]
            bad = [x for x in got if x.get("verified") is False]
            if bad:
                raise C.BenchError("goal gave WRONG RESULTS: " + "; ".join(
                    f"{x['coll']} {x['alg']} {x['bytes']} B on {n} ranks" for x in bad[:10]))
            for x in got:
                x["round"] = r
            rows += got
            runs.append({"ranks": n, "round": r, "seconds": round(res.seconds, 1), "c2c_ns": c2c,
                         "cmd": cmd, "env": env, **m.result})
            C.log(f"    {len(got)} rows in {res.seconds:.0f} s (c2c {c2c} ns, foreign CPU {m.result['foreign_pct']}%)")
    return {"benchmark": "tune", "machine": C.machine_info(), "goal": {"prefix": str(goal.prefix),
            "version": goal.version}, "args": {k: str(v) for k, v in vars(a).items()}, "sizes": sizes,
            "runs": runs, "rows": rows}


# ---------------------------------------------------------------------------------------
# deciding

def medians(rows) -> dict:
    """(coll, ranks, bytes, alg) -> median over rounds of the run medians."""
    per: dict = {}
    for x in rows:
        per.setdefault((x["coll"], x["ranks"], x["bytes"], x["alg"]), []).append(x["median_us"])
    return {k: C.median(v) for k, v in per.items()}


def decide(med: dict, switch_cost: float) -> dict:
    """(coll, ranks) -> [(max_bytes, alg, [(bytes, best_alg, best_us, chosen_us, auto_us, times)])],
    ranges in ascending size.

    Per (collective, group size) the choice over the sizes minimises the total relative loss
    (chosen time / fastest time - 1, summed over sizes) plus `switch_cost` for every change of
    algorithm between neighbouring sizes (dynamic programming over sizes x algorithms): an
    algorithm that is fastest at one size by less than the noise does not get a range of its own."""
    out = {}
    for coll, n in sorted({(k[0], k[1]) for k in med}, key=lambda t: (COLLS.index(t[0]), t[1])):
        sizes = sorted({k[2] for k in med if k[0] == coll and k[1] == n})
        table = []
        for b in sizes:
            times = {alg: t for (c, rk, bb, alg), t in med.items()
                     if (c, rk, bb) == (coll, n, b) and alg != "AUTO" and C.isnum(t)}
            if times:
                table.append((b, times))
        if not table:
            continue
        algs = sorted({a for _, t in table for a in t})
        inf = float("inf")

        def loss(times, a):
            return times[a] / min(times.values()) - 1 if a in times else inf

        cost = [{a: loss(table[0][1], a) for a in algs}]
        back = [{}]
        for b, times in table[1:]:
            prev = cost[-1]
            best_prev = min(prev, key=prev.get)
            row, br = {}, {}
            for a in algs:
                stay, switch = prev[a], prev[best_prev] + switch_cost
                row[a], br[a] = (stay, a) if stay <= switch else (switch, best_prev)
                row[a] += loss(times, a)
            cost.append(row)
            back.append(br)
        choice = [min(cost[-1], key=cost[-1].get)]
        for i in range(len(table) - 1, 0, -1):
            choice.append(back[i][choice[-1]])
        choice.reverse()
        ranges: list = []
        for (b, times), ch in zip(table, choice):
            best = min(times, key=times.get)
            info = (b, best, times[best], times[ch], med.get((coll, n, b, "AUTO"), float("nan")), dict(times))
            if ranges and ranges[-1][1] == ch:
                ranges[-1] = (b, ch, ranges[-1][2] + [info])
            else:
                ranges.append((b, ch, [info]))
        ranges[-1] = (U64_MAX, ranges[-1][1], ranges[-1][2])
        out[(coll, n)] = ranges
    return out


# ---------------------------------------------------------------------------------------
# writing

def rust_table(dec: dict, meta: str) -> str:
    lines = [
        "//! GOAL_ALG_AUTO's decision table, measured on this machine by `bench/tune.py`",
        "//! (\"goal tune\"); regenerate it with `python3 bench/tune.py --prefix DIR`.",
        "//!",
    ]
    lines += [f"//! {m}" for m in meta.splitlines()]
    lines += [
        "//!",
        "//! A rule applies to `coll` on `min_size ..= max_size` ranks when `bytes <= max_bytes`",
        "//! (`bytes` as in [`auto`](super::auto): one rank's contribution); the first rule that",
        "//! applies wins. Group sizes no rule covers are left to `auto`'s built-in choices.",
        "",
        "use super::{Algorithm, Coll};",
        "",
        "/// One row of the table.",
        "#[derive(Debug, Clone, Copy, PartialEq, Eq)]",
        "pub(crate) struct Rule {",
        "    /// The collective.",
        "    pub coll: Coll,",
        "    /// Smallest group size the rule covers.",
        "    pub min_size: u32,",
        "    /// Largest group size the rule covers.",
        "    pub max_size: u32,",
        "    /// Largest contribution (bytes) the rule covers.",
        "    pub max_bytes: u64,",
        "    /// The algorithm measured fastest there.",
        "    pub alg: Algorithm,",
        "}",
        "",
        "/// The measured rules, by collective, group size and size.",
        "pub(crate) const TABLE: &[Rule] = &[",
    ]
    for (coll, n), ranges in dec.items():
        for max_bytes, alg, _ in ranges:
            mb = "u64::MAX" if max_bytes == U64_MAX else f"{max_bytes}"
            lines.append(f"    Rule {{ coll: Coll::{RUST_COLL[coll]}, min_size: {n}, max_size: {n}, max_bytes: {mb}, "
                         f"alg: Algorithm::{RUST_ALG[alg]} }},")
    lines += [
        "];",
        "",
        "/// The measured choice for `coll` on `size` ranks with `bytes` per rank, if the table has one.",
        "pub(crate) fn lookup(coll: Coll, size: u32, bytes: u64) -> Option<Algorithm> {",
        "    TABLE.iter().find(|r| r.coll == coll && (r.min_size..=r.max_size).contains(&size) && bytes <= r.max_bytes).map(|r| r.alg)",
        "}",
        "",
    ]
    return "\n".join(lines)


def fmt_range(lo: int | None, hi: int) -> str:
    if hi == U64_MAX:
        return "all sizes" if lo is None else f"> {C.fmt_bytes(lo)}"
    return f"<= {C.fmt_bytes(hi)}" if lo is None else f"> {C.fmt_bytes(lo)}, <= {C.fmt_bytes(hi)}"


def docs_section(dec: dict, med: dict, data: dict, meta: str) -> str:
    out = [BEGIN, "", "## The measured table", ""]
    out += [f"{m}  " for m in meta.splitlines()]
    out += ["", "Sizes are one rank's contribution in bytes (the message of bcast, one block of gather, "
            "scatter, allgather, alltoall and reduce_scatter_block, the vector of reduce and allreduce).",
            "", "| collective | ranks | size | algorithm |", "|---|---|---|---|"]
    for (coll, n), ranges in dec.items():
        lo = None
        for max_bytes, alg, _ in ranges:
            rng = "-" if coll == "barrier" else fmt_range(lo, max_bytes)
            out.append(f"| {coll} | {n} | {rng} | {describe(coll, alg)} |")
            lo = max_bytes
    # AUTO vs best
    out += ["", "### What the built-in AUTO lost", "",
            "AUTO as measured (the choice `auto` made when this was measured) against the fastest "
            "algorithm, where AUTO was more than 25 % slower (median over rounds, µs; some of it is noise: AUTO may be the same algorithm as the fastest):", "",
            "| collective | ranks | size | AUTO | fastest | AUTO / fastest |", "|---|---|---|---|---|---|"]
    slow = 0
    for (coll, n), ranges in dec.items():
        for _, _, infos in ranges:
            for b, best, best_t, _, auto_t, _ in infos:
                if C.isnum(auto_t) and best_t > 0 and auto_t > 1.25 * best_t:
                    slow += 1
                    out.append(f"| {coll} | {n} | {C.fmt_bytes(b) if b else '-'} | {C.fmt_num(auto_t)} | "
                               f"{C.fmt_num(best_t)} {describe(coll, best)} | {auto_t / best_t:.2f} |")
    if not slow:
        out.append("| (none) | | | | | |")
    # all numbers
    out += ["", "### The measurements", "",
            "Median over rounds of each run's median time per call (µs); **bold**: fastest; AUTO is "
            "the choice `auto` made at measuring time.", ""]
    for coll in COLLS:
        for n in sorted({k[1] for k in med if k[0] == coll}):
            algs = sorted({k[3] for k in med if k[0] == coll and k[1] == n} - {"AUTO"})
            sizes = sorted({k[2] for k in med if k[0] == coll and k[1] == n})
            if not algs:
                continue
            out += [f"**{coll}, {n} ranks**", "",
                    "| size | " + " | ".join(describe(coll, a) for a in algs) + " | AUTO |",
                    "|---" * (len(algs) + 2) + "|"]
            for b in sizes:
                ts = [med.get((coll, n, b, a), float("nan")) for a in algs]
                best = min((t for t in ts if C.isnum(t)), default=float("nan"))
                cells = [f"**{C.fmt_num(t)}**" if C.isnum(t) and t == best else C.fmt_num(t) for t in ts]
                out.append(f"| {C.fmt_bytes(b) if b else '-'} | " + " | ".join(cells)
                           + f" | {C.fmt_num(med.get((coll, n, b, 'AUTO'), float('nan')))} |")
            out.append("")
    out += [END]
    return "\n".join(out)


DOCS_SKELETON = """# Collectives

(This page's measured part, between the markers below, is written by `bench/tune.py`.)

""" + BEGIN + "\n" + END + "\n"


def write_docs(path: Path, section: str) -> None:
    text = path.read_text() if path.exists() else DOCS_SKELETON
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        text = head + section + tail
    else:
        text = text.rstrip() + "\n\n" + section + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def merged(path: Path, new: dict, colls: str) -> dict:
    """`new`'s rows for `colls` with every other row of the measurement in `path` (--update)."""
    import json
    if not colls:
        C.die("--update needs --colls: the collectives to measure again")
    if not path.exists():
        C.die(f"--update: no earlier measurement at {path} to keep the other collectives from")
    old = json.loads(path.read_text())
    if {x["ranks"] for x in new["rows"]} != {x["ranks"] for x in old["rows"]}:
        C.die("--update: measure the same group sizes as the earlier measurement")
    again = set(colls.split(","))
    rows = [x for x in old["rows"] if x["coll"] not in again] + new["rows"]
    updates = old.get("updates", []) + [{"colls": sorted(again), "machine": new["machine"], "args": new["args"],
                                         "seconds": new.get("seconds")}]
    return {**old, "rows": rows, "runs": old["runs"] + new["runs"], "updates": updates}


def main() -> int:
    a = parse_args()
    C.VERBOSE = a.verbose
    out = Path(a.out)
    if a.from_json:
        import json
        data = json.loads(a.from_json.read_text())
    else:
        t0 = time.time()
        try:
            data = measure(a)
        except C.BenchError as e:
            C.die(str(e))
        data["seconds"] = round(time.time() - t0)
        if a.update:
            data = merged(out.with_suffix(".json"), data, a.colls)
        C.write_json(out.with_suffix(".json"), data)
    med = medians(data["rows"])
    dec = decide(med, a.switch_cost)
    m = data["machine"]
    ranks = sorted({x["ranks"] for x in data["rows"]})
    # (the first measurement's: an --update's rows may have more or fewer)
    rounds = data.get("args", {}).get("rounds") or len({x["round"] for x in data["rows"]})
    meta = (f"Measured {m.get('time_utc', '?')} on {m.get('hostname', '?')}: {m.get('nproc', '?')} CPUs "
            f"({m.get('cpu_model', '?')}), {m.get('virtualization') or 'bare metal'}, kernel {m.get('kernel', '?')}; "
            f"group sizes {', '.join(map(str, ranks))}, {rounds} round(s), progress "
            f"{data.get('args', {}).get('progress') or 'default'}, ranks pinned to CPU r % ncpus"
            + ("" if data.get("args", {}).get("no_pin") in (None, "False") else " (no: unpinned)") + ".")
    for u in data.get("updates", []):
        again = u.get("args", {}).get("rounds")
        meta += (f"\n{', '.join(u['colls'])} measured again {u['machine'].get('time_utc', '?')} "
                 f"({again + ' round(s), ' if again else ''}`--update`).")
    if any(n > (m.get("nproc") or 1) for n in ranks):
        meta += (f"\nGroup sizes above {m.get('nproc')} ran more ranks than CPUs: their choices reflect "
                 "ranks sharing CPUs.")
    rs = rust_table(dec, meta)
    section = docs_section(dec, med, data, meta)
    # print the short table
    print(f"{'collective':22} {'ranks':>5}  {'size':24} algorithm")
    for (coll, n), ranges in dec.items():
        lo = None
        for max_bytes, alg, _ in ranges:
            print(f"{coll:22} {n:>5}  {('-' if coll == 'barrier' else fmt_range(lo, max_bytes)):24} {describe(coll, alg)}")
            lo = max_bytes
    if not a.no_write:
        a.table.parent.mkdir(parents=True, exist_ok=True)
        a.table.write_text(rs)
        write_docs(a.docs, section)
        print(f"wrote {a.table}, {a.docs}" + ("" if a.from_json else f", {out.with_suffix('.json')}"))
    elif not a.from_json:
        print(f"wrote {out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
