//! A graph with a fault planted (an edge removed, a count property off by
//! one) is reported as a deadlock or a failed assertion naming a device:
//! never a hang, never a pass.

use crate::support;

use op2_codegen::topology::for_each_edge;
use op2_exec::simulate::{Injection, Options, SimulationError};
use support::example;

fn edge_count(case: &support::Case) -> usize {
    let mut count = 0;
    for_each_edge(&case.analysis.program, &case.graph, &case.data, |_| {
        count += 1
    });
    count
}

#[test]
fn every_removed_edge_is_caught() {
    for fan_limit in [0, op2_codegen::DEFAULT_FAN_LIMIT, 2] {
        every_removed_edge_is_caught_with(fan_limit);
    }
}

/// With trees, a lost edge into or out of an aggregator stops the
/// invocation as surely as one of the controller's.
fn every_removed_edge_is_caught_with(fan_limit: u32) {
    let case = example("dot_product").with_fan_limit(fan_limit);
    let edges = edge_count(&case);
    assert!(edges > 50);
    for edge in 0..edges {
        let options = Options {
            seed: 9,
            injection: Some(Injection::DropEdge(edge)),
            ..Options::default()
        };
        match case.simulate(options) {
            Err(SimulationError::Deadlock(report) | SimulationError::Assertion(report)) => {
                assert!(
                    report.contains('_') || report.contains("global"),
                    "edge {edge}: the report names a device: {report}"
                );
            }
            Err(other) => panic!("edge {edge}: unexpected error {other}"),
            Ok(_) => panic!("edge {edge}: a graph without it passed"),
        }
    }
}

#[test]
fn counts_off_by_one_are_caught() {
    let case = example("scatter");
    // The scatter's first invocation writes node data through a map: every
    // node receives write messages.
    let plan = case
        .graph
        .invocations
        .iter()
        .position(|p| p.involved_sets.len() > 1)
        .expect("an indirect invocation");
    let set = case.graph.invocations[plan].involved_sets[1];
    for index in [0, 3, 7] {
        for injection in [
            Injection::WriteTotalPlusOne { plan, set, index },
            Injection::WriteTotalMinusOne { plan, set, index },
        ] {
            let options = Options {
                seed: 5,
                injection: Some(injection),
                ..Options::default()
            };
            match case.simulate(options) {
                Err(SimulationError::Deadlock(report) | SimulationError::Assertion(report)) => {
                    let device = format!("_{index}");
                    assert!(
                        report.contains(&device),
                        "{injection:?}: names the device: {report}"
                    );
                }
                Err(other) => panic!("{injection:?}: unexpected error {other}"),
                Ok(_) => panic!("{injection:?}: passed"),
            }
        }
    }
}
