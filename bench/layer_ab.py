#!/usr/bin/env python3
"""Open MPI natively and under libgoal-mpi, in configurations alternated within each round.

The collective benchmark's MPI program (bench/mpi_coll.c), unmodified, run
with mpirun.openmpi in each configuration given by --config LABEL=SPEC.
SPEC's words: `native` or `layer` (LD_PRELOAD of PREFIX's
libgoal-mpi-openmpi.so) first, then any K=V (an environment variable for
the ranks) and `--alloc-mem` (buffers from MPI_Alloc_mem). The first
configuration is the base of the ratios. Example (docs/measurements/mpi-poke-2026-12-02/):

    python3 bench/layer_ab.py --prefix DIR --out results \\
        --config openmpi=native --config "layer, poke every batch=layer GOAL_MPI_POKE_US=0" \\
        --config "layer, poke every 20 us=layer"

Writes OUT.json (each run's medians; per point the median over rounds and
its ratio to the first configuration's) and OUT.png, and prints the table.
Open MPI only: MPICH stalls for milliseconds with more ranks than cores
(docs/measurements/xchg-4ranks-2026-11-29/).
"""
import argparse, json, os, pathlib, statistics, subprocess, sys, tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]


def parse_config(text):
    label, _, spec = text.partition("=")
    words = spec.split()
    if not label or not words or words[0] not in ("native", "layer"):
        raise argparse.ArgumentTypeError(f"--config {text!r}: want LABEL=native|layer [K=V ...] [--alloc-mem]")
    env = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    extra = [w for w in words[1:] if "=" not in w]
    if any(w != "--alloc-mem" for w in extra):
        raise argparse.ArgumentTypeError(f"--config {text!r}: unknown word in {extra}")
    return {"label": label, "layer": words[0] == "layer", "env": env, "args": extra}


def size_label(b):
    return "%d B" % b if b < 1024 else "%d KiB" % (b >> 10)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog="\n".join(__doc__.splitlines()[1:]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prefix", required=True, type=pathlib.Path, help="goal install prefix (make install PREFIX=DIR)")
    ap.add_argument("--config", action="append", type=parse_config, required=True, help="LABEL=SPEC (repeatable)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--colls", default="barrier,allreduce,allgather,alltoall,bcast")
    ap.add_argument("--sizes", default="8,65536")
    ap.add_argument("--variants", default="nonblocking,persistent")
    ap.add_argument("--out", default="results/layer_ab", help="output path without extension")
    a = ap.parse_args()
    lib = a.prefix.resolve() / "lib" / "libgoal-mpi-openmpi.so"
    if any(c["layer"] for c in a.config) and not lib.exists():
        sys.exit(f"layer_ab.py: {lib} is missing: make install PREFIX={a.prefix}")
    exe = pathlib.Path(tempfile.mkdtemp()) / "mpi_coll.openmpi"
    subprocess.run(["mpicc.openmpi", "-O2", "-o", str(exe), str(REPO / "bench" / "mpi_coll.c"), "-lm"], check=True)
    runs = []
    for r in range(a.rounds):
        for c in (a.config if r % 2 == 0 else a.config[::-1]):
            cmd = ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-n", str(a.ranks)]
            env = dict(c["env"], **({"LD_PRELOAD": str(lib), "GOAL_DEBUG": "1"} if c["layer"] else {}))
            for k, v in env.items():
                cmd += ["-x", f"{k}={v}"]
            cmd += [str(exe), "openmpi", "--pin", "--colls", a.colls, "--sizes", a.sizes, "--variants", a.variants,
                    "--budget-ms", "300"] + c["args"]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if p.returncode != 0:
                sys.exit(f"layer_ab.py: {' '.join(cmd)} failed:\n{p.stdout}{p.stderr}")
            if c["layer"] and "--alloc-mem" in c["args"] and "from goal's shared heap" not in p.stderr:
                sys.exit("layer_ab.py: the layer's report does not say MPI_Alloc_mem used goal's heap:\n" + p.stderr)
            for line in p.stdout.splitlines():
                if line.startswith("{") and '"coll"' in line:
                    d = json.loads(line)
                    runs.append({"round": r, "config": c["label"], "coll": d["coll"], "variant": d["variant"],
                                 "bytes": d["bytes"], "median_us": d["median_us"]})
            print(f"round {r + 1}: {c['label']} done", file=sys.stderr)
    names = [c["label"] for c in a.config]
    summary = []
    for key in sorted({(x["coll"], x["variant"], x["bytes"]) for x in runs}):
        med = {}
        for n in names:
            xs = [x["median_us"] for x in runs if (x["coll"], x["variant"], x["bytes"]) == key and x["config"] == n]
            if xs:
                med[n] = statistics.median(xs)
        if names[0] in med:
            summary.append({"coll": key[0], "variant": key[1], "bytes": key[2], "median_us": med,
                            "ratio": {n: m / med[names[0]] for n, m in med.items()}})
    out = pathlib.Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"ranks": a.ranks, "rounds": a.rounds, "base": names[0],
                                                    "runs": runs, "summary": summary}, indent=1))
    print("| collective | variant | bytes | " + " | ".join(names) + " |")
    print("|---|---|---|" + "---|" * len(names))
    for s in summary:
        cells = ["%.2f" % s["median_us"][names[0]]] + ["%.2f (%.2f)" % (s["median_us"][n], s["ratio"][n]) if n in s["median_us"] else "-"
                                                         for n in names[1:]]
        print("| %s | %s | %s | %s |" % (s["coll"], s["variant"], size_label(s["bytes"]), " | ".join(cells)))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("layer_ab.py: no matplotlib, no plot", file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(max(8, 0.7 * len(summary)), 4.5))
    w = 0.8 / len(names)
    for i, n in enumerate(names):
        ax.bar([k + (i - (len(names) - 1) / 2) * w for k in range(len(summary))], [s["ratio"].get(n, 0) for s in summary], w, label=n)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(range(len(summary)))
    ax.set_xticklabels(["%s\n%s %s" % (s["coll"], s["variant"][:5], size_label(s["bytes"])) for s in summary], fontsize=7)
    ax.set_ylabel(f"time / {names[0]}'s")
    ax.set_title(f"{a.ranks} ranks on {os.cpu_count()} CPUs, Open MPI with and without libgoal-mpi (median of {a.rounds} rounds)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=110)
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.png')}", file=sys.stderr)


if __name__ == "__main__":
    main()
