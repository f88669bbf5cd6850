#!/usr/bin/env python3
"""MPI_Alloc_mem under libgoal-mpi: the collective benchmark's MPI program
(bench/mpi_coll.c) run natively and with the layer preloaded, with its
buffers from malloc'd pages and from MPI_Alloc_mem (--alloc-mem), the four
configurations alternated in each round.

    python3 run.py --prefix DIR [--rounds 5] [--ranks 4] [--out results]

DIR is a `make install PREFIX=DIR`. Writes OUT.json (every run's medians and
the summary: the median over rounds, and each configuration over native
Open MPI with malloc) and OUT.png. Open MPI only: MPICH stalls for
milliseconds with more ranks than cores (docs/measurements/xchg-4ranks-2026-11-29/).
"""
import argparse, json, os, pathlib, statistics, subprocess, sys, tempfile

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]
CONFIGS = [("openmpi", False, False), ("openmpi", False, True), ("layer", True, False), ("layer", True, True)]


def name(layer, alloc):
    return ("layer" if layer else "openmpi") + (" + MPI_Alloc_mem" if alloc else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prefix", required=True, type=pathlib.Path)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--colls", default="alltoall,allgather")
    ap.add_argument("--sizes", default="65536,1048576")
    ap.add_argument("--variants", default="nonblocking,persistent")
    ap.add_argument("--out", default="results")
    a = ap.parse_args()
    lib = a.prefix.resolve() / "lib" / "libgoal-mpi-openmpi.so"
    if not lib.exists():
        sys.exit(f"run.py: {lib} is missing: make install PREFIX={a.prefix}")
    exe = pathlib.Path(tempfile.mkdtemp()) / "mpi_coll.openmpi"
    subprocess.run(["mpicc.openmpi", "-O2", "-o", str(exe), str(REPO / "bench" / "mpi_coll.c"), "-lm"], check=True)
    runs = []
    for r in range(a.rounds):
        order = CONFIGS if r % 2 == 0 else CONFIGS[::-1]
        for _, layer, alloc in order:
            cmd = ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-n", str(a.ranks)]
            if layer:
                cmd += ["-x", f"LD_PRELOAD={lib}", "-x", "GOAL_DEBUG=1"]
            cmd += [str(exe), "openmpi", "--pin", "--colls", a.colls, "--sizes", a.sizes, "--variants", a.variants,
                    "--budget-ms", "300"] + (["--alloc-mem"] if alloc else [])
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if p.returncode != 0:
                sys.exit(f"run.py: {' '.join(cmd)} failed:\n{p.stdout}{p.stderr}")
            if layer and alloc and "from goal's shared heap" not in p.stderr:
                sys.exit("run.py: the layer's report does not say MPI_Alloc_mem used goal's heap:\n" + p.stderr)
            for line in p.stdout.splitlines():
                if line.startswith("{") and '"coll"' in line:
                    d = json.loads(line)
                    runs.append({"round": r, "config": name(layer, alloc), "coll": d["coll"], "variant": d["variant"],
                                 "bytes": d["bytes"], "median_us": d["median_us"], "verified": d.get("verified")})
            print(f"round {r + 1}: {name(layer, alloc)} done", file=sys.stderr)
    keys = sorted({(x["coll"], x["variant"], x["bytes"]) for x in runs})
    summary = []
    for c, v, b in keys:
        med = {n: statistics.median([x["median_us"] for x in runs if (x["coll"], x["variant"], x["bytes"], x["config"]) == (c, v, b, n)])
               for n in (name(l, al) for _, l, al in CONFIGS)}
        base = med["openmpi"]
        summary.append({"coll": c, "variant": v, "bytes": b, "median_us": med, "over_openmpi": {n: m / base for n, m in med.items()}})
    out = pathlib.Path(a.out)
    out.with_suffix(".json").write_text(json.dumps({"ranks": a.ranks, "rounds": a.rounds, "runs": runs, "summary": summary}, indent=1))
    names = [name(l, al) for _, l, al in CONFIGS]
    print("%-10s %-12s %8s  " % ("coll", "variant", "bytes") + "  ".join("%24s" % n for n in names))
    for s in summary:
        print("%-10s %-12s %8d  " % (s["coll"], s["variant"], s["bytes"]) +
              "  ".join("%15.1f (%5.2fx)" % (s["median_us"][n], s["over_openmpi"][n]) for n in names))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("run.py: no matplotlib, no plot", file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(10, 4.5))
    w = 0.2
    for i, n in enumerate(names):
        ax.bar([k + (i - 1.5) * w for k in range(len(summary))], [s["over_openmpi"][n] for s in summary], w, label=n)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(range(len(summary)))
    ax.set_xticklabels(["%s %s\n%s" % (s["coll"], s["variant"][:5], "%d KiB" % (s["bytes"] >> 10)) for s in summary], fontsize=8)
    ax.set_ylabel("time / Open MPI's (malloc)")
    ax.set_title(f"{a.ranks} ranks on {os.cpu_count()} CPUs: MPI_Alloc_mem under libgoal-mpi (median of {a.rounds} rounds)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=110)
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.png')}", file=sys.stderr)


if __name__ == "__main__":
    main()
