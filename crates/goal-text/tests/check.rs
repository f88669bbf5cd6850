//! goal-text against small files written here: what is read, and every
//! kind of mistake with the line and column it names.

use goal_text::{check, convert, parse, OpKind, RankGraph, Summary};

fn run(text: &str) -> Summary {
    check(text.as_bytes(), "t.goal", 100, |_| {})
}

/// The errors as `LINE:COL: message`.
fn errors(text: &str) -> Vec<String> {
    let s = run(text);
    assert_eq!(s.error_count as usize, s.errors.len());
    s.errors.iter().map(|e| format!("{}:{}: {}", e.line, e.col, e.message)).collect()
}

/// Asserts exactly one error, at `at` ("LINE:COL"), containing `what`.
fn one_error(text: &str, at: &str, what: &str) {
    let e = errors(text);
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(e[0].starts_with(&format!("{at}: ")) && e[0].contains(what), "{e:#?}, wanted {at}: ...{what}...");
}

const FULL: &str = "\
num_ranks 3
// a comment line
/* a block
   comment */
rank 0 {
  l1: send 5000000000b to 1 tag 7 cpu 1 nic 2   // indented, comment after
l2: calc 100 cpu 3
l3: recv 8b from -1 tag -1
l1 requires l2
l3 irequires l1 /* trailing block */
}
rank 1{
l1: recv 5000000000b from 0 tag -1
send 1b to 0 tag 0
}
rank 2 { }
";

#[test]
fn every_form_of_the_grammar_is_read() {
    let mut ranks: Vec<RankGraph> = Vec::new();
    let mut errs = Vec::new();
    let h = parse(FULL.as_bytes(), "t.goal", |g| ranks.push(g.clone()), |e| errs.push(e));
    assert!(errs.is_empty(), "{errs:#?}");
    assert_eq!(h.num_ranks, Some(3));
    assert_eq!(ranks.len(), 3);
    let r0 = &ranks[0];
    assert_eq!(r0.ops[0].kind, OpKind::Send { bytes: 5_000_000_000, to: 1, tag: 7 });
    assert_eq!((r0.ops[0].cpu, r0.ops[0].nic, r0.ops[0].pos.line, r0.ops[0].pos.col), (1, 2, 6, 3));
    assert_eq!(r0.ops[1].kind, OpKind::Calc { units: 100 });
    assert_eq!(r0.ops[1].cpu, 3);
    assert_eq!(r0.ops[2].kind, OpKind::Recv { bytes: 8, from: None, tag: None });
    assert_eq!(r0.name(2), "l3");
    assert_eq!((r0.deps[0].target, r0.deps[0].prereq, r0.deps[0].on_start), (0, 1, false));
    assert_eq!((r0.deps[1].target, r0.deps[1].prereq, r0.deps[1].on_start), (2, 0, true));
    assert_eq!(ranks[1].ops[1].kind, OpKind::Send { bytes: 1, to: 0, tag: 0 });
    assert_eq!(ranks[1].name(1), "#1");
    assert!(ranks[2].ops.is_empty());
    let s = run(FULL);
    assert!(s.is_valid(), "{:#?}", s.errors);
    assert_eq!((s.ranks, s.sends, s.recvs, s.calcs, s.deps, s.bytes), (3, 2, 2, 1, 2, 5_000_000_001));
}

#[test]
fn labels_used_before_definition_or_never_defined() {
    one_error("num_ranks 1\nrank 0 {\nl1: calc 1\nl2 requires l1\nl2: calc 2\n}\n", "4:1", "label l2 is used before it is defined (at line 5)");
    let e = errors("num_ranks 1\nrank 0 {\nl1: calc 1\nl1 requires zz\n}\n");
    assert_eq!(e, vec!["4:13: label zz is not defined in rank 0: expected a label defined earlier in this rank"]);
    one_error("num_ranks 1\nrank 0 {\nl1: calc 1\nl1: calc 2\n}\n", "4:1", "label l1 is already defined in rank 0 (at line 3)");
    // Labels belong to their rank.
    one_error("num_ranks 2\nrank 0 {\nl1: calc 1\n}\nrank 1 {\nl2: calc 1\nl2 requires l1\n}\n", "7:13", "label l1 is not defined in rank 1");
}

#[test]
fn peers_outside_num_ranks() {
    one_error("num_ranks 2\nrank 0 {\nsend 1b to 2\n}\nrank 1 {\n}\n", "3:12", "rank 0 sends to rank 2, outside num_ranks 2: expected the destination rank from 0 to 1");
    one_error("num_ranks 2\nrank 0 {\n}\nrank 1 {\nrecv 1b from 7\n}\n", "5:14", "or -1 (any)");
    one_error("num_ranks 2\nrank 0 {\nsend 1b to -1\n}\nrank 1 {\n}\n", "3:12", "out of range");
    one_error("num_ranks 2\nrank 0 {\nsend 1b to 1 tag -1\n}\nrank 1 {\n}\n", "3:18", "the tag -1 is out of range: expected 0 to 2147483647");
}

#[test]
fn ranks_out_of_order_or_missing() {
    one_error("num_ranks 3\nrank 0 {\n}\nrank 2 {\n}\n", "4:6", "rank 2 comes too early: rank 1 is missing");
    let e = errors("num_ranks 3\nrank 0 {\n}\nrank 0 {\n}\n");
    assert!(e[0].starts_with("4:6: rank 0 is out of order: expected rank 1"), "{e:#?}");
    assert!(e[1].starts_with("5:2: the file ends but ranks 1 to 2 are missing"), "{e:#?}");
    let e = errors("num_ranks 2\nrank 0 {\n}\nrank 5 {\n}\n");
    assert!(e[0].starts_with("4:6: rank 5 is outside num_ranks 2: expected a rank from 0 to 1"), "{e:#?}");
    assert!(e[1].starts_with("5:2: the file ends but rank 1 is missing"), "{e:#?}");
    assert_eq!(e.len(), 2, "{e:#?}");
    one_error("num_ranks 1\nrank 0 {\ncalc 1\n", "3:7", "the file ends inside rank 0 (opened at line 2): expected '}'");
    one_error("num_ranks 2\nrank 0 {\ncalc 1\nrank 1 {\n}\n", "4:1", "expected '}' to close rank 0");
}

#[test]
fn cycles_are_named_by_their_labels() {
    let text = "num_ranks 1\nrank 0 {\na: calc 1\nb: calc 1\nc: calc 1\na requires c\nb requires a\nc irequires b\n}\n";
    one_error(text, "3:1", "rank 0: a is on a dependency cycle (a -> b -> c -> a, each requiring the one before)");
    one_error("num_ranks 1\nrank 0 {\nx: calc 1\nx requires x\n}\n", "3:1", "x is on a dependency cycle (x -> x");
}

#[test]
fn sends_and_receives_must_balance() {
    let e = errors("num_ranks 2\nrank 0 {\nsend 1b to 1 tag 3\n}\nrank 1 {\nrecv 1b from 0 tag 4\n}\n");
    assert_eq!(e.len(), 2, "{e:#?}");
    assert!(e[0].starts_with("3:1: rank 0 sends to rank 1 with tag 3 but no receive matches it (1 such send(s) unmatched): expected a 'recv ... from 0 tag 3'"), "{e:#?}");
    assert!(e[1].starts_with("6:1: rank 1 receives from rank 0 with tag 4 but no send is left to match it"), "{e:#?}");
    // Multiplicities count: two sends, one receive.
    one_error("num_ranks 2\nrank 0 {\nsend 1b to 1\nsend 1b to 1\n}\nrank 1 {\nrecv 1b from 0\n}\n", "4:1", "(1 such send(s) unmatched)");
    // Wildcards absorb what is left, whichever way round.
    let ok = "num_ranks 3\nrank 0 {\nsend 1b to 2 tag 1\nsend 1b to 2 tag 2\n}\nrank 1 {\nsend 1b to 2 tag 1\n}\nrank 2 {\nrecv 1b from 0 tag -1\nrecv 1b from -1 tag 1\nrecv 1b from -1 tag -1\n}\n";
    assert!(run(ok).is_valid(), "{:#?}", run(ok).errors);
    // A greedy pairing would give "from 0 tag -1" the tag-1 send and strand
    // the tag-2 one; the flow finds the pairing that works.
    let tricky = "num_ranks 2\nrank 0 {\nsend 1b to 1 tag 1\nsend 1b to 1 tag 2\n}\nrank 1 {\nrecv 1b from 0 tag -1\nrecv 1b from -1 tag 1\n}\n";
    assert!(run(tricky).is_valid(), "{:#?}", run(tricky).errors);
    one_error("num_ranks 2\nrank 0 {\n}\nrank 1 {\nrecv 1b from -1 tag -1\n}\n", "5:1", "rank 1 receives from any rank with any tag but no send is left");
}

#[test]
fn syntax_errors_say_what_was_expected_and_parsing_goes_on() {
    let e = errors("num_ranks 2\nrank 0 {\nl1: send 1 to 1\nl2: sned 1b to 1\nl3: send 1b\nl4: calc x\nsend 1b to 1 tag 0 bogus\n}\nrank 1 {\nrecv 1b from 0\n}\n");
    assert_eq!(e, vec![
        "3:12: expected 'b' after the size 1, found 'to'",
        "4:5: expected send, recv or calc, found 'sned'",
        "5:12: expected 'to' after the size, found the end of the line",
        "6:10: expected the units of work (a number), found 'x'",
        "7:20: expected 'cpu C', 'nic N' or the end of the statement, found 'bogus'",
    ]);
    one_error("rank 0 {\n}\n", "1:1", "expected 'num_ranks N' to open the file, found 'rank'");
    one_error("", "1:1", "the file ends before 'num_ranks N'");
    let e = errors("num_ranks 1\nrank 0 {\n/* never closed\n}\n");
    assert_eq!(e, vec![
        "3:1: this comment is never closed: expected '*/' before the end of the file",
        "4:2: the file ends inside rank 0 (opened at line 2): expected '}'",
    ]);
    one_error("num_ranks 1\nrank 0 {\nsend 99999999999999999999b to 0\n}\n", "3:6", "a size in bytes");
    one_error("num_ranks 1\n}\nrank 0 {\n}\n", "2:1", "a '}' that closes no rank");
    one_error("num_ranks 1\nrank 0 {\ncalc 1 \u{e9}\n}\n", "3:8", "the byte 0xc3");
}

#[test]
fn a_broken_operation_does_not_cascade_into_its_dependencies() {
    // htsim-chained_1's shape: the last send goes nowhere, and deps name it.
    let text = "num_ranks 2\nrank 0 {\nl1: calc 1\nl2: send 0b to 9999999 tag 5\nl2 requires l1\n}\nrank 1 {\n}\n";
    one_error(text, "4:16", "rank 0 sends to rank 9999999, outside num_ranks 2");
}

#[test]
fn errors_are_bounded_but_all_counted() {
    let mut text = String::from("num_ranks 1\nrank 0 {\n");
    for _ in 0..1000 {
        text.push_str("bogus\n");
    }
    text.push_str("}\n");
    let s = check(text.as_bytes(), "t.goal", 3, |_| {});
    assert_eq!((s.errors.len(), s.error_count), (3, 1000));
    assert_eq!(s.errors[0].to_string(), "t.goal:3:1: expected send, recv or calc, found 'bogus'");
}

#[test]
fn a_rank_converts_to_a_graph_that_compiles() {
    let mut graphs = Vec::new();
    parse(FULL.replace("5000000000", "50").as_bytes(), "t.goal", |g| graphs.push(convert::to_graph(g).unwrap()), |e| panic!("{e}"));
    let c = &graphs[0];
    assert_eq!(c.regions, vec![Some((0, 50)), None, Some((50, 8))]);
    assert_eq!(c.graph.scratchpad(), 58);
    assert_eq!(c.graph.vertices()[1], goal_sched::Vertex::Calc { units: 100 });
    let s = goal_sched::compile(&c.graph, &goal_sched::CompileOptions { group_size: 3 }).unwrap();
    assert_eq!(s.ops.len(), 3);
    // A size the schedule format cannot hold is refused by compile.
    parse(FULL.as_bytes(), "t.goal", |g| graphs.push(convert::to_graph(g).unwrap()), |e| panic!("{e}"));
    let err = goal_sched::compile(&graphs[3].graph, &goal_sched::CompileOptions { group_size: 3 }).unwrap_err();
    assert!(err.message.contains("larger than 4 GiB - 1"), "{err}");
}

#[test]
fn labels_of_every_shape_are_kept_apart() {
    // Schedgen's l<N> (looked up by index), leading zeros, large N, letters
    // after digits and long names (looked up by hash) are all different.
    let names = ["l0", "l1", "l01", "l10", "l1048575", "l1048576", "l99999999999999999999", "l2a", "x", "a_very_long_label_name_indeed"];
    let mut text = String::from("num_ranks 1\nrank 0 {\n");
    for n in names {
        text.push_str(&format!("{n}: calc 1\n"));
    }
    for w in names.windows(2) {
        text.push_str(&format!("{} requires {}\n", w[1], w[0]));
    }
    text.push_str("}\n");
    let mut deps = Vec::new();
    parse(text.as_bytes(), "t.goal", |g| deps = g.deps.iter().map(|d| (d.target, d.prereq)).collect(), |e| panic!("{e}"));
    let want: Vec<(u32, u32)> = (1..names.len() as u32).map(|i| (i, i - 1)).collect();
    assert_eq!(deps, want);
    // Defined twice, in either kind of lookup, and reset between ranks.
    one_error("num_ranks 1\nrank 0 {\nl7: calc 1\nl7: calc 1\n}\n", "4:1", "label l7 is already defined in rank 0 (at line 3)");
    let two = "num_ranks 2\nrank 0 {\nl7: calc 1\n}\nrank 1 {\nl8: calc 1\nl8 requires l7\n}\n";
    one_error(two, "7:13", "label l7 is not defined in rank 1");
}
