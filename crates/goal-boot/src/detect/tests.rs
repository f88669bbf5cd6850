//! Every launcher's environment, and broken ones, read into a plan or an
//! error that names the variable.

use super::*;

fn plan(vars: &[(&str, &str)]) -> io::Result<Plan> {
    Plan::from_env(&Env::from_pairs(vars))
}

fn launch(vars: &[(&str, &str)]) -> Launch {
    plan(vars).unwrap().launch
}

fn error_with(vars: &[(&str, &str)]) -> String {
    plan(vars).unwrap_err().to_string()
}

const FULL: [(&str, &str); 4] = [
    ("GOAL_BOOTSTRAP", "/tmp/x/boot.sock"),
    ("GOAL_RANK", "2"),
    ("GOAL_SIZE", "3"),
    ("GOAL_JOB", "42-1"),
];

const SECRET_HEX: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

#[test]
fn no_variables_is_a_group_of_one() {
    assert_eq!(launch(&[]), Launch::Single);
    // GOAL_PROGRESS is for the runtime, not the bootstrap.
    assert_eq!(launch(&[("GOAL_PROGRESS", "spin")]), Launch::Single);
}

#[test]
fn all_variables_give_a_launcher_client() {
    assert_eq!(
        launch(&FULL),
        Launch::Goalrun {
            path: "/tmp/x/boot.sock".into(),
            rank: 2,
            size: 3,
            job: "42-1".into()
        }
    );
}

#[test]
fn garbled_variables_are_named_with_their_value() {
    let mut vars = FULL;
    vars[1] = ("GOAL_RANK", "two");
    let e = error_with(&vars);
    assert!(e.contains("GOAL_RANK='two'"), "{e}");

    vars[1] = ("GOAL_RANK", "3");
    let e = error_with(&vars);
    assert!(
        e.contains("GOAL_RANK='3'") && e.contains("GOAL_SIZE='3'"),
        "{e}"
    );

    let mut vars = FULL;
    vars[2] = ("GOAL_SIZE", "0");
    assert!(error_with(&vars).contains("GOAL_SIZE='0'"));
}

#[test]
fn missing_goalrun_variables_are_named() {
    let e = error_with(&FULL[..3]);
    assert!(e.contains("GOAL_JOB"), "{e}");
    let e = error_with(&FULL[1..]);
    assert!(e.contains("GOAL_BOOTSTRAP is not"), "{e}");
    let e = error_with(&[FULL[0], FULL[2], FULL[3]]);
    assert!(
        e.contains("GOAL_SIZE is set") && e.contains("GOAL_RANK is not"),
        "{e}"
    );
}

#[test]
fn open_mpi_uses_pmix() {
    let vars = [
        ("OMPI_COMM_WORLD_RANK", "1"),
        ("OMPI_COMM_WORLD_SIZE", "3"),
        ("PMIX_RANK", "1"),
        ("PMIX_NAMESPACE", "1770913793"),
        ("PMIX_SERVER_URI41", "1770913792.0;tcp4://127.0.0.1:59903"),
    ];
    assert_eq!(
        launch(&vars),
        Launch::Pmix {
            rank: 1,
            namespace: "1770913793".into(),
            fallback: None
        }
    );
    // Open MPI inside a Slurm step with --mpi=pmi2: mpirun's ranks win.
    let mut nested = vars.to_vec();
    nested.extend([("PMI_FD", "7"), ("PMI_RANK", "0"), ("PMI_SIZE", "2")]);
    assert!(matches!(launch(&nested), Launch::Pmix { rank: 1, .. }));
}

#[test]
fn pmix_needs_its_namespace_and_server() {
    let e = error_with(&[("PMIX_RANK", "0")]);
    assert!(e.contains("PMIX_NAMESPACE is not"), "{e}");
    let e = error_with(&[("PMIX_NAMESPACE", "x")]);
    assert!(e.contains("PMIX_RANK is not"), "{e}");
    let e = error_with(&[("PMIX_RANK", "0"), ("PMIX_NAMESPACE", "x")]);
    assert!(e.contains("PMIX_SERVER_URI"), "{e}");
    let e = error_with(&[("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "2")]);
    assert!(
        e.contains("PMIX_RANK is not") && e.contains("GOAL_STORE"),
        "{e}"
    );
}

#[test]
fn pmix_falls_back_to_a_configured_store() {
    let vars = [
        ("PMIX_RANK", "2"),
        ("PMIX_NAMESPACE", "slurm.pmix.77.0"),
        ("PMIX_SERVER_URI2", "x"),
        ("SLURM_PROCID", "2"),
        ("SLURM_NTASKS", "4"),
        ("SLURM_JOB_ID", "77"),
        ("SLURM_STEP_ID", "0"),
        ("GOAL_STORE", "node1:29500"),
    ];
    let Launch::Pmix {
        fallback: Some(Ok(store)),
        ..
    } = launch(&vars)
    else {
        panic!("expected a PMIx plan with a store fallback");
    };
    assert_eq!((store.rank, store.size), (2, 4));
    assert_eq!(store.job, "slurm-77.0");
}

#[test]
fn hydra_uses_pmi() {
    let vars = [("PMI_FD", "6"), ("PMI_RANK", "1"), ("PMI_SIZE", "2")];
    assert_eq!(
        launch(&vars),
        Launch::Pmi {
            conn: PmiConn::Fd(6),
            identity: Some((1, 2))
        }
    );
    let port = [("PMI_PORT", "vm:41483"), ("PMI_ID", "1")];
    assert_eq!(
        launch(&port),
        Launch::Pmi {
            conn: PmiConn::Port {
                addr: "vm:41483".into(),
                id: Some(1)
            },
            identity: None
        }
    );
    // hydra inside a Slurm step started with --mpi=pmix: hydra's PMI wins.
    let mut nested = vars.to_vec();
    nested.extend([("PMIX_RANK", "0"), ("PMIX_NAMESPACE", "slurm.pmix.1.0")]);
    assert!(matches!(launch(&nested), Launch::Pmi { .. }));
}

#[test]
fn pmi_errors_name_the_variable() {
    let e = error_with(&[("PMI_FD", "6")]);
    assert!(e.contains("PMI_FD is set but PMI_RANK is not"), "{e}");
    let e = error_with(&[("PMI_FD", "six"), ("PMI_RANK", "0"), ("PMI_SIZE", "1")]);
    assert!(e.contains("PMI_FD='six'"), "{e}");
    let e = error_with(&[("PMI_FD", "6"), ("PMI_RANK", "0")]);
    assert!(e.contains("PMI_SIZE is not"), "{e}");
    let e = error_with(&[("PMI_PORT", "nocolon")]);
    assert!(e.contains("PMI_PORT='nocolon' is not host:port"), "{e}");
    let e = error_with(&[("PMI_RANK", "0"), ("PMI_SIZE", "2")]);
    assert!(e.contains("neither PMI_FD nor PMI_PORT"), "{e}");
}

/// srun's environment by hand: what it sets for each --mpi choice.
#[test]
fn srun_environments() {
    let slurm = [
        ("SLURM_PROCID", "3"),
        ("SLURM_NTASKS", "4"),
        ("SLURM_JOB_ID", "1234"),
        ("SLURM_STEP_ID", "5"),
        ("SLURM_LOCALID", "1"),
    ];
    // --mpi=pmix
    let mut pmix = slurm.to_vec();
    pmix.extend([
        ("PMIX_RANK", "3"),
        ("PMIX_NAMESPACE", "slurm.pmix.1234.5"),
        ("PMIX_SERVER_URI2", "pmix-server.99;tcp4://10.0.0.1:4242"),
    ]);
    assert!(matches!(launch(&pmix), Launch::Pmix { rank: 3, .. }));
    // --mpi=pmi2: Slurm's PMI-2 plugin also answers the PMI-1 wire protocol.
    let mut pmi2 = slurm.to_vec();
    pmi2.extend([
        ("PMI_FD", "9"),
        ("PMI_RANK", "3"),
        ("PMI_SIZE", "4"),
        ("PMI_JOBID", "1234.5"),
    ]);
    assert_eq!(
        launch(&pmi2),
        Launch::Pmi {
            conn: PmiConn::Fd(9),
            identity: Some((3, 4))
        }
    );
    // --mpi=none with goal's store.
    let mut store = slurm.to_vec();
    store.push(("GOAL_STORE", "node001:29500"));
    let Launch::Store(p) = launch(&store) else {
        panic!("expected a store plan")
    };
    assert_eq!((p.rank, p.size, p.job.as_str()), (3, 4, "slurm-1234.5"));
    assert_eq!(p.addr, "node001:29500");
    assert!(
        p.identity_from.contains("SLURM_PROCID/SLURM_NTASKS"),
        "{}",
        p.identity_from
    );
    // --mpi=none alone cannot work: say so, and how to fix it.
    let e = error_with(&slurm);
    assert!(
        e.contains("SLURM_PROCID='3'") && e.contains("--mpi=pmix") && e.contains("GOAL_STORE"),
        "{e}"
    );
    // A one-task step is a group of one.
    assert_eq!(
        launch(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "1")]),
        Launch::Single
    );
    // Half-set.
    let e = error_with(&[("SLURM_PROCID", "0")]);
    assert!(e.contains("SLURM_NTASKS or SLURM_NPROCS is not"), "{e}");
    let e = error_with(&[("SLURM_NTASKS", "4")]);
    assert!(e.contains("SLURM_PROCID is not"), "{e}");
    // The old name of the size.
    let Launch::Store(p) = launch(&[
        ("SLURM_PROCID", "1"),
        ("SLURM_NPROCS", "2"),
        ("GOAL_STORE", "h:1"),
    ]) else {
        panic!()
    };
    assert_eq!((p.rank, p.size), (1, 2));
}

#[test]
fn store_addresses_and_their_errors() {
    let Launch::Store(p) = launch(&[
        ("MASTER_ADDR", "10.1.2.3"),
        ("MASTER_PORT", "29500"),
        ("RANK", "1"),
        ("WORLD_SIZE", "2"),
        ("GOAL_STORE_TIMEOUT", "2.5"),
    ]) else {
        panic!()
    };
    assert_eq!(p.addr, "10.1.2.3:29501", "beside torch's store, not on it");
    assert_eq!(p.timeout, Duration::from_millis(2500));
    let Launch::Store(p) = launch(&[
        ("MASTER_ADDR", "::1"),
        ("MASTER_PORT", "5"),
        ("GOAL_RANK", "0"),
        ("GOAL_SIZE", "2"),
    ]) else {
        panic!()
    };
    assert_eq!(p.addr, "[::1]:6");
    assert_eq!(p.timeout, DEFAULT_STORE_TIMEOUT);

    let e = error_with(&[("MASTER_ADDR", "h")]);
    assert!(e.contains("MASTER_PORT is not"), "{e}");
    let torch = [("MASTER_ADDR", "h"), ("MASTER_PORT", "29500"), ("RANK", "0"), ("WORLD_SIZE", "2")];
    let Launch::Store(p) = launch(&[torch.as_slice(), &[("GOAL_MASTER_PORT_OFFSET", "100")]].concat()) else {
        panic!()
    };
    assert_eq!(p.addr, "h:29600");
    let e = error_with(&[torch.as_slice(), &[("GOAL_MASTER_PORT_OFFSET", "0")]].concat());
    assert!(e.contains("cannot share MASTER_PORT"), "{e}");
    let e = error_with(&[("MASTER_ADDR", "h"), ("MASTER_PORT", "65535"), ("RANK", "0"), ("WORLD_SIZE", "2")]);
    assert!(e.contains("MASTER_PORT='65535' plus GOAL_MASTER_PORT_OFFSET=1 is not a port"), "{e}");
    let e = error_with(&[
        ("GOAL_STORE", "h:0"),
        ("GOAL_RANK", "0"),
        ("GOAL_SIZE", "2"),
    ]);
    assert!(e.contains("GOAL_STORE='h:0' is not host:port"), "{e}");
    let e = error_with(&[("GOAL_STORE", "h:1")]);
    assert!(
        e.contains("GOAL_STORE='h:1' is set but nothing says this process' rank"),
        "{e}"
    );
    let e = error_with(&[
        ("GOAL_STORE", "h:1"),
        ("GOAL_RANK", "0"),
        ("GOAL_SIZE", "2"),
        ("GOAL_STORE_TIMEOUT", "soon"),
    ]);
    assert!(e.contains("GOAL_STORE_TIMEOUT='soon'"), "{e}");
    // GOAL_RANK/GOAL_SIZE with a store need no goalrun.
    assert!(matches!(
        launch(&[
            ("GOAL_STORE", "h:1"),
            ("GOAL_RANK", "0"),
            ("GOAL_SIZE", "2")
        ]),
        Launch::Store(_)
    ));
}

#[test]
fn goal_secret_is_parsed_and_checked() {
    let p = plan(&[("GOAL_SECRET", SECRET_HEX)]).unwrap();
    assert_eq!(p.secret.unwrap().to_hex(), SECRET_HEX);
    let e = error_with(&[("GOAL_SECRET", "abc")]);
    assert!(e.contains("GOAL_SECRET must be 64 hex digits"), "{e}");
}

#[test]
fn goal_boot_forces_a_method() {
    let mpich = [("PMI_FD", "6"), ("PMI_RANK", "1"), ("PMI_SIZE", "2")];
    let mut forced = mpich.to_vec();
    forced.push(("GOAL_BOOT", "single"));
    assert_eq!(launch(&forced), Launch::Single);
    let mut forced = mpich.to_vec();
    forced.extend([("GOAL_BOOT", "store"), ("GOAL_STORE", "127.0.0.1:9")]);
    let Launch::Store(p) = launch(&forced) else {
        panic!()
    };
    assert_eq!((p.rank, p.size), (1, 2));
    let e = error_with(&[("GOAL_BOOT", "pmix")]);
    assert!(e.contains("GOAL_BOOT=pmix but PMIX_RANK is not set"), "{e}");
    let e = error_with(&[("GOAL_BOOT", "mpi")]);
    assert!(e.contains("GOAL_BOOT='mpi' is not one of"), "{e}");
}
