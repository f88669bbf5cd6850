//! goal.h is generated from the Rust source and committed: this test
//! regenerates it and fails on any difference. `GOAL_BLESS=1` rewrites it.

#[test]
fn goal_h_matches_the_source() {
    let crate_dir = env!("CARGO_MANIFEST_DIR");
    let committed_path = std::path::Path::new(crate_dir).join("../../include/goal.h");
    let cfg = cbindgen::Config::from_file(format!("{crate_dir}/cbindgen.toml")).expect("cbindgen.toml");
    let mut out = Vec::new();
    cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(cfg)
        .generate()
        .expect("cbindgen could not read goal-ffi")
        .write(&mut out);
    let generated = fix_macros(&String::from_utf8(out).unwrap());
    if std::env::var_os("GOAL_BLESS").is_some() {
        std::fs::write(&committed_path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&committed_path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/goal.h is out of date with crates/goal-ffi/src/lib.rs; run `GOAL_BLESS=1 cargo test -p goal-ffi --test header`"
    );
}

/// cbindgen writes `#define X -1`; a macro must be parenthesised to be safe
/// in expressions (`a-X`), and the contract spells the invalid vertex as a
/// cast. This is the one deterministic edit made to cbindgen's output.
fn fix_macros(h: &str) -> String {
    h.lines()
        .map(|l| match l.strip_prefix("#define ").and_then(|r| r.split_once(' ')) {
            Some(("GOAL_INVALID_VERTEX", "-1")) => "#define GOAL_INVALID_VERTEX ((GOAL_Vertex)-1)".to_string(),
            Some((name, v)) if v.starts_with('-') => format!("#define {name} ({v})"),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}
