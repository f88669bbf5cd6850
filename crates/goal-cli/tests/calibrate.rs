//! `goal calibrate --loggops` as users run it, `goalrun -n 2 goal
//! calibrate --loggops --out FILE`: real round trips between two ranks,
//! the parameters printed in goal sim's options and written as JSON; and
//! the refusals (another number of ranks, nothing to calibrate).

use std::process::{Command, Output};

fn goalrun(n: usize, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_goalrun"))
        .args(["-n", &n.to_string(), "--timeout", "120", "--", env!("CARGO_BIN_EXE_goal"), "calibrate"])
        .args(args)
        .output()
        .expect("goalrun could not be started")
}

fn text(o: &Output) -> String {
    format!("exit {:?}\n--- stdout\n{}--- stderr\n{}", o.status.code(), String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// The number after `"key": ` in `json`.
fn field(json: &str, key: &str) -> f64 {
    let at = json.find(&format!("\"{key}\": ")).unwrap_or_else(|| panic!("no {key} in {json}")) + key.len() + 4;
    let end = json[at..].find([',', '\n', '}']).unwrap() + at;
    json[at..end].trim().parse().unwrap_or_else(|e| panic!("{key}: {e} in {json}"))
}

#[test]
fn two_ranks_measure_every_parameter_and_write_them() {
    let dir = std::env::temp_dir().join(format!("goal-calibrate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("loggops.json");
    let o = goalrun(2, &["--loggops", "--reps", "30", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("over shared memory (both ranks on one host)"), "{}", text(&o));
    let sim = stdout.lines().find(|l| l.starts_with("goal sim -L ")).unwrap_or_else(|| panic!("no goal sim line: {}", text(&o)));
    let json = std::fs::read_to_string(&out).unwrap();
    for k in ["L", "o", "g", "G", "O"] {
        let v = field(&json, k);
        assert!(v.is_finite() && v >= 0.0, "{k} = {v}: {json}");
    }
    // Each end's overhead measured, o their mean (LogGOPSim's one o), and L
    // what they leave of the half round trip of a byte, never below 0.
    let (o, o_s, o_r, l) = (field(&json, "o"), field(&json, "o_send"), field(&json, "o_recv"), field(&json, "L"));
    assert!(o_s > 0.0 && o_r > 0.0 && (o - (o_s + o_r) / 2.0).abs() < 0.1, "o {o}, o_s {o_s}, o_r {o_r}: {json}");
    let half = field(&json, "prtt1_ns") / 2.0;
    assert!((l - (half - o_s - o_r).max(0.0)).abs() < 0.2, "L {l} against a half round trip of {half}: {json}");
    // Goal's eager limit, and only eager sizes measured, from 1 byte on.
    let s = field(&json, "S");
    assert!(s >= 1024.0, "S = {s}: {json}");
    assert!(sim.ends_with(&format!("-S {s} FILE")), "{sim} against S = {s}");
    let sizes: Vec<f64> = json.match_indices("\"bytes\": ").map(|(i, _)| field(&json[i..], "bytes")).collect();
    assert!(sizes.len() >= 4 && sizes[0] == 1.0 && sizes.iter().all(|&b| b <= s), "sizes {sizes:?}, S = {s}");
    // A round trip of the largest size takes longer than none at all, and
    // every round trip was timed for real (a microsecond at the least is
    // far below any real one; 10 s is a hang).
    let prtt: Vec<f64> = json.match_indices("\"prtt1_ns\": ").map(|(i, _)| field(&json[i..], "prtt1_ns")).collect();
    assert!(prtt.iter().all(|&t| t > 100.0 && t < 1e10), "round trips {prtt:?}");
    // Rank 0 spins through the receiver's short trains here: the receive
    // overhead of the small sizes is the train's (docs/goal-text.md).
    let first = json.split("\"bytes\": 1, ").nth(1).and_then(|r| r.split('}').next()).unwrap_or_else(|| panic!("no 1-byte row: {json}"));
    assert!(first.contains("\"recv_timed\": \"train\""), "{first}");
    // The send's own time is measured at every size too (printed beside o_s).
    let calls: Vec<f64> = json.match_indices("\"send_call_ns\": ").map(|(i, _)| field(&json[i..], "send_call_ns")).collect();
    assert!(calls.len() == prtt.len() && calls.iter().all(|&t| (0.0..1e10).contains(&t)), "send calls {calls:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn another_number_of_ranks_or_no_calibration_named_is_refused() {
    let o = goalrun(3, &["--loggops", "--reps", "2"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("the job has 3 rank(s): the LogGOPS parameters are measured between 2"), "{}", text(&o));
    let o = Command::new(env!("CARGO_BIN_EXE_goal")).arg("calibrate").output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--loggops"), "{}", text(&o));
}
