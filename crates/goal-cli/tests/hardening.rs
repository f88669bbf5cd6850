//! Misuse a new user tried (issue 39): each ends with an error naming its
//! cause, within seconds, instead of a hang or silence.

mod util;

use util::{in_job, launch};

/// A rank's body: `goal_rt::init`, printing what it said; exits 3 on error.
fn init_and_report() {
    match goal_rt::init() {
        Ok(_) => {
            println!("init ok");
            let _ = goal_rt::finalize();
        }
        Err(e) => {
            println!("init error: {}", e.message);
            std::process::exit(3);
        }
    }
}

#[test]
fn a_bad_goal_calibrate_value_is_refused_at_init() {
    if in_job() {
        init_and_report();
        return;
    }
    let job = launch(
        "a_bad_goal_calibrate_value_is_refused_at_init",
        1,
        &[("GOAL_CALIBRATE", "maybe")],
    );
    assert_eq!(job.status, 3, "{}\n{}", job.stdout, job.stderr);
    assert!(
        job.stdout.contains("GOAL_CALIBRATE=maybe")
            && job.stdout.contains("expected 0, off or force"),
        "{}",
        job.stdout
    );
    // The values it knows are still accepted.
    let job = launch(
        "a_bad_goal_calibrate_value_is_refused_at_init",
        1,
        &[("GOAL_CALIBRATE", "off")],
    );
    assert_eq!(job.status, 0, "{}\n{}", job.stdout, job.stderr);
    assert!(job.stdout.contains("init ok"), "{}", job.stdout);
}
