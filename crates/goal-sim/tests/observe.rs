//! What an observer of a simulation sees: every cpu, nic and network
//! activity with its times, for a timeline; and observing changes nothing.

use goal_sim::{Activity, Options, Params, Resource, What};

fn program(text: &str) -> goal_sim::Program {
    goal_sim::text::read(text.as_bytes(), "t.goal", 0, 5).unwrap_or_else(|e| panic!("{:?}", e.errors))
}

#[test]
fn a_message_shows_as_send_transfer_and_receive_with_the_models_times() {
    let p = program("num_ranks 2\nrank 0 {\nl1: send 8b to 1 tag 3 nic 1\n}\nrank 1 {\nl1: recv 8b from 0 tag 3\nl2: calc 50\nl2 requires l1\n}\n");
    let prm = Params { l: 1000, o: 100, g: 7, big_g_ps: 2000, big_o_ps: 0, s: 65535 };
    let mut seen: Vec<Activity> = Vec::new();
    let out = goal_sim::simulate_with(&p, prm, Options::default(), |a: &Activity| seen.push(*a));
    let a = |rank, what, resource, start, end, peer: Option<u32>| Activity { rank, op: 0, what, start, end, peer, bytes: 8, resource };
    let mut want = vec![
        a(0, What::Send, Resource::Cpu(0), 0, 100, Some(1)),
        a(0, What::Send, Resource::Nic(1), 0, 7 + 14, Some(1)),
        a(0, What::Transfer, Resource::Network, 100, 1100, Some(1)),
        // The message is taken on the cpu and nic the send named (LogGOPSim's).
        a(1, What::Recv, Resource::Cpu(0), 1100, 1100 + 100 + 14, Some(0)),
        a(1, What::Recv, Resource::Nic(1), 1100, 1100 + 7 + 14, Some(0)),
    ];
    want.push(Activity { rank: 1, op: 1, what: What::Calc, start: 1214, end: 1264, peer: None, bytes: 50, resource: Resource::Cpu(0) });
    assert_eq!(seen, want);
    assert_eq!(out.finish, vec![100, 1264]);
    assert_eq!(goal_sim::simulate(&p, prm).finish, out.finish);
    assert_eq!(p.nics(), 2);
}

/// Where LogGOPSim's `std::sort` reorders more than 16 operations ready at
/// once, goal keeps program order within each kind: sends first, then
/// receives, then calcs, each in the order written.
#[test]
fn forty_operations_ready_at_once_start_in_program_order_within_their_kind() {
    let mut text = String::from("num_ranks 2\nrank 0 {\n");
    for i in 0..20 {
        text.push_str(&format!("c{i}: calc {}\ns{i}: send {}b to 1 tag {i}\n", i + 1, i + 1));
    }
    text.push_str("}\nrank 1 {\n");
    for i in 0..20 {
        text.push_str(&format!("r{i}: recv {}b from 0 tag {i}\n", i + 1));
    }
    text.push_str("}\n");
    let p = program(&text);
    let mut order: Vec<(What, u32, u64)> = Vec::new();
    goal_sim::simulate_with(&p, Params::default(), Options::default(), |a: &Activity| {
        if a.rank == 0 && a.resource == Resource::Cpu(0) {
            order.push((a.what, a.op, a.start));
        }
    });
    let sends: Vec<u32> = order.iter().filter(|x| x.0 == What::Send).map(|x| x.1).collect();
    let calcs: Vec<u32> = order.iter().filter(|x| x.0 == What::Calc).map(|x| x.1).collect();
    assert_eq!(sends, (0..20).map(|i| 2 * i + 1).collect::<Vec<_>>());
    assert_eq!(calcs, (0..20).map(|i| 2 * i).collect::<Vec<_>>());
    // Every send before every calc, each starting when the cpu is free.
    let last_send = order.iter().filter(|x| x.0 == What::Send).map(|x| x.2).max().unwrap();
    let first_calc = order.iter().filter(|x| x.0 == What::Calc).map(|x| x.2).min().unwrap();
    assert!(last_send < first_calc, "{order:?}");
}
