//! `op2 simulate`'s two engines, the interpreter (the reference) and the
//! kernels compiled to machine code, on every program of the repository
//! that has an instance, with several seeds: the same delivery order, bit-identical final states, the
//! same output and statistics. Airfoil is compared in `airfoil.rs`,
//! generated programs in `differential.rs`.

use std::path::Path;

use crate::support;
use support::{load, repository};

const SEEDS: [u64; 4] = [0, 1, 7, 42];

/// Every `NAME.op2` next to a `NAME.instance.json` in `directory`.
fn programs(directory: &Path) -> Vec<(String, String, Vec<u8>)> {
    let mut found = Vec::new();
    let entries =
        std::fs::read_dir(directory).unwrap_or_else(|e| panic!("{}: {e}", directory.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        let Some(stem) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".op2"))
        else {
            continue;
        };
        let instance = directory.join(format!("{stem}.instance.json"));
        if let Ok(json) = std::fs::read(&instance) {
            let text = std::fs::read_to_string(&path).expect("program");
            found.push((stem.to_owned(), text, json));
        }
    }
    found.sort();
    found
}

#[test]
fn every_program_with_an_instance_simulates_alike_under_both_engines() {
    let mut compared = 0;
    for directory in [
        "docs/examples",
        "server/cli/tests/simulate",
        "server/fuzz/regressions",
    ] {
        for (stem, text, json) in programs(&repository().join(directory)) {
            let analysis = op2_analysis::analyse_text(
                Path::new(&stem),
                &text,
                &op2_analysis::Options { require_main: true },
            );
            if analysis.has_errors() {
                // A regression input of syntax checking: nothing runs.
                continue;
            }
            let case = load(&stem, &text, &json);
            for seed in SEEDS {
                case.assert_engines_simulate_alike(seed, 50);
            }
            compared += 1;
        }
    }
    // docs/examples has three, the simulate tests two, the fuzz
    // regressions two: a moved directory must not empty this test.
    assert!(compared >= 7, "only {compared} programs found");
}

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `steps deliveries makespan hash` of `case` simulated with `seed` under
/// `engine`: what the fixtures record of a run.
fn recorded(case: &support::Case, seed: u64, engine: op2_exec::Engine) -> String {
    let (state, _, statistics) = case
        .simulate(op2_exec::simulate::Options {
            seed,
            engine,
            ..Default::default()
        })
        .expect("simulates");
    let json = state.final_state_json(&case.analysis.program);
    format!(
        "{} {} {} {:016x}",
        statistics.steps,
        statistics.total.delivered,
        statistics.cost.makespan,
        fnv1a(json.as_bytes())
    )
}

/// The lines of a fixture in `server/exec/tests/fixtures`, split into
/// fields, without its comments.
fn fixture(name: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(repository().join("server/exec/tests/fixtures").join(name))
        .expect("fixture");
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect()
}

fn number(text: &str) -> u64 {
    text.parse().expect("a number")
}

const ENGINES: [op2_exec::Engine; 2] = [op2_exec::Engine::Interp, op2_exec::Engine::Compiled];

/// The delivery order, and so every final state, is the recorded one: the
/// fixture (its header says when and how it was recorded) holds three
/// examples, three fan limits and five seeds, and both engines reproduce
/// it, so a change of the order is a deliberate one.
#[test]
fn the_delivery_order_is_the_recorded_one() {
    let mut checked = 0;
    for fields in fixture("simulate_order.txt") {
        let [stem, fan, seed, expected @ ..] = &fields[..] else {
            panic!("bad fixture line {fields:?}");
        };
        let case =
            support::example(stem).with_fan_limit(u32::try_from(number(fan)).expect("a fan limit"));
        for engine in ENGINES {
            assert_eq!(
                recorded(&case, number(seed), engine),
                expected.join(" "),
                "{fields:?} ({engine:?})"
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 45, "the fixture's runs");
}

/// `idx` and `INFO` (a float[2] INFO following an int MAX, an int INFO
/// following a double MIN, extremes that tie, three runs of the loop so
/// that an aggregator's partial from the run before is still there): both
/// engines reproduce the recorded order and final state, for three fan
/// limits and five seeds, and agree with the reference run exactly.
#[test]
fn idx_and_info_simulate_as_recorded_under_both_engines() {
    let fixtures = repository().join("server/exec/tests/fixtures");
    let read = |name: &str| std::fs::read(fixtures.join(name)).expect("fixture");
    let text = String::from_utf8(read("simulate_info.op2")).expect("utf-8");
    let json = read("simulate_info.instance.json");
    let mut checked = 0;
    for fields in fixture("simulate_info_order.txt") {
        let [fan, seed, expected @ ..] = &fields[..] else {
            panic!("bad fixture line {fields:?}");
        };
        let case = load("simulate_info", &text, &json)
            .with_fan_limit(u32::try_from(number(fan)).expect("a fan limit"));
        for engine in ENGINES {
            assert_eq!(
                recorded(&case, number(seed), engine),
                expected.join(" "),
                "{fields:?} ({engine:?})"
            );
        }
        case.assert_engines_simulate_alike(number(seed), u64::MAX);
        case.assert_agree(
            number(seed),
            op2_exec::Tolerance {
                relative: 0.0,
                absolute: 0.0,
            },
        );
        checked += 1;
    }
    assert_eq!(checked, 15, "the fixture's runs");
}

/// Whether some invocation has output pins on both sides of pin 64 on
/// one device type: in two words of the ready mask, which the simulator
/// refreshes word by word (`PlanInfo::refresh` without a one word).
fn straddles_a_word(graph: &op2_codegen::GraphType) -> bool {
    use op2_codegen::model::PinRole;
    graph.device_types.iter().any(|device| {
        let mut words = std::collections::HashMap::new();
        for (pin, output) in device.outputs.iter().enumerate() {
            let invocation = match output.role {
                PinRole::DatReadSend(id, _)
                | PinRole::Execute(id)
                | PinRole::ArgWriteSend(id, _)
                | PinRole::End(id) => id,
                _ => continue,
            };
            words
                .entry(invocation)
                .or_insert_with(std::collections::BTreeSet::new)
                .insert(pin / 64);
        }
        words.values().any(|w| w.len() > 1)
    })
}

/// A set device type with more output pins (74) than one 64-bit ready mask
/// holds. E802 keeps a graph for POETS to 32, so `op2 run` and `op2
/// simulate` refuse this program, but the ready masks do not rely on it:
/// the library simulates the graph under both engines alike, to the
/// reference's numbers, with both controllers and several seeds (a pin
/// aliased onto another, as `1 << pin` in a u64 did, sends the wrong
/// message or never sends).
#[test]
fn a_device_type_with_more_than_64_output_pins_simulates_correctly() {
    let directory = repository().join("server/exec/tests/fixtures");
    let text = std::fs::read_to_string(directory.join("many_pins.op2")).expect("program");
    let json = std::fs::read(directory.join("many_pins.instance.json")).expect("instance");
    for fan_limit in [0, 2] {
        let case = load("many_pins", &text, &json).with_fan_limit(fan_limit);
        let widest = case
            .graph
            .device_types
            .iter()
            .map(|t| t.outputs.len())
            .max()
            .unwrap_or(0);
        assert!(
            widest > 64,
            "the widest device type has {widest} output pins"
        );
        assert!(
            straddles_a_word(&case.graph),
            "no invocation's output pins straddle pin 64, so the multi-word refresh is not reached"
        );
        for seed in [0, 1, 7] {
            case.assert_engines_simulate_alike(seed, 10);
            case.assert_agree(seed, op2_exec::Tolerance::default());
        }
    }
}

/// A loop over `cells` whose kernel increments `sends` nodes through one
/// map, each by its own argument: `sends` write sends on one cell.
fn scatter_with_sends(sends: usize) -> support::Case {
    let parameters: Vec<String> = (0..sends).map(|i| format!("double *a{i}")).collect();
    let body: String = (0..sends)
        .map(|i| format!("    *a{i} += q[0] + {i}.0;\n"))
        .collect();
    let arguments: Vec<String> = (0..sends).map(|i| format!("y[c2n[{i}]] INC")).collect();
    let text = format!(
        "set cells;\nset nodes;\nmap c2n: cells -> nodes[{sends}];\ndat y: double on nodes;\n\
         dat q: double on cells;\nkernel spread(const double *q, {}) {{\n{body}}}\n\
         main {{\n    par_loop spread over cells (q READ, {});\n}}\n",
        parameters.join(", "),
        arguments.join(", ")
    );
    let targets: Vec<String> = (0..sends).map(|i| (i % 5).to_string()).collect();
    let json = format!(
        "{{\"sets\": {{\"cells\": 2, \"nodes\": 5}}, \"maps\": {{\"c2n\": [[{t}], [{t}]]}}, \
         \"dats\": {{\"q\": [1.0, 2.0]}}}}",
        t = targets.join(", ")
    );
    load("sends", &text, json.as_bytes())
}

/// Each element keeps a bit per send of an invocation, 32 of them: the
/// library simulates an invocation with 32 write sends on one element to
/// the reference's numbers, and refuses one with 33, naming it, rather
/// than never sending the 33rd and ending in a deadlock (E802 keeps graphs
/// for POETS far below, but the library must not rely on it).
#[test]
fn an_invocation_with_more_sends_than_the_simulator_keeps_is_refused() {
    let most = op2_exec::simulate::MAX_SENDS;
    let case = scatter_with_sends(most);
    case.assert_agree(0, op2_exec::Tolerance::default());
    let case = scatter_with_sends(most + 1);
    match case.simulate(op2_exec::simulate::Options::default()) {
        Err(op2_exec::simulate::SimulationError::Limit(message)) => {
            assert!(
                // The par_loop is on line 9 + 33, after the kernel's body.
                message.starts_with("sends:42:5: `spread` would send 33 write messages")
                    && message.contains("more than the 32")
                    && message.contains(
                        "device type `set_cells` has no room for pin `spread_arg33_write_send`"
                    )
                    && message.ends_with(
                        "(split the par_loop into loops of at most 32 indirect arguments each)"
                    ),
                "{message}"
            );
        }
        Ok(_) => panic!("a graph past the simulator's sends simulated"),
        Err(other) => panic!("not the error of too many sends: {other}"),
    }
}

/// The seeded order's guarantee (docs/compilation.md, "The delivery
/// order"): every order of a device's receives has a positive probability.
/// Four cells increment one node by values whose floating sum depends on
/// the order the node adds them in (7 different sums over the 24 orders,
/// worked out here); the first seeds reach every one of them, under both
/// engines alike.
#[test]
fn the_first_seeds_reach_every_order_of_a_devices_receives() {
    let values = [1e16, -9_007_199_254_740_992.0, 0.7, 1.0 / 3.0];
    let text = "set cells;\nset nodes;\nmap c2n: cells -> nodes[1];\ndat y: double on nodes;\n\
                dat q: double on cells;\nkernel add(const double *q, double *y) {\n    *y += q[0];\n}\n\
                main {\n    par_loop add over cells (q READ, y[c2n[0]] INC);\n}\n";
    let json = format!(
        "{{\"sets\": {{\"cells\": 4, \"nodes\": 1}}, \"maps\": {{\"c2n\": [[0], [0], [0], [0]]}}, \
         \"dats\": {{\"q\": [{:?}, {:?}, {:?}, {:?}]}}}}",
        values[0], values[1], values[2], values[3]
    );
    // The node adds each cell's value to 0 in the order they arrive.
    let mut possible = std::collections::BTreeSet::new();
    let mut order = [0, 1, 2, 3];
    permutations(&mut order, 0, &mut |o| {
        let sum = o.iter().fold(0.0f64, |sum, &i| sum + values[i]);
        possible.insert(sum.to_bits());
    });
    assert_eq!(possible.len(), 7, "the values tell 7 orders apart");
    for fan_limit in [0, 2] {
        let case = load("orders", text, json.as_bytes()).with_fan_limit(fan_limit);
        let mut reached = std::collections::BTreeSet::new();
        for seed in 0..SEEDS_FOR_EVERY_ORDER {
            let (state, _, _) = case
                .simulate(op2_exec::simulate::Options {
                    seed,
                    ..Default::default()
                })
                .expect("simulates");
            let y = state.dats[0][0];
            let op2_analysis::value::Value::Double(y) = y else {
                panic!("y is {y:?}");
            };
            assert!(possible.contains(&y.to_bits()), "{y} is no order's sum");
            reached.insert(y.to_bits());
            case.assert_engines_simulate_alike(seed, 10);
        }
        assert_eq!(
            reached.len(),
            possible.len(),
            "fan limit {fan_limit}: {} of the {} sums in {SEEDS_FOR_EVERY_ORDER} seeds",
            reached.len(),
            possible.len()
        );
    }
}

/// Seeds tried for every order.
const SEEDS_FOR_EVERY_ORDER: u64 = 200;

/// Calls `each` with every permutation of `items[from..]` after
/// `items[..from]`.
fn permutations(items: &mut [usize; 4], from: usize, each: &mut dyn FnMut(&[usize; 4])) {
    if from == items.len() {
        each(items);
        return;
    }
    for i in from..items.len() {
        items.swap(from, i);
        permutations(items, from + 1, each);
        items.swap(from, i);
    }
}
