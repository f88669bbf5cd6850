//! `goal-cluster` as benchmarks use it: up, show, exec, rail, measure, down.

mod util;

use std::process::Command;

use util::{stdout_of, GOAL_CLUSTER};

fn goal_cluster(args: &[&str]) -> Command {
    let mut cmd = Command::new(GOAL_CLUSTER);
    cmd.args(args);
    cmd
}

#[test]
fn a_named_cluster_lives_from_up_to_down() {
    if !util::can_build("goal-cluster up/down") {
        return;
    }
    let name = format!("clitest{}", std::process::id());
    let up = stdout_of(&mut goal_cluster(&[
        "up", "--name", &name, "--hosts", "2", "--rails", "2", "--rate", "1gbit",
    ]));
    // Whatever fails below, do not leave the cluster behind.
    struct Down(String);
    impl Drop for Down {
        fn drop(&mut self) {
            let _ = goal_cluster(&["down", "--name", &self.0]).output();
        }
    }
    let down_guard = Down(name.clone());
    assert!(
        up.starts_with(&format!(
            "cluster name={name} hosts=2 rails=2 rate=1gbit switch=goal-{name}-sw"
        )),
        "{up}"
    );
    assert!(up.contains(&format!("host index=1 hostname=host1 netns=goal-{name}-h1 rail0=10.100.0.2/24 rail1=10.101.0.2/24")), "{up}");
    assert_eq!(
        stdout_of(&mut goal_cluster(&["show", "--name", &name])),
        up,
        "show prints what up printed"
    );

    let hostname = stdout_of(&mut goal_cluster(&[
        "exec", "--name", &name, "--host", "1", "--", "hostname",
    ]));
    assert_eq!(hostname.trim(), "host1");
    // exec passes the exit status through.
    let status = goal_cluster(&[
        "exec", "--name", &name, "--host", "0", "--", "sh", "-c", "exit 3",
    ])
    .status()
    .expect("run");
    assert_eq!(status.code(), Some(3));

    stdout_of(&mut goal_cluster(&[
        "rail", "--name", &name, "--host", "0", "--rail", "1", "--state", "down",
    ]));
    let measured = goal_cluster(&[
        "measure",
        "--name",
        &name,
        "--rails",
        "1",
        "--seconds",
        "0.1",
    ])
    .output()
    .expect("run");
    assert!(!measured.status.success(), "rail 1 is down");
    stdout_of(&mut goal_cluster(&[
        "rail", "--name", &name, "--host", "0", "--rail", "1", "--state", "up",
    ]));
    let measured = stdout_of(&mut goal_cluster(&[
        "measure",
        "--name",
        &name,
        "--seconds",
        "0.2",
    ]));
    assert_eq!(
        measured.lines().filter(|l| l.starts_with("rail ")).count(),
        2,
        "{measured}"
    );

    assert!(
        !goal_cluster(&["up", "--name", &name])
            .status()
            .expect("run")
            .success(),
        "the name is taken"
    );
    stdout_of(&mut goal_cluster(&["down", "--name", &name]));
    drop(down_guard);
    assert!(!util::namespaces()
        .iter()
        .any(|ns| ns.starts_with(&format!("goal-{name}-"))));
    assert!(
        !goal_cluster(&["show", "--name", &name])
            .status()
            .expect("run")
            .success(),
        "it is gone"
    );
}

#[test]
fn bad_arguments_are_usage_errors() {
    for args in [
        &["up"][..],
        &["up", "--name", "x", "--rate", "1000"],
        &["exec", "--name", "x", "--host", "0"],
        &["srun", "--name", "x"],
        &["srun", "--", "-n", "2", "hostname"],
        &["frobnicate"],
    ] {
        let out = goal_cluster(args).output().expect("run");
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
