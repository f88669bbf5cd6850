//! What `goal sim` prints: LogGOPSim's lines, and the same as JSON.
//!
//! ```text
//! LogGP network backend; size: 4 (1 CPUs, 1 NICs); L=2500, o=1500 g=1000, G=6, O=0, P=4, S=65535
//! PERFORMANCE: Processes: 4 <TAB> Events: 40 <TAB> Time: 0 s <TAB> Speed: 1.2e7 ev/s
//! Times: 
//! Host 0: 20000
//! ...
//! Maximum finishing time at host 3: 20000 (2e-05 s)
//! ```
//!
//! LogGOPSim prints the `Host` lines only up to 16 hosts and the maximum
//! line only above; goal prints both always (`-b`: the maximum only).

use std::fmt::Write;

use goal_sim::{Outcome, Params, Program};

/// One simulation, for printing.
pub(super) struct Run<'a> {
    pub name: &'a str,
    pub program: &'a Program,
    pub prm: Params,
    pub out: &'a Outcome,
    pub read_seconds: f64,
    pub sim_seconds: f64,
    pub peak_rss: Option<u64>,
    /// Names of operations (their labels), where known.
    pub names: goal_sim::report::Names<'a>,
}

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o
}

impl Run<'_> {
    fn describe(&self, rank: u32, op: u32) -> String {
        goal_sim::report::describe(self.program, rank, op, (self.names)(rank, op).as_deref())
    }

    /// LogGOPSim's output.
    pub fn text(&self, batch: bool, critical: bool) -> String {
        let (p, prm, out) = (self.program, self.prm, self.out);
        let mut t = String::new();
        let n = p.num_ranks();
        let _ = writeln!(
            t,
            "LogGP network backend; size: {n} ({} CPUs, {} NICs); L={}, o={} g={}, G={}, O={}, P={n}, S={}",
            p.cpus(),
            p.nics(),
            prm.l,
            prm.o,
            prm.g,
            ns_of_ps(prm.big_g_ps),
            ns_of_ps(prm.big_o_ps),
            prm.s
        );
        let speed = out.events as f64 / self.sim_seconds.max(1e-9);
        let _ = writeln!(t, "PERFORMANCE: Processes: {n} \t Events: {} \t Time: {} s \t Speed: {speed:.2} ev/s", out.events, self.sim_seconds as u64);
        if !batch {
            t.push_str("Times: \n");
            for (h, f) in out.finish.iter().enumerate() {
                let _ = writeln!(t, "Host {h}: {f}");
            }
        }
        let (h, max) = out.max();
        let _ = writeln!(t, "Maximum finishing time at host {h}: {max} ({} s)", goal_sim::format_g(max as f64 / 1e9));
        if critical {
            let _ = writeln!(t, "Critical path (latest first; start and end in ns):");
            for s in &out.critical_path {
                let _ = writeln!(t, "  rank {} {}: {} - {}", s.rank, self.describe(s.rank, s.op), s.start, s.end);
            }
        }
        t
    }

    /// The same as JSON.
    pub fn json(&self) -> String {
        let (p, prm, out) = (self.program, self.prm, self.out);
        let mut j = String::new();
        let (h, max) = out.max();
        let _ = write!(
            j,
            "{{\"source\":\"{}\",\"ranks\":{},\"cpus\":{},\"nics\":{},\"ops\":{},\"deps\":{},\"params\":{{\"L\":{},\"o\":{},\"g\":{},\"G\":{},\"O\":{},\"S\":{}}},\"unit\":\"ns\",\"complete\":{},\"max\":{{\"host\":{h},\"ns\":{max}}},\"events\":{},\"read_seconds\":{:.6},\"sim_seconds\":{:.6},\"peak_rss_bytes\":{},\"program_bytes\":{},\"state_bytes\":{},\"finish\":[",
            esc(self.name),
            p.num_ranks(),
            p.cpus(),
            p.nics(),
            p.num_ops(),
            p.num_deps(),
            prm.l,
            prm.o,
            prm.g,
            ns_of_ps(prm.big_g_ps),
            ns_of_ps(prm.big_o_ps),
            prm.s,
            out.complete(),
            out.events,
            self.read_seconds,
            self.sim_seconds,
            self.peak_rss.map_or("null".to_string(), |b| b.to_string()),
            p.memory(),
            out.state_bytes,
        );
        for (i, f) in out.finish.iter().enumerate() {
            let _ = write!(j, "{}{f}", if i == 0 { "" } else { "," });
        }
        j.push(']');
        if let Some(l) = &out.left {
            let text = l.render(p, self.names);
            let lines: Vec<String> = text.lines().skip(1).map(|s| format!("\"{}\"", esc(s.trim()))).collect();
            let _ = write!(
                j,
                ",\"left\":{{\"unmatched_recvs\":{},\"unreceived_msgs\":{},\"blocked\":{},\"lines\":[{}]}}",
                l.unmatched_recvs,
                l.unreceived_msgs,
                l.blocked,
                lines.join(",")
            );
        }
        if !out.critical_path.is_empty() {
            j.push_str(",\"critical_path\":[");
            for (i, s) in out.critical_path.iter().enumerate() {
                let _ = write!(j, "{}{{\"rank\":{},\"op\":{},\"what\":\"{}\",\"start\":{},\"end\":{}}}", if i == 0 { "" } else { "," }, s.rank, s.op, esc(&self.describe(s.rank, s.op)), s.start, s.end);
            }
            j.push(']');
        }
        j.push_str("}\n");
        j
    }
}

/// Picoseconds as ns: a whole number as LogGOPSim prints it, else decimals.
fn ns_of_ps(ps: u64) -> String {
    if ps.is_multiple_of(1000) {
        (ps / 1000).to_string()
    } else {
        format!("{}", ps as f64 / 1000.0)
    }
}
