//! A [`Model`] as SVG: ranks as horizontal lanes, operations as boxes in
//! their columns (sends blue, receives green, calcs grey, each with its
//! size and peer), requires edges as grey arrows and irequires edges as
//! dashed orange ones within a lane, messages as red curves from a send to
//! its receive, and a band with a note where ranks are folded.
//!
//! The elements carry classes a reader (or a test) can count: `lane`
//! (with `data-rank`), `op`, `req`, `ireq`, `msg`, `folded`.

use std::fmt::Write as _;

use super::model::{At, Model};
use super::{op_text, xml_escape};

/// Geometry, in pixels.
const LEFT: u32 = 96;
const TOP: u32 = 64;
const COL_W: u32 = 132;
const BOX_W: u32 = 108;
const BOX_H: u32 = 24;
const ROW_H: u32 = 34;
const PAD: u32 = 10;
const FOLD_H: u32 = 40;

/// Where each lane starts (y) and its height, and where the folded band
/// is (after which lane), in drawing order.
struct Rows {
    y: Vec<u32>,
    h: Vec<u32>,
    fold_after: Option<usize>,
    bottom: u32,
}

fn rows(m: &Model) -> Rows {
    let fold_after = m.folded.and_then(|(lo, _, _)| m.lanes.iter().position(|l| l.rank > lo)).map(|i| i.saturating_sub(1));
    let mut y = TOP;
    let (mut ys, mut hs) = (Vec::new(), Vec::new());
    for (i, l) in m.lanes.iter().enumerate() {
        let h = l.rows * ROW_H + 2 * PAD - (ROW_H - BOX_H);
        ys.push(y);
        hs.push(h);
        y += h;
        if fold_after == Some(i) {
            y += FOLD_H;
        }
    }
    Rows { y: ys, h: hs, fold_after, bottom: y }
}

/// The box of operation `at`: (x, y).
fn place(m: &Model, r: &Rows, (li, oi): At) -> (u32, u32) {
    let op = &m.lanes[li].ops[oi];
    (LEFT + op.col * COL_W + (COL_W - BOX_W) / 2, r.y[li] + PAD + op.row * ROW_H)
}

/// The drawing of `m`, titled `title`.
pub(crate) fn svg(m: &Model, title: &str) -> String {
    let r = rows(m);
    // (At least as wide as the title and the key.)
    let width = (LEFT + m.cols.max(1) * COL_W + 24).max(760);
    let height = r.bottom + 16;
    let mut s = String::new();
    let _ = writeln!(s, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="DejaVu Sans Mono, monospace" font-size="11">"#
    );
    let _ = writeln!(
        s,
        r##"<defs><marker id="a-req" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#666"/></marker><marker id="a-ireq" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#e67e22"/></marker><marker id="a-msg" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#c0392b"/></marker></defs>"##
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let ops: usize = m.lanes.iter().map(|l| l.ops.len()).sum();
    let _ = writeln!(
        s,
        r#"<text x="12" y="20" font-size="14" font-weight="bold">{} ({} ranks, {} operations drawn, {} messages)</text>"#,
        xml_escape(title),
        m.num_ranks,
        ops,
        m.messages.len()
    );
    legend(&mut s);
    for (i, l) in m.lanes.iter().enumerate() {
        let fill = if i % 2 == 0 { "#f4f6f8" } else { "#ffffff" };
        let _ = writeln!(s, r#"<g class="lane" data-rank="{}">"#, l.rank);
        let _ = writeln!(s, r#"<rect x="0" y="{}" width="{width}" height="{}" fill="{fill}"/>"#, r.y[i], r.h[i]);
        let _ = writeln!(s, r#"<text x="12" y="{}" font-weight="bold">rank {}</text>"#, r.y[i] + r.h[i] / 2 + 4, l.rank);
        let _ = writeln!(s, "</g>");
    }
    if let (Some(after), Some((lo, hi, n_ops))) = (r.fold_after, m.folded) {
        let y = r.y[after] + r.h[after];
        let _ = writeln!(
            s,
            r##"<g class="folded"><rect x="0" y="{y}" width="{width}" height="{FOLD_H}" fill="#fdf2e9"/><text x="12" y="{}">ranks {lo} to {hi} folded: {} ranks, {n_ops} operations; {} message(s) to or from them not drawn (--max-ranks draws more)</text></g>"##,
            y + FOLD_H / 2 + 4,
            hi - lo + 1,
            m.folded_messages
        );
    }
    for (li, l) in m.lanes.iter().enumerate() {
        for &(p, t, on_start) in &l.deps {
            let (px, py) = place(m, &r, (li, p as usize));
            let (tx, ty) = place(m, &r, (li, t as usize));
            // An irequires edge leaves its prerequisite's start (left), a
            // requires edge its end (right).
            let (class, x0, colour, dash) = if on_start { ("ireq", px + 6, "#e67e22", r#" stroke-dasharray="4 3""#) } else { ("req", px + BOX_W, "#666", "") };
            let (y0, y1) = (py + BOX_H / 2, ty + BOX_H / 2);
            // An edge past a column would run through the boxes between:
            // it arcs over them, through the gap above the row.
            let lift = if l.ops[t as usize].col > l.ops[p as usize].col + 1 { BOX_H / 2 + PAD - 2 } else { 0 };
            let _ = writeln!(
                s,
                r#"<path class="{class}" d="M{x0},{y0} C{},{} {},{} {tx},{y1}" fill="none" stroke="{colour}"{dash} stroke-width="1.2" marker-end="url(#a-{class})"/>"#,
                x0 + 20,
                y0 - 2 * lift,
                tx.saturating_sub(20),
                y1 - 2 * lift
            );
        }
    }
    for (li, l) in m.lanes.iter().enumerate() {
        for (oi, op) in l.ops.iter().enumerate() {
            let (x, y) = place(m, &r, (li, oi));
            let (fill, stroke) = match op.kind {
                goal_text::OpKind::Send { .. } => ("#d6e6f5", "#2e6da4"),
                goal_text::OpKind::Recv { .. } => ("#d9f0dc", "#2e8b57"),
                goal_text::OpKind::Calc { .. } => ("#e8e8e8", "#777"),
            };
            let text = xml_escape(&op_text(&op.kind));
            let _ = writeln!(
                s,
                r#"<g class="op"><title>rank {} {}: {text}</title><rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="4" fill="{fill}" stroke="{stroke}"/><text x="{}" y="{}" text-anchor="middle">{text}</text></g>"#,
                l.rank,
                xml_escape(&op.label),
                x + BOX_W / 2,
                y + BOX_H / 2 + 4
            );
        }
    }
    for &(send, recv) in &m.messages {
        let (sx, sy) = place(m, &r, send);
        let (rx, ry) = place(m, &r, recv);
        let (x0, y0) = (sx + BOX_W, sy + BOX_H / 2);
        let (x1, y1) = (rx, ry + BOX_H / 2);
        let bend = ((x1 as i64 - x0 as i64).abs() / 3).max(24);
        let _ = writeln!(
            s,
            r##"<path class="msg" d="M{x0},{y0} C{},{y0} {},{y1} {x1},{y1}" fill="none" stroke="#c0392b" stroke-width="1.4" opacity="0.85" marker-end="url(#a-msg)"/>"##,
            x0 as i64 + bend,
            x1 as i64 - bend
        );
    }
    let _ = writeln!(s, "</svg>");
    s
}

/// The key under the title.
fn legend(s: &mut String) {
    let y = 40;
    let items: [(&str, &str); 3] = [("#d6e6f5", "send"), ("#d9f0dc", "recv"), ("#e8e8e8", "calc")];
    let mut x = 12;
    for (fill, name) in items {
        let _ = write!(s, r##"<rect x="{x}" y="{}" width="14" height="12" rx="2" fill="{fill}" stroke="#777"/><text x="{}" y="{}">{name}</text>"##, y - 10, x + 18, y);
        x += 70;
    }
    let lines: [(&str, &str, &str); 3] = [("#666", "", "requires"), ("#e67e22", " stroke-dasharray=\"4 3\"", "irequires (after the start)"), ("#c0392b", "", "message")];
    for (colour, dash, name) in lines {
        let _ = write!(s, r#"<line x1="{x}" y1="{}" x2="{}" y2="{}" stroke="{colour}" stroke-width="1.4"{dash}/><text x="{}" y="{y}">{name}</text>"#, y - 4, x + 24, y - 4, x + 30);
        x += 40 + 8 * name.len() as u32;
    }
    let _ = writeln!(s);
}
