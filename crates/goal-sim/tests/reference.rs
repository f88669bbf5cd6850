//! goal sim gives LogGOPSim's finish times: every row of
//! `tests/goal-corpus/loggopsim-reference.tsv` (what the real LogGOPSim
//! printed for each corpus file with its default parameters) is matched
//! exactly, host by host.

use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::PathBuf;

fn corpus() -> PathBuf {
    std::env::var_os("GOAL_CORPUS").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/goal-corpus"))
}

fn simulate(file: &str) -> goal_sim::Outcome {
    let path = corpus().join(file);
    let f = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let p = goal_sim::text::read(BufReader::new(f), file, 0, 20).unwrap_or_else(|e| panic!("{file}: {:?}", e.errors));
    goal_sim::simulate(&p, goal_sim::Params::default())
}

#[test]
fn every_reference_time_of_loggopsim_is_matched_exactly() {
    let tsv = std::fs::read_to_string(corpus().join("loggopsim-reference.tsv")).unwrap();
    let mut want: BTreeMap<String, BTreeMap<u32, u64>> = BTreeMap::new();
    for line in tsv.lines().filter(|l| !l.starts_with('#') && !l.starts_with("file\t") && !l.is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        want.entry(f[0].to_string()).or_default().insert(f[1].parse().unwrap(), f[2].parse().unwrap());
    }
    assert!(want.len() >= 17, "the reference names {} files", want.len());
    let mut wrong = Vec::new();
    for (file, hosts) in &want {
        let out = simulate(file);
        assert_eq!(out.finish.len(), hosts.len(), "{file}: hosts");
        for (&h, &t) in hosts {
            if out.finish[h as usize] != t {
                wrong.push(format!("{file}: host {h}: goal {} LogGOPSim {t}", out.finish[h as usize]));
            }
        }
        // LogGOPSim finished every file but one, whose sends are never received.
        let unfinished = file == "loggopsim2-src_schedgen_schedule.goal";
        assert_eq!(out.complete(), !unfinished, "{file}: {:?}", out.left);
    }
    assert!(wrong.is_empty(), "{} of the reference times differ:\n{}", wrong.len(), wrong.join("\n"));
}
