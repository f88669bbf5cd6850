//! Exports only the GOAL_* symbols from libgoal.so (version script, as liburing does).
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    println!("cargo:rerun-if-changed=goal.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/goal.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libgoal.so");
}
