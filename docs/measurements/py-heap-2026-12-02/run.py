#!/usr/bin/env python3
"""goal.empty's arrays beside numpy's in goal's Python collectives: rank.py
under goalrun at each rank count, then results.json and results.png.

    python3 run.py --prefix DIR [--ranks 2,4] [--sizes 65536,1048576] [--out results]

DIR is a `make install PREFIX=DIR` whose Python package is installed
(scripts/install-python.sh).
"""
import argparse, json, pathlib, subprocess, sys

HERE = pathlib.Path(__file__).resolve().parent


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prefix", required=True, type=pathlib.Path)
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--sizes", default="65536,1048576")
    ap.add_argument("--blocks", type=int, default=20)
    ap.add_argument("--out", default="results")
    a = ap.parse_args()
    rows = []
    for n in [int(x) for x in a.ranks.split(",")]:
        cmd = [str(a.prefix / "bin" / "goalrun"), "-n", str(n), sys.executable, str(HERE / "rank.py"), a.sizes, str(a.blocks)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            sys.exit(f"run.py: {' '.join(cmd)} failed:\n{p.stdout}{p.stderr}")
        rows += [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    out = pathlib.Path(a.out)
    out.with_suffix(".json").write_text(json.dumps(rows, indent=1))
    print("| ranks | collective | bytes | numpy's arrays (us) | goal.empty's (us) | ratio |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        b = r["bytes"]
        print("| %d | %s | %s | %.1f | %.1f | %.2f |" % (r["ranks"], r["coll"], "%d KiB" % (b >> 10), r["median_us"]["numpy"],
                                                     r["median_us"]["goal.empty"], r["heap_over_numpy"]))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.bar(range(len(rows)), [r["heap_over_numpy"] for r in rows], color="tab:green")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(["%s\n%d KiB, %d ranks" % (r["coll"], r["bytes"] >> 10, r["ranks"]) for r in rows], fontsize=7)
    ax.set_ylabel("time from goal.empty / from numpy")
    ax.set_title("goal's Python collectives: arrays in the shared heap against numpy's (median over blocks)")
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=110)


if __name__ == "__main__":
    main()
