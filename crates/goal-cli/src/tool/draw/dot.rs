//! A [`Model`] as Graphviz DOT (`dot -Tpng`): a cluster per rank, a box
//! per operation, requires edges plain, irequires edges dashed orange,
//! messages red (`class="msg"`) and not constraining the layout, and a
//! note for the folded ranks.

use std::fmt::Write as _;

use super::model::Model;
use super::op_text;

/// `s` as a DOT string, quoted.
fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The graph of `m`, titled `title`.
pub(crate) fn dot(m: &Model, title: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "digraph goal {{");
    let _ = writeln!(s, "  rankdir=LR; newrank=true; labelloc=t; fontname=\"monospace\";");
    let _ = writeln!(s, "  label={};", quoted(&format!("{title} ({} ranks, {} messages)", m.num_ranks, m.messages.len())));
    let _ = writeln!(s, "  node [shape=box, style=\"rounded,filled\", fontname=\"monospace\", fontsize=10];");
    for l in &m.lanes {
        let _ = writeln!(s, "  subgraph cluster_rank{} {{", l.rank);
        let _ = writeln!(s, "    label=\"rank {}\"; style=filled; color=\"#f4f6f8\";", l.rank);
        for (i, op) in l.ops.iter().enumerate() {
            let fill = match op.kind {
                goal_text::OpKind::Send { .. } => "#d6e6f5",
                goal_text::OpKind::Recv { .. } => "#d9f0dc",
                goal_text::OpKind::Calc { .. } => "#e8e8e8",
            };
            let _ = writeln!(s, "    r{}_{i} [label={}, tooltip={}, fillcolor=\"{fill}\"];", l.rank, quoted(&op_text(&op.kind)), quoted(&op.label));
        }
        for &(p, t, on_start) in &l.deps {
            let style = if on_start { " [class=\"ireq\", style=dashed, color=\"#e67e22\"]" } else { " [class=\"req\", color=\"#666666\"]" };
            let _ = writeln!(s, "    r{0}_{p} -> r{0}_{t}{style};", l.rank);
        }
        let _ = writeln!(s, "  }}");
    }
    for &((sl, so), (rl, ro)) in &m.messages {
        let _ = writeln!(s, "  r{}_{so} -> r{}_{ro} [class=\"msg\", color=\"#c0392b\", constraint=false];", m.lanes[sl].rank, m.lanes[rl].rank);
    }
    if let Some((lo, hi, ops)) = m.folded {
        let note = format!("ranks {lo} to {hi} folded: {} ranks, {ops} operations; {} message(s) to or from them not drawn", hi - lo + 1, m.folded_messages);
        let _ = writeln!(s, "  folded [shape=note, style=filled, fillcolor=\"#fdf2e9\", label={}];", quoted(&note));
    }
    let _ = writeln!(s, "}}");
    s
}
