#!/usr/bin/env python3
"""Arrays in goal's shared heap beside ordinary ones: rank.py (goal.empty's
numpy arrays against numpy's, goal's Python collectives) and, with --torch,
torch_rank.py (goal_torch.empty's tensors against torch's, torch.distributed
with the "goal" backend), under goalrun at each rank count; then
results.json and results.png.

    python3 run.py --prefix DIR [--ranks 2,4] [--sizes 65536,1048576] [--torch] [--out results]

DIR is a `make install PREFIX=DIR` whose Python package is installed
(scripts/install-python.sh), and with --torch goal_torch too (make torch).
"""
import argparse, json, pathlib, subprocess, sys

HERE = pathlib.Path(__file__).resolve().parent


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prefix", required=True, type=pathlib.Path)
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--sizes", default="65536,1048576")
    ap.add_argument("--blocks", type=int, default=20)
    ap.add_argument("--torch", action="store_true", help="also torch.distributed on goal_torch.empty's tensors")
    ap.add_argument("--out", default="results")
    a = ap.parse_args()
    rows = []
    scripts = ["rank.py"] + (["torch_rank.py"] if a.torch else [])
    for script in scripts:
        for n in [int(x) for x in a.ranks.split(",")]:
            cmd = [str(a.prefix / "bin" / "goalrun"), "-n", str(n), sys.executable, str(HERE / script), a.sizes, str(a.blocks)]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
            if p.returncode != 0:
                sys.exit(f"run.py: {' '.join(cmd)} failed:\n{p.stdout}{p.stderr}")
            rows += [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    out = pathlib.Path(a.out)
    out.with_suffix(".json").write_text(json.dumps(rows, indent=1))
    print("| API | ranks | collective | bytes | ordinary (us) | in the heap (us) | ratio |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        b, api = r["bytes"], r.get("api", "goal")
        plain, heap = r["median_us"].values()
        print("| %s | %d | %s | %s | %.1f | %.1f | %.2f |" % (api, r["ranks"], r["coll"], "%d KiB" % (b >> 10), plain, heap, heap / plain))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(13, 4.5))
    ratio = [list(r["median_us"].values())[1] / list(r["median_us"].values())[0] for r in rows]
    ax.bar(range(len(rows)), ratio, color=["tab:green" if r.get("api", "goal") == "goal" else "tab:orange" for r in rows])
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(["%s %s\n%d KiB, %d ranks" % (r.get("api", "goal"), r["coll"], r["bytes"] >> 10, r["ranks"]) for r in rows], fontsize=6)
    ax.set_ylabel("time from the heap / from ordinary memory")
    ax.set_title("goal (green: numpy, goal.empty) and torch.distributed on goal (orange: goal_torch.empty), median over blocks")
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=110)


if __name__ == "__main__":
    main()
