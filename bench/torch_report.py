"""The summary, the text and the plots of `goal bench torch` (bench/torch.py), from its rows.

summarize(rows, a, setups) -> the compact tables OUT.json keeps as "summary" (and
bench/summarize.py copies, rounded): colls (goal and gloo medians and goal/gloo per setup,
operation and size), overlap, ddp, python (goal-py, mpi4py and the C references, and the
Python layer's cost per call), plus the notes they call for. report(doc) -> OUT.md, the
method and the tables in Markdown. plot(doc, out) -> OUT.png (overview) and OUT_colls.png.
"""
from __future__ import annotations

import statistics
from pathlib import Path

import common as C

BACKENDS = ("goal", "gloo")
PY_LIBS = ("goal-py", "goal-py-persistent", "mpi4py", "goal-c", "openmpi-c")


def table(key, columns, rows) -> dict:
    return {"key": key, "columns": columns, "rows": rows}


def ratio(x, y):
    return x / y if C.isnum(x) and C.isnum(y) and y > 0 else None


# ---------------------------------------------------------------------------------------
# summary

def summarize(rows: list[dict], a, setups: list[str]) -> dict:
    notes: list[str] = []
    out: dict = {}
    coll = {(r["setup"], r["op"], r["bytes"], r["backend"]): r for r in rows if r.get("test") == "coll"}
    ranks = {r["setup"]: r["ranks"] for r in rows if r.get("test") in ("coll", "overlap", "ddp")}
    crows, slower, missing = [], [], []
    for setup in setups:
        if "colls" not in getattr(a, "setup_parts", {}).get(setup, a.parts):
            continue
        for op in a.ops:
            for nbytes in ([0] if op == "barrier" else a.sizes):
                g, o = (coll.get((setup, op, nbytes, be)) for be in BACKENDS)
                gu, ou = (x["median_us"] if x else None for x in (g, o))
                if g is None or o is None:
                    missing.append(f"{setup} {op} {C.fmt_bytes(nbytes)}")
                rt = ratio(gu, ou)
                if rt is not None and rt >= 1:
                    slower.append(f"{setup} {op} {C.fmt_bytes(nbytes)} ({rt:.2f}x)")
                crows.append([setup, ranks.get(setup), op, nbytes, gu, ou, rt])
    if crows:
        out["colls"] = table(["setup", "ranks", "op", "bytes"], ["goal_us", "gloo_us", "goal_over_gloo"], crows)
        measured = [r for r in crows if r[6] is not None]
        out["goal_faster_everywhere"] = bool(measured) and not slower and not missing
        out["goal_over_gloo_median"] = statistics.median(r[6] for r in measured) if measured else None
        if slower:
            notes.append(f"goal NOT faster than Gloo at {len(slower)} point(s): {', '.join(slower)}")
        else:
            notes.append(f"goal faster than Gloo at all {len(measured)} measured point(s)")
        if missing:
            notes.append(f"no time of both backends at {len(missing)} point(s): {', '.join(missing[:12])}"
                         + (" ..." if len(missing) > 12 else ""))
    ov = [r for r in rows if r.get("test") == "overlap"]
    if ov:
        out["overlap"] = table(["setup", "ranks", "bytes", "backend"],
                               ["t_pure_us", "t_cpu_us", "t_ovrl_us", "overlap_pct", "products"],
                               [[r["setup"], r["ranks"], r["bytes"], r["backend"], r["t_pure_us"], r["t_cpu_us"],
                                 r["t_ovrl_us"], r["overlap_pct"], r["products"]] for r in ov])
    dd = {(r["setup"], r["backend"]): r for r in rows if r.get("test") == "ddp"}
    drows = []
    for setup in setups:
        g, o = dd.get((setup, "goal")), dd.get((setup, "gloo"))
        if g or o:
            gm, om = (x["step_ms"] if x else None for x in (g, o))
            agree = (g or o)["losses_agree"]
            drows.append([setup, ranks.get(setup), gm, om, ratio(gm, om), agree, (g or o)["params"]])
            if not agree:
                notes.append(f"ddp {setup}: the losses of goal and Gloo differ (they should agree step by step)")
    if drows:
        out["ddp"] = table(["setup", "ranks"], ["goal_ms", "gloo_ms", "goal_over_gloo", "losses_agree", "params"],
                           drows)
        out["ddp_model"] = next(r["model"] for r in rows if r.get("test") == "ddp")
    py = python_summary(rows, a)
    if py:
        notes += py.pop("python_notes")
        out.update(py)
    out["notes"] = notes
    return out


def python_summary(rows: list[dict], a) -> dict:
    """Medians over rounds per (lib, dtype, bytes); the comparison at float32 and the Python
    layer's cost at float64 (the C programs' type, the same bytes)."""
    per: dict = {}
    for r in rows:
        if r.get("test") == "pyallreduce":
            per.setdefault((r["lib"], r["dtype"], r["bytes"]), []).append(r["median_us"])
    if not per:
        return {}
    med = {k: statistics.median(v) for k, v in per.items()}
    f32, f64 = [], []
    for b in a.py_sizes:
        g, gp, m = (med.get((lib, "float32", b)) for lib in ("goal-py", "goal-py-persistent", "mpi4py"))
        f32.append([b, g, gp, m, ratio(g, m)])
        g, gp, m, gc, oc = (med.get((lib, "float64", b)) for lib in PY_LIBS)
        sub = lambda x, y: x - y if C.isnum(x) and C.isnum(y) else None  # noqa: E731
        f64.append([b, g, gp, m, gc, oc, sub(g, gc), sub(gp, gc), sub(m, oc)])
    neg = [f"{C.fmt_bytes(r[0])} {name}" for r in f64 for name, x in
           (("goal-py", r[6]), ("goal-py persistent", r[7]), ("mpi4py", r[8])) if C.isnum(x) and x < 0]
    notes = [f"python: the C reference was slower than the Python call at {', '.join(neg)}: a negative "
             "layer cost is noise (or a machine too busy to measure on); measure again"] if neg else []
    return {
        "python_notes": notes,
        "python": table(["bytes"], ["goal_py_us", "goal_py_persistent_us", "mpi4py_us", "goal_py_over_mpi4py"], f32),
        "python_layer": table(["bytes"], ["goal_py_us", "goal_py_persistent_us", "mpi4py_us", "goal_c_us",
                                          "openmpi_c_us", "goal_py_layer_us", "goal_py_persistent_layer_us",
                                          "mpi4py_layer_us"], f64),
    }


# ---------------------------------------------------------------------------------------
# text

def md_table(headers, rows) -> str:
    cells = [[("-" if c is None else str(c)) for c in r] for r in rows]
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    return "\n".join(out + ["| " + " | ".join(r) + " |" for r in cells])


def ratio_cell(x) -> str:
    return "-" if x is None else f"{x:.3f}" if x < 0.1 else f"{x:.2f}"


METHOD = """\
Method. Each rank is one process holding two process groups over the same ranks: the default
group on backend "goal" (goal_torch) and `dist.new_group(backend="gloo")`; every point is
measured on both, which goes first alternating round by round, so that noise hits both alike.
float32; size = one rank's block (the tensor of all_reduce, broadcast, reduce; each rank's
block of all_gather_into_tensor, gather, scatter, reduce_scatter_tensor, all_to_all_single;
the message of send/recv). Every point is checked once with known data on each backend before
it is timed. Every rank times each blocking call; before each call of broadcast, gather,
scatter, reduce and send/recv all ranks meet in a shared-memory barrier of the benchmark's own
(the same for both backends); times are averaged over the ranks per iteration, and the median
over all iterations of all rounds is the value. send/recv: a ping-pong between ranks 2k and
2k+1, half the round trip. Ranks pinned (rank r to CPU r mod n), torch on one thread.
Overlap (IMB-NBC): t_pure = all_reduce(async_op=True) + wait; t_cpu = k products of two
MxM float32 matrices, k calibrated so that they take t_pure (the slowest rank's); t_ovrl =
start, the k products, wait, with no call into the backend in between; each the median over
iterations per rank, then the maximum over ranks; overlap = 100 max(0, min(1, (t_pure + t_cpu -
t_ovrl) / min(t_pure, t_cpu))) %. DDP: torch's DistributedDataParallel (default buckets) over
each group from the same weights, one fixed synthetic batch per rank, SGD; per step (forward,
backward with DDP's asynchronous bucket all-reduces, optimizer step) the mean over ranks, the
median over the steps after warm-up.
Python: numpy arrays, SUM from one array into another, 2 ranks on this machine: goal-py's
one-shot `goal.allreduce(x, y)` (its group's cache of compiled schedules) and persistent
`goal.allreduce_init(x, y)()`, under goalrun; mpi4py's `comm.Allreduce(x, y, op=MPI.SUM)` under
Open MPI's mpirun; every rank times each call back to back, mean over ranks per iteration,
median over iterations, median over rounds. The Python layer's own cost per call is the Python
call's time minus the same allreduce issued from C with the same library, method, size and
element type: bench/goal_coll.c (GOAL_Allreduce_init with AUTO, GOAL_Run + GOAL_Wait) for goal,
bench/mpi_coll.c (blocking MPI_Allreduce) for Open MPI, both float64 (their type), so the
Python side is measured in float64 too for the subtraction; the float32 table is the
comparison."""


def report(doc: dict) -> str:
    s, a = doc["summary"], doc["args"]
    m = doc["machine"]
    lines = ["# goal bench torch", "",
             f"{m.get('cpu_model', '')}, {m.get('nproc')} CPUs, {m.get('time_utc', '')}; "
             + ", ".join(f"{k} {v.get('version', '')}" for k, v in doc["libraries"].items() if isinstance(v, dict))
             + f"; {doc['elapsed_s'] / 60:.1f} min" + (" (--quick)" if a.get("quick") else ""), "",
             METHOD, ""]
    if "colls" in s:
        rows = s["colls"]["rows"]
        for setup in dict.fromkeys(r[0] for r in rows):
            mine = [r for r in rows if r[0] == setup]
            sizes = sorted({r[3] for r in mine if r[2] != "barrier"})
            lines += [f"## Collectives, {setup}: {doc['setups'].get(setup, '')}", "",
                      "Median time in us, goal | gloo, and goal/gloo below (under 1: goal faster).", ""]
            by = {(r[2], r[3]): r for r in mine}
            ops = list(dict.fromkeys(r[2] for r in mine))
            head = ["op"] + [f"{C.fmt_bytes(b)} goal \\| gloo" for b in sizes]
            body = []
            for op in ops:
                if op == "barrier":
                    r = by.get((op, 0))
                    body.append([op + " (no data)"] + [f"{C.fmt_num(r[4])} \\| {C.fmt_num(r[5])}" if r else "-"]
                                + [""] * (len(sizes) - 1))
                    continue
                body.append([op] + [f"{C.fmt_num(by[(op, b)][4])} \\| {C.fmt_num(by[(op, b)][5])}"
                                    if (op, b) in by else "-" for b in sizes])
            lines += [md_table(head, body), ""]
            body = [[op] + ([ratio_cell(by[(op, 0)][6])] + [""] * (len(sizes) - 1) if op == "barrier" else
                            [ratio_cell(by[(op, b)][6]) if (op, b) in by else "-" for b in sizes]) for op in ops]
            lines += [md_table(["goal/gloo"] + [C.fmt_bytes(b) for b in sizes], body), ""]
        lines += [f"goal faster than Gloo at every point: {'yes' if s.get('goal_faster_everywhere') else 'NO'}; "
                  f"median goal/gloo {ratio_cell(s.get('goal_over_gloo_median'))}.", ""]
    if "overlap" in s:
        lines += ["## all_reduce(async_op=True) overlap (IMB-NBC)", "",
                  md_table(["setup", "bytes", "backend", "t_pure us", "t_cpu us", "t_ovrl us", "overlap %", "products"],
                           [[r[0], C.fmt_bytes(r[2]), r[3], C.fmt_num(r[4]), C.fmt_num(r[5]), C.fmt_num(r[6]),
                             f"{r[7]:.0f}", r[8]] for r in s["overlap"]["rows"]]), ""]
    if "ddp" in s:
        lines += [f"## DDP time per step ({s.get('ddp_model', '')})", "",
                  md_table(["setup", "ranks", "goal ms", "gloo ms", "goal/gloo", "losses agree", "parameters"],
                           [[r[0], r[1], C.fmt_num(r[2]), C.fmt_num(r[3]), ratio_cell(r[4]),
                             "yes" if r[5] else "NO", f"{r[6]:,}"] for r in s["ddp"]["rows"]]), ""]
    if "python" in s:
        lines += ["## Python allreduce, numpy float32, 2 ranks (us per call)", "",
                  md_table(["bytes", "goal-py one-shot", "goal-py persistent", "mpi4py (Open MPI)", "goal-py/mpi4py"],
                           [[C.fmt_bytes(r[0]), C.fmt_num(r[1]), C.fmt_num(r[2]), C.fmt_num(r[3]), ratio_cell(r[4])]
                            for r in s["python"]["rows"]]), "",
                  "The Python layer's own cost per call: float64 (the C programs' type), us; layer = Python - C.", "",
                  md_table(["bytes", "goal-py", "goal-py pers.", "mpi4py", "goal C", "Open MPI C",
                            "goal-py layer", "goal-py pers. layer", "mpi4py layer"],
                           [[C.fmt_bytes(r[0])] + [C.fmt_num(x) for x in r[1:]] for r in s["python_layer"]["rows"]]),
                  ""]
    if doc["notes"]:
        lines += ["## Notes", ""] + [f"- {n}" for n in doc["notes"]] + [""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# plots

BE_STYLE = {"goal": dict(color="#d62728", marker="o"), "gloo": dict(color="#9467bd", marker="s")}


def plot(doc: dict, out: Path) -> None:
    plt = C.pyplot()
    if plt is None:
        return
    s = doc["summary"]
    rows = s.get("colls", {}).get("rows", [])
    setups = list(dict.fromkeys(r[0] for r in rows)) or list(doc["setups"])
    ncol = max(3, len(setups))
    fig, axes = plt.subplots(2, ncol, figsize=(5.2 * ncol, 9.5), squeeze=False)
    cmap = plt.get_cmap("tab10")
    ops = list(dict.fromkeys(r[2] for r in rows))
    for i, setup in enumerate(setups):
        ax = axes[0][i]
        mine = [r for r in rows if r[0] == setup and r[6]]
        for j, op in enumerate(ops):
            pts = sorted((r[3], 1 / r[6]) for r in mine if r[2] == op and r[3] > 0)
            if pts:
                ax.plot(*zip(*pts), marker="o", ms=4, color=cmap(j % 10), label=op)
        bar = next((r for r in mine if r[2] == "barrier"), None)
        if bar:
            ax.axhline(1 / bar[6], color=cmap(ops.index("barrier") % 10), ls=":", label="barrier (no data)")
        ax.axhline(1, color="k", lw=0.8)
        ax.set_yscale("log")
        C.bytes_axis(ax, sorted({r[3] for r in mine if r[3] > 0}) or [8], min_step=2)
        ax.set_ylabel("gloo time / goal time (above 1: goal faster)")
        ax.set_title(f"{setup}: {doc['setups'].get(setup, '')}", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        if i == 0:
            ax.legend(fontsize=7)
    for i in range(len(setups), ncol):
        axes[0][i].axis("off")
    grouped_bars(axes[1][0], s.get("overlap"), lambda r: f"{r[0]}\n{C.fmt_bytes_short(r[2])}", 3, 7,
                 "all_reduce async overlap [%] (IMB)", log=False)
    if s.get("overlap"):
        axes[1][0].set_ylim(0, 105)
    grouped_bars(axes[1][1], s.get("ddp"), lambda r: r[0], None, None, "DDP time per step [ms]", log=False,
                 wide=("goal", 2, "gloo", 3))
    py = s.get("python")
    if py:
        ax = axes[1][2]
        libs = [("goal-py one-shot", 1, "#d62728"), ("goal-py persistent", 2, "#ff7f0e"), ("mpi4py", 3, "#1f77b4")]
        w = 0.8 / len(libs)
        for k, (name, col, color) in enumerate(libs):
            xs = [i + k * w for i in range(len(py["rows"]))]
            vals = [r[col] if C.isnum(r[col]) else 0 for r in py["rows"]]
            ax.bar(xs, vals, w, label=name, color=color)
        ax.set_xticks([i + w for i in range(len(py["rows"]))])
        ax.set_xticklabels([C.fmt_bytes(r[0]) for r in py["rows"]])
        ax.set_yscale("log")
        ax.set_ylabel("us per call (log)")
        layer = s.get("python_layer", {}).get("rows", [])
        lay = layer[0] if layer else None
        said = [f"{n} {C.fmt_num(lay[k])} us" for n, k in (("goal-py", 6), ("mpi4py", 8)) if lay and C.isnum(lay[k])]
        extra = f"\nPython layer at {C.fmt_bytes(lay[0])}: {', '.join(said)}" if said else ""
        ax.set_title("allreduce from Python, numpy float32, 2 ranks" + extra, fontsize=10)
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    else:
        axes[1][2].axis("off")
    for i in range(3, ncol):
        axes[1][i].axis("off")
    fig.suptitle("goal as a torch.distributed backend beside Gloo" + (" (--quick)" if doc["args"].get("quick") else ""))
    fig.tight_layout()
    fig.savefig(f"{out}.png", dpi=110)
    plt.close(fig)
    plot_colls(plt, rows, setups, doc, out)


def grouped_bars(ax, t, label, be_col, val_col, title, log, wide=None):
    """Bars of goal beside gloo: rows of table t either one per backend (be_col names it,
    val_col the value) or one per group with both (wide = (goal, its column, gloo, its column))."""
    if not t or not t["rows"]:
        ax.axis("off")
        return
    groups: dict = {}
    for r in t["rows"]:
        if wide:
            groups[label(r)] = {wide[0]: r[wide[1]], wide[2]: r[wide[3]]}
        else:
            groups.setdefault(label(r), {})[r[be_col]] = r[val_col]
    names = list(groups)
    for k, be in enumerate(BACKENDS):
        vals = [groups[n].get(be) or 0 for n in names]
        xs = [i + k * 0.4 for i in range(len(names))]
        ax.bar(xs, vals, 0.4, label=be, color=BE_STYLE[be]["color"])
        for x, v in zip(xs, vals):
            ax.text(x, v, C.fmt_num(v), ha="center", va="bottom", fontsize=7)
    ax.set_xticks([i + 0.2 for i in range(len(names))])
    ax.set_xticklabels(names, fontsize=8)
    if log:
        ax.set_yscale("log")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)


def plot_colls(plt, rows, setups, doc, out: Path) -> None:
    import matplotlib.ticker as mt
    ops = list(dict.fromkeys(r[2] for r in rows))
    if not ops:
        return
    fig, axes = plt.subplots(len(setups), len(ops), figsize=(2.9 * len(ops), 2.8 * len(setups)), squeeze=False)
    for i, setup in enumerate(setups):
        for j, op in enumerate(ops):
            ax = axes[i][j]
            mine = sorted((r for r in rows if r[0] == setup and r[2] == op), key=lambda r: r[3])
            if op == "barrier":
                vals = [mine[0][4] or 0, mine[0][5] or 0] if mine else [0, 0]
                ax.bar([0, 1], vals, color=[BE_STYLE[b]["color"] for b in BACKENDS])
                ax.set_xticks([0, 1])
                ax.set_xticklabels(BACKENDS)
            else:
                for be, col in zip(BACKENDS, (4, 5)):
                    pts = [(r[3], r[col]) for r in mine if C.isnum(r[col])]
                    if pts:
                        ax.plot(*zip(*pts), label=be, ms=4, **BE_STYLE[be])
                ax.set_xscale("log", base=2)
                ax.set_yscale("log")
                ax.yaxis.set_major_locator(mt.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
                ax.yaxis.set_major_formatter(mt.FuncFormatter(lambda v, _: f"{v:g}"))
                ax.yaxis.set_minor_formatter(mt.NullFormatter())
                if mine:
                    C.bytes_axis(ax, [r[3] for r in mine], min_step=8)
                    ax.set_xlabel("")
            ax.set_title(f"{op}" + (f"\n{setup}" if j == 0 else ""), fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(True, which="major", alpha=0.3)
            if j == 0:
                ax.set_ylabel("median time [us]", fontsize=8)
            if i == 0 and j == 1:
                ax.legend(fontsize=7)
    fig.suptitle("every collective: goal and Gloo, time against one rank's block size (log-log)")
    fig.tight_layout()
    fig.savefig(f"{out}_colls.png", dpi=100)
    plt.close(fig)
