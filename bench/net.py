#!/usr/bin/env python3
"""goal bench net: latency and bandwidth between two emulated hosts, beside Open MPI's TCP.

    python3 bench/net.py --prefix DIR               # -> results/net.json, results/net.png
    python3 bench/net.py --prefix DIR --quick       # one round, few repetitions

Needs root (network namespaces; see crates/goal-netns). For 1, 2 and 3 rails of 1 Gbit/s
(tc tbf on every port, both directions) an emulated cluster of two hosts is built with
`goal-cluster`, and bench/net_pp.c runs one rank per host under Open MPI's mpirun (which
enters the hosts' namespaces through goal-netns' launcher agent):
  - goal (GOAL_RAILS = the rails), through goal-boot's PMIx path;
  - Open MPI 4.1's TCP transport (--mca btl tcp,self, btl_tcp_if_include = the same rails),
    which also stripes large messages over the interfaces it is given.
Both libraries run in every round, in alternating order. Latency: ping-pong, half round trip,
8 B and 64 KiB. Bandwidth: a window of 4 x 16 MiB. Multirail efficiency = aggregate bandwidth
/ (rails x the same library's one-rail bandwidth). The table shows medians over rounds.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

RAILS = [1, 2, 3]
RATE = "1gbit"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prefix", type=Path, required=True, help="goal install prefix (make install PREFIX=DIR)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=15, help="repetitions per test and run")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(C.REPO / "results" / "net"))
    ap.add_argument("-v", "--verbose", action="store_true")
    return ap.parse_args()


def run_one(tool: Path, name: str, rails: int, lib: str, exe: Path, reps: int) -> list[dict]:
    rail_ids = ",".join(str(r) for r in range(rails))
    names = ",".join(f"rail{r}" for r in range(rails))
    cmd = [tool, "mpirun", "--name", name, "--np", "2", "--per-host", "1", "--rails", rail_ids, "--"]
    if lib == "goal":
        cmd += ["-x", f"GOAL_RAILS={names}", exe, "--lib", "goal"]
    else:
        cmd += ["--mca", "btl", "tcp,self", exe, "--lib", "openmpi-tcp"]
    cmd += ["--reps", str(reps)]
    r = C.run(cmd, timeout=600)
    if not r.ok:
        raise C.BenchError(r.describe())
    rows = C.parse_rows(r.stdout)
    for x in rows:
        x["rails"] = rails
    return rows


def main() -> int:
    a = parse_args()
    C.VERBOSE = a.verbose
    if a.quick:
        a.rounds, a.reps = 1, 5
    import os
    if os.geteuid() != 0:
        C.die("bench/net.py needs root (network namespaces)")
    goal = C.find_goal(a.prefix)
    mpis = C.find_mpis()
    if "openmpi" not in mpis:
        C.die("Open MPI not found: run scripts/install-deps.sh")
    src = C.BENCH / "net_pp.c"
    gexe = C.BUILD / "net_pp.goal"
    gexe.parent.mkdir(parents=True, exist_ok=True)
    libdir = goal.prefix / "lib"
    C.run(["cc", *C.CFLAGS, "-DUSE_GOAL", *goal.cflags, "-o", gexe, src, *goal.libs, f"-Wl,-rpath,{libdir}"], check=True)
    oexe = C.build_mpi_program(mpis["openmpi"], src, C.BUILD / "net_pp.openmpi")
    tool = C.cluster_tool()
    name = f"nb{os.getpid() % 10000}"
    rows: list[dict] = []
    try:
        for rails in RAILS:
            C.run([tool, "down", "--name", name], timeout=60)
            C.run([tool, "up", "--name", name, "--hosts", "2", "--rails", str(rails), "--rate", RATE], timeout=120, check=True)
            for rnd in range(a.rounds):
                order = ["goal", "openmpi"] if rnd % 2 == 0 else ["openmpi", "goal"]
                for lib in order:
                    C.log(f"[{rails} rail(s), round {rnd + 1}/{a.rounds}] {lib} ...")
                    got = run_one(tool, name, rails, lib, gexe if lib == "goal" else oexe, a.reps)
                    for x in got:
                        x["round"] = rnd
                    rows += got
    finally:
        C.run([tool, "down", "--name", name], timeout=60)
    summary = summarize(rows)
    text = report(summary)
    print(text)
    out = Path(a.out)
    C.write_json(out.with_suffix(".json"), {"benchmark": "net", "machine": C.machine_info(), "rate_per_rail": RATE,
                                            "method": __doc__, "rows": rows, "summary": summary, "table": text})
    plot(summary, out.with_suffix(".png"))
    C.log(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.png')}")
    return 0


def summarize(rows: list[dict]) -> dict:
    """{lib: {rails: {"lat8", "lat64k", "gbps"}}}, medians over rounds."""
    s: dict = {}
    for lib in sorted({x["lib"] for x in rows}):
        s[lib] = {}
        for rails in RAILS:
            mine = [x for x in rows if x["lib"] == lib and x["rails"] == rails]
            if not mine:
                continue
            lat = lambda b: C.median(x["median_us"] for x in mine if x["test"] == "latency" and x["bytes"] == b)  # noqa: E731
            bw = C.median(x["median_gbps"] for x in mine if x["test"] == "bandwidth")
            s[lib][rails] = {"lat8_us": lat(8), "lat64k_us": lat(65536), "gbps": bw}
        one = s[lib].get(1, {}).get("gbps")
        for rails, v in s[lib].items():
            v["efficiency"] = v["gbps"] / (rails * one) if one else float("nan")
    return s


def report(s: dict) -> str:
    rows = []
    for rails in RAILS:
        g, o = s.get("goal", {}).get(rails), s.get("openmpi-tcp", {}).get(rails)
        if not g or not o:
            continue
        rows.append([rails, C.fmt_num(g["lat8_us"]), C.fmt_num(o["lat8_us"]), C.fmt_num(g["lat64k_us"]), C.fmt_num(o["lat64k_us"]),
                     C.fmt_num(g["gbps"]), C.fmt_num(o["gbps"]), f"{100 * g['efficiency']:.1f} %", f"{100 * o['efficiency']:.1f} %"])
    head = ["rails", "goal 8 B us", "ompi 8 B us", "goal 64K us", "ompi 64K us", "goal Gbit/s", "ompi Gbit/s",
            "goal eff.", "ompi eff."]
    return ("two emulated hosts, 1 Gbit/s per rail (tc tbf), one rank per host; latency = half round trip; "
            "bandwidth = 4 x 16 MiB window; efficiency = bandwidth / (rails x one-rail bandwidth)\n" + C.table(head, rows))


def plot(s: dict, path: Path) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        C.warn("matplotlib missing: no plot")
        return
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for lib, mark in (("goal", "o-"), ("openmpi-tcp", "s--")):
        if lib not in s:
            continue
        r = sorted(s[lib])
        ax[0].plot(r, [s[lib][x]["gbps"] for x in r], mark, label=lib)
        ax[1].bar([x + (-0.2 if lib == "goal" else 0.2) for x in r], [s[lib][x]["lat8_us"] for x in r], width=0.4, label=lib)
    ax[0].plot(RAILS, [0.957 * x for x in RAILS], ":", color="grey", label="rails x one tbf rail (TCP)")
    ax[0].set(xlabel="rails (1 Gbit/s each)", ylabel="Gbit/s (16 MiB messages)", title="bandwidth between two hosts", xticks=RAILS)
    ax[1].set(xlabel="rails", ylabel="us", title="8-byte latency (half round trip)", xticks=RAILS)
    for x in ax:
        x.legend()
        x.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except C.BenchError as e:
        C.die(str(e))
