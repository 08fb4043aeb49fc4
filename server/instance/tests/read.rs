//! Reading and validating instance data (language.md §9): every problem is
//! reported with its code, JSON path and message, and values given in the
//! data take precedence over the program's.

use std::path::Path;

use op2_analysis::model::{ConstId, DatId, GlobalId, MapId, SetId};
use op2_analysis::value::Value;
use op2_analysis::{Analysis, Options, analyse_text};
use op2_instance::{self as instance, DatValues, InstanceError, Loaded, NoProgress};
use op2_syntax::{Code, Severity};

/// Edges scattering into cells, with a dat of each element type, a const
/// without a value and a global.
const PROGRAM: &str = "
set edges;
set cells;
set unused_set;
set spare;

map pecell: edges -> cells[2];

dat p_flux:  double on edges;
dat p_kind:  int on edges = 7;
dat p_q:     double[2] on cells = {1.5, -2.0};
dat p_res:   double on cells;
dat p_flag:  bool on cells;
dat p_small: float on cells;
dat p_count: uint on cells;

const k: double;
const scale: double[2] = {2.0, 3.0};

global g_total: double = 4.0;

kernel scatter(const double *flux, const int *kind, const double *q1, double *r1, double *r2) {
    r1[0] += flux[0] * k + kind[0] + q1[0] * scale[1];
    r2[0] -= flux[0];
}

kernel sum(const double *res, const bool *flag, const float *small, const uint *count, double *total) {
    if (flag[0]) *total += res[0] + small[0] + count[0];
}

main {
    par_loop scatter over edges (p_flux READ, p_kind READ, p_q[pecell[0]] READ,
                                 p_res[pecell[0]] INC, p_res[pecell[1]] INC);
    par_loop sum over cells (p_res READ, p_flag READ, p_small READ, p_count READ, g_total INC);
    print(\"%g %d\", g_total, len(unused_set));
}
";

/// Valid data for [`PROGRAM`].
const GOOD: &str = r#"{
  "sets": { "edges": 3, "cells": 3, "unused_set": 0 },
  "maps": { "pecell": [[0, 1], [1, 2], [2, 0]] },
  "dats": { "p_flux": [1.0, 2.0, 3.0] },
  "consts": { "k": 0.5 }
}"#;

fn analyse(text: &str) -> Analysis {
    let analysis = analyse_text(Path::new("test.op2"), text, &Options { require_main: true });
    let errors: Vec<_> = analysis
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    assert!(
        errors.is_empty(),
        "the test program has errors: {errors:#?}"
    );
    analysis
}

fn read(analysis: &Analysis, json: &str) -> Loaded {
    instance::read(json.as_bytes(), &analysis.program, &mut NoProgress)
}

/// `GOOD` with `section.name` replaced by `value` (or removed for `None`).
fn variant(section: &str, name: &str, value: Option<&str>) -> String {
    let mut document: serde_json::Value = serde_json::from_str(GOOD).unwrap();
    let object = document
        .as_object_mut()
        .unwrap()
        .entry(section)
        .or_insert_with(|| serde_json::json!({}))
        .as_object_mut()
        .unwrap();
    match value {
        Some(value) => {
            object.insert(name.into(), serde_json::from_str(value).unwrap());
        }
        None => {
            object.remove(name);
        }
    }
    document.to_string()
}

/// The only problem of `loaded`, which must have `code`.
fn only(loaded: &Loaded, code: Code) -> &InstanceError {
    assert_eq!(
        loaded.problems.len(),
        1,
        "expected one problem, got {:#?}",
        loaded.problems
    );
    let problem = &loaded.problems[0];
    assert_eq!(problem.code, code, "{problem:#?}");
    problem
}

fn assert_problem(loaded: &Loaded, code: Code, path: &str, message: &str) {
    let problem = only(loaded, code);
    assert_eq!(problem.path, path);
    assert_eq!(problem.message, message);
    assert_eq!(loaded.data.is_none(), code.severity() == Severity::Error);
}

#[test]
fn good_data_has_no_problems() {
    let analysis = analyse(PROGRAM);
    let loaded = read(&analysis, GOOD);
    assert!(loaded.problems.is_empty(), "{:#?}", loaded.problems);
    let data = loaded.data.unwrap();
    assert_eq!(data.set_sizes, vec![3, 3, 0, 0]);
    assert_eq!(data.map(MapId(0)), Some(&[0, 1, 1, 2, 2, 0][..]));
    assert_eq!(data.elements(), 6);
}

#[test]
fn e701_missing_set_size() {
    let analysis = analyse(PROGRAM);
    let loaded = read(&analysis, &variant("sets", "cells", None));
    assert_problem(
        &loaded,
        Code::E701,
        "sets.cells",
        "the size of set `cells` is missing",
    );
    // The problem points at the declaration of `cells`.
    let problem = &loaded.problems[0];
    let cells = &analysis.program.sets[1];
    assert_eq!(problem.location, cells.location);
}

#[test]
fn e701_missing_size_of_a_set_only_a_fetch_reads() {
    // No par_loop runs over `nodes`, but `fetch` copies its every element.
    let analysis = analyse(
        "set nodes;\ndat p_u: double on nodes = 2.5;\nglobal u: double[4];\nmain {\n    fetch p_u into u;\n    print(\"%g\", u[0]);\n}\n",
    );
    let loaded = read(&analysis, r#"{"sets": {}}"#);
    assert_problem(
        &loaded,
        Code::E701,
        "sets.nodes",
        "the size of set `nodes` is missing",
    );
    let loaded = read(&analysis, r#"{"sets": {"nodes": 4}}"#);
    assert!(loaded.problems.is_empty(), "{:#?}", loaded.problems);
}

#[test]
fn e701_sizes_must_be_non_negative_integers() {
    let analysis = analyse(PROGRAM);
    for (value, found) in [
        ("-3", "-3"),
        ("2.5", "2.5"),
        ("\"3\"", "a string"),
        ("null", "`null`"),
    ] {
        let loaded = read(&analysis, &variant("sets", "edges", Some(value)));
        assert_problem(
            &loaded,
            Code::E701,
            "sets.edges",
            &format!("expected a set size (a non-negative integer), found {found}"),
        );
    }
}

#[test]
fn e701_wrong_value_types() {
    let analysis = analyse(PROGRAM);
    let cases = [
        (
            "p_flux",
            "[1.0, \"two\", 3.0]",
            "dats.p_flux[1]",
            "expected a number (`double`), found a string",
        ),
        (
            "p_kind",
            "[1, 2.5, 3]",
            "dats.p_kind[1]",
            "expected an integer (`int`), found 2.5",
        ),
        (
            "p_kind",
            "[1, 2, 3000000000]",
            "dats.p_kind[2]",
            "3000000000 does not fit `int`",
        ),
        (
            "p_count",
            "[1, -2, 3]",
            "dats.p_count[1]",
            "-2 does not fit `uint`",
        ),
        (
            "p_flag",
            "[true, 2, false]",
            "dats.p_flag[1]",
            "expected `true`, `false`, 0 or 1 (`bool`), found 2",
        ),
        (
            "p_small",
            "[1.0, 1e39, 3.0]",
            "dats.p_small[1]",
            "1e39 does not fit `float`",
        ),
        (
            "p_q",
            "[[1.0, 2.0], [3.0, true], [5.0, 6.0]]",
            "dats.p_q[1][1]",
            "expected a number (`double`), found `true`",
        ),
        (
            "p_q",
            "[[1.0, 2.0], {\"a\": 1}, [5.0, 6.0]]",
            "dats.p_q[1]",
            "expected a row of 2 values (`double[2]`), found an object",
        ),
        (
            "p_flux",
            "{\"0\": 1.0}",
            "dats.p_flux",
            "expected a list of values (`double`), found an object",
        ),
    ];
    for (dat, value, path, message) in cases {
        let loaded = read(&analysis, &variant("dats", dat, Some(value)));
        assert_problem(&loaded, Code::E701, path, message);
    }
    let loaded = read(
        &analysis,
        &variant("maps", "pecell", Some("[[0, 1], [1, 2.0], [2, 0]]")),
    );
    assert_problem(
        &loaded,
        Code::E701,
        "maps.pecell[1][1]",
        "expected a target (an element number), found 2.0",
    );
    let loaded = read(&analysis, &variant("consts", "k", Some("\"half\"")));
    assert_problem(
        &loaded,
        Code::E701,
        "consts.k",
        "expected a number (`double`), found a string",
    );
}

#[test]
fn e701_required_const() {
    let analysis = analyse(PROGRAM);
    let loaded = read(&analysis, &variant("consts", "k", None));
    assert_problem(
        &loaded,
        Code::E701,
        "consts.k",
        "const `k` has no value in the program, so the instance data must give one",
    );
}

#[test]
fn e701_missing_map_and_malformed_document() {
    let analysis = analyse(PROGRAM);
    let loaded = read(&analysis, &variant("maps", "pecell", None));
    assert_problem(
        &loaded,
        Code::E701,
        "maps.pecell",
        "the targets of map `pecell` are missing",
    );

    let loaded = read(&analysis, "[1, 2]");
    assert_eq!(only(&loaded, Code::E701).path, "");

    let loaded = read(&analysis, "{\"sets\": {\"edges\": 3,");
    let problem = only(&loaded, Code::E701);
    assert!(
        problem
            .message
            .starts_with("the instance data is not valid JSON: ")
            && problem.message.contains("line 1"),
        "{problem:#?}"
    );
    // At the start of a line serde says column 0; op2 counts from 1.
    let loaded = read(&analysis, "{\"sets\": {\"edges\": 3,\n");
    assert_eq!(
        only(&loaded, Code::E701).message,
        "the instance data is not valid JSON: EOF while parsing a value at line 2 column 1"
    );

    let loaded = read(&analysis, "{\"sets\": [3, 3]}");
    let problem = &loaded.problems[0];
    assert_eq!((problem.code, problem.path.as_str()), (Code::E701, "sets"));
}

#[test]
fn e702_target_outside_set() {
    let analysis = analyse(PROGRAM);
    let loaded = read(
        &analysis,
        &variant("maps", "pecell", Some("[[0, 1], [1, 3], [2, 0]]")),
    );
    assert_problem(
        &loaded,
        Code::E702,
        "maps.pecell[1][1]",
        "target 3 is outside set `cells` of 3 elements",
    );
    let loaded = read(
        &analysis,
        &variant("maps", "pecell", Some("[[0, 1], [1, 2], [-1, 0]]")),
    );
    assert_problem(
        &loaded,
        Code::E702,
        "maps.pecell[2][0]",
        "target -1 is outside set `cells` of 3 elements",
    );
    // The diagnostic names the path first and points at the map.
    let diagnostic = loaded.problems[0].to_diagnostic();
    assert_eq!(
        diagnostic.message,
        "`maps.pecell[2][0]`: target -1 is outside set `cells` of 3 elements"
    );
    assert_eq!(diagnostic.location, analysis.program.maps[0].location);
}

#[test]
fn e702_is_summarised_for_a_mesh_numbered_from_one() {
    let analysis = analyse(PROGRAM);
    let rows: Vec<String> = (0..200).map(|e| format!("[{}, {}]", e + 1, 200)).collect();
    let json = format!(
        "{{\"sets\": {{\"edges\": 200, \"cells\": 200}}, \"maps\": {{\"pecell\": [{}]}}, \"consts\": {{\"k\": 1}}}}",
        rows.join(",")
    );
    let loaded = read(&analysis, &json);
    assert!(loaded.has_errors());
    let shown = loaded
        .problems
        .iter()
        .filter(|p| p.code == Code::E702)
        .count();
    assert_eq!(shown, 51, "50 problems and a summary");
    let last = loaded.problems.last().unwrap();
    assert_eq!(last.path, "maps.pecell");
    assert_eq!(
        last.message,
        "151 more problems like the 50 above (`E702`) not shown"
    );
}

#[test]
fn e703_rows_and_components() {
    let analysis = analyse(PROGRAM);
    let loaded = read(
        &analysis,
        &variant("maps", "pecell", Some("[[0, 1], [1, 2]]")),
    );
    assert_problem(
        &loaded,
        Code::E703,
        "maps.pecell",
        "2 rows, but set `edges` has 3 elements",
    );
    let loaded = read(
        &analysis,
        &variant("maps", "pecell", Some("[[0, 1], [1, 2, 0], [2, 0]]")),
    );
    assert_problem(
        &loaded,
        Code::E703,
        "maps.pecell[1]",
        "3 targets, but map `pecell` has arity 2",
    );
    let loaded = read(
        &analysis,
        &variant("dats", "p_flux", Some("[1.0, 2.0, 3.0, 4.0]")),
    );
    assert_problem(
        &loaded,
        Code::E703,
        "dats.p_flux",
        "4 rows, but set `edges` has 3 elements",
    );
    let loaded = read(
        &analysis,
        &variant("dats", "p_q", Some("[[1.0, 2.0], [3.0], [5.0, 6.0]]")),
    );
    assert_problem(
        &loaded,
        Code::E703,
        "dats.p_q[1]",
        "1 value, but dat `p_q` has dimension 2",
    );
    let loaded = read(
        &analysis,
        &variant("dats", "p_q", Some("[[1.0, 2.0], 3.0, [5.0, 6.0]]")),
    );
    assert_problem(
        &loaded,
        Code::E703,
        "dats.p_q[1]",
        "a single value, but dat `p_q` has dimension 2",
    );
    let loaded = read(
        &analysis,
        &variant("consts", "scale", Some("[1.0, 2.0, 3.0]")),
    );
    assert_problem(
        &loaded,
        Code::E703,
        "consts.scale",
        "3 values, but const `scale` has dimension 2",
    );
}

#[test]
fn e704_two_elements_write_one_target() {
    // The example of E704's explanation.
    let analysis = analyse(
        "
set edges;
set cells;
map pleft: edges -> cells[1];
dat p_flux: double on edges;
dat p_res:  double on cells;
global g_total: double;
kernel scatter(const double *flux, double *res) { res[0] = flux[0]; }
kernel sum_res(const double *res, double *total) { *total += res[0]; }
main {
    par_loop scatter over edges (p_flux READ, p_res[pleft[0]] WRITE);
    par_loop sum_res over cells (p_res READ, g_total INC);
    print(\"total = %g\", g_total);
}",
    );
    let json = r#"{
      "sets": { "edges": 3, "cells": 3 },
      "maps": { "pleft": [[0], [1], [1]] },
      "dats": { "p_flux": [1.0, 2.0, 3.0] }
    }"#;
    let loaded = read(&analysis, json);
    assert_problem(
        &loaded,
        Code::E704,
        "maps.pleft[2][0]",
        "par_loop `scatter` writes element 1 of dat `p_res` from elements 1 and 2 of set `edges` (`maps.pleft[1][0]` and `maps.pleft[2][0]`)",
    );
    // Reported on the par_loop, with the argument as related.
    let problem = &loaded.problems[0];
    assert_eq!(problem.location, analysis.program.invocations[0].location);
    assert!(!problem.related.is_empty());
    // Distinct targets are fine, and so is INC (the scatter example).
    let fine = json.replace("[[0], [1], [1]]", "[[0], [1], [2]]");
    assert!(read(&analysis, &fine).problems.is_empty());
}

#[test]
fn e704_across_two_arguments() {
    let analysis = analyse(
        "
set edges;
set cells;
map pecell: edges -> cells[2];
dat p_res: double on cells;
dat p_w: double on edges;
kernel split(const double *w, double *a, double *b) { a[0] = w[0]; b[0] = -w[0]; }
main {
    par_loop split over edges (p_w READ, p_res[pecell[0]] WRITE, p_res[pecell[1]] WRITE);
}",
    );
    let json = r#"{"sets": {"edges": 2, "cells": 4}, "maps": {"pecell": [[0, 1], [2, 0]]}}"#;
    let loaded = read(&analysis, json);
    let problem = only(&loaded, Code::E704);
    assert_eq!(problem.path, "maps.pecell[1][1]");
    assert!(
        problem
            .message
            .contains("writes element 0 of dat `p_res` from elements 0 and 1"),
        "{problem:#?}"
    );
}

#[test]
fn w705_unknown_names_are_warnings() {
    let analysis = analyse(PROGRAM);
    let loaded = read(
        &analysis,
        &variant("dats", "p_qold", Some("[1.0, 2.0, 3.0]")),
    );
    assert_problem(
        &loaded,
        Code::W705,
        "dats.p_qold",
        "the program declares no dat `p_qold`; the entry is ignored",
    );
    assert!(!loaded.has_errors());
    assert!(loaded.data.is_some());
    assert_eq!(loaded.problems[0].severity(), Severity::Warning);

    let loaded = read(&analysis, &variant("dats", "pecell", Some("[1.0]")));
    assert_problem(
        &loaded,
        Code::W705,
        "dats.pecell",
        "the program declares no dat `pecell` (`pecell` is a map); the entry is ignored",
    );

    let mut document: serde_json::Value = serde_json::from_str(GOOD).unwrap();
    document["meshes"] = serde_json::json!({});
    let loaded = read(&analysis, &document.to_string());
    let problem = only(&loaded, Code::W705);
    assert_eq!(problem.path, "meshes");
}

#[test]
fn duplicate_entries_are_errors() {
    let analysis = analyse(PROGRAM);
    let json = GOOD.replace("\"edges\": 3,", "\"edges\": 3, \"edges\": 3,");
    let loaded = read(&analysis, &json);
    assert_problem(
        &loaded,
        Code::E701,
        "sets.edges",
        "set `edges` is given more than once",
    );
}

#[test]
fn sets_need_a_size_only_when_used() {
    let analysis = analyse(PROGRAM);
    // `unused_set` is only named by `len`, which needs its size.
    let loaded = read(&analysis, &variant("sets", "unused_set", None));
    assert_eq!(only(&loaded, Code::E701).path, "sets.unused_set");
    // `spare` is not used at all: its size defaults to 0.
    let data = read(&analysis, GOOD).data.unwrap();
    assert_eq!(data.set_size(SetId(3)), 0);
    let data = read(&analysis, &variant("sets", "spare", Some("5")))
        .data
        .unwrap();
    assert_eq!(data.set_size(SetId(3)), 5);
}

#[test]
fn instance_values_take_precedence() {
    let analysis = analyse(PROGRAM);
    let program = &analysis.program;
    let dat = |name: &str| DatId(program.dats.iter().position(|d| d.name == name).unwrap() as u32);

    // Without data: the program's initialisers.
    let data = read(&analysis, GOOD).data.unwrap();
    assert_eq!(data.dat_value(dat("p_kind"), 1, 2, 0), Value::Int(7));
    assert_eq!(data.dat_value(dat("p_q"), 2, 1, 1), Value::Double(-2.0));
    assert_eq!(data.dat_value(dat("p_res"), 1, 0, 0), Value::Double(0.0));
    assert_eq!(data.const_value(ConstId(0)), &[Value::Double(0.5)]);
    assert_eq!(
        data.const_value(ConstId(1)),
        &[Value::Double(2.0), Value::Double(3.0)]
    );
    assert_eq!(data.global_value(GlobalId(0)), &[Value::Double(4.0)]);
    assert!(matches!(
        data.dats[dat("p_q").index()],
        DatValues::Uniform(_)
    ));

    // With data: the data's values.
    let mut document: serde_json::Value = serde_json::from_str(GOOD).unwrap();
    document["dats"]["p_kind"] = serde_json::json!([[1], [2], [3]]);
    document["dats"]["p_q"] = serde_json::json!([[1, 2], [3, 4], [5, 6]]);
    document["dats"]["p_flag"] = serde_json::json!([true, 0, 1]);
    document["consts"]["scale"] = serde_json::json!([5, 6.5]);
    document["globals"] = serde_json::json!({ "g_total": [9] });
    let loaded = read(&analysis, &document.to_string());
    assert!(loaded.problems.is_empty(), "{:#?}", loaded.problems);
    let data = loaded.data.unwrap();
    assert_eq!(data.dat_value(dat("p_kind"), 1, 2, 0), Value::Int(3));
    assert_eq!(data.dat_value(dat("p_q"), 2, 1, 1), Value::Double(4.0));
    assert_eq!(data.dat_value(dat("p_flag"), 1, 0, 0), Value::Bool(true));
    assert_eq!(data.dat_value(dat("p_flag"), 1, 1, 0), Value::Bool(false));
    assert_eq!(
        data.const_value(ConstId(1)),
        &[Value::Double(5.0), Value::Double(6.5)]
    );
    assert_eq!(data.global_value(GlobalId(0)), &[Value::Double(9.0)]);
    assert_eq!(data.set_size(SetId(0)), 3);
}

#[test]
fn dats_initialised_from_an_instance_const_follow_it() {
    let analysis = analyse(
        "
const qinf: double[2];
set cells;
dat p_q: double[2] on cells = qinf;
global g: double;
kernel k(const double *q, double *g) { *g += q[0] + q[1]; }
main { par_loop k over cells (p_q READ, g INC); }",
    );
    let json = r#"{"sets": {"cells": 2}, "consts": {"qinf": [1.25, -3.5]}}"#;
    let data = read(&analysis, json).data.unwrap();
    assert_eq!(data.dat_value(DatId(0), 2, 1, 0), Value::Double(1.25));
    assert_eq!(data.dat_value(DatId(0), 2, 1, 1), Value::Double(-3.5));
}

#[test]
fn problems_display_with_their_path() {
    let analysis = analyse(PROGRAM);
    let loaded = read(
        &analysis,
        &variant("maps", "pecell", Some("[[0, 1], [1, 9], [2, 0]]")),
    );
    assert_eq!(
        loaded.problems[0].to_string(),
        "maps.pecell[1][1]: target 9 is outside set `cells` of 3 elements"
    );
}

#[test]
fn e701_program_values_that_no_initialiser_can_hold() {
    let analysis = analyse(
        "
const big: double = 1e308 * 10.0;
set cells;
dat p_q: double on cells;
global g: double;
kernel k(const double *q, double *g) { *g += q[0] + big; }
main { par_loop k over cells (p_q READ, g INC); }",
    );
    let loaded = read(&analysis, r#"{"sets": {"cells": 2}}"#);
    assert_problem(
        &loaded,
        Code::E701,
        "consts.big",
        "the program's value of const `big` is inf (component 0), which a POETS initialiser cannot hold; give a finite value here",
    );
    // A finite value in the data is the fix.
    let loaded = read(
        &analysis,
        r#"{"sets": {"cells": 2}, "consts": {"big": 1e308}}"#,
    );
    assert!(loaded.problems.is_empty(), "{:#?}", loaded.problems);
}

#[test]
fn e701_dats_too_large_for_a_run_are_refused_before_allocation() {
    // 2,048 elements of dimension 65,536 are 2^27 values: the limit. One
    // more dat of dimension 1 crosses it.
    let program = "set cells;\n\
                   dat p_wide: double[65536] on cells = 1.0;\n\
                   dat p_one: double on cells;\n\
                   main { print(\"%d\", len(cells)); }\n";
    let analysis = analyse(program);
    let loaded = read(&analysis, r#"{"sets": {"cells": 2048}}"#);
    assert_problem(
        &loaded,
        Code::E701,
        "dats.p_one",
        "dat `p_one` needs 2048 values (2048 elements of dimension 1), which brings the dats to more than the 134217728 values a run may hold",
    );
    let loaded = read(&analysis, r#"{"sets": {"cells": 2047}}"#);
    assert!(loaded.problems.is_empty(), "{:#?}", loaded.problems);
}

#[test]
fn the_synthetic_airfoil_mesh_fits_the_airfoil_example_with_the_sizes_it_promises() {
    let analysis = instance::synth::airfoil_example();
    assert!(!analysis.has_errors(), "{:?}", analysis.diagnostics);
    let side = 7;
    let json = instance::synth::airfoil_like(side);
    let loaded = instance::read(json.as_bytes(), &analysis.program, &mut NoProgress);
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    let data = loaded.data.unwrap();
    let size = |name: &str| {
        let id = analysis
            .program
            .sets
            .iter()
            .position(|s| s.name == name)
            .unwrap();
        data.set_size(SetId(id as u32))
    };
    let side = side as u32;
    assert_eq!(size("cells"), side * side);
    assert_eq!(size("nodes"), (side + 1) * (side + 1));
    assert_eq!(size("edges"), 2 * side * (side - 1));
    assert_eq!(size("bedges"), 4 * side);
}

/// A map that only `idx[M[K]]` reads must be given, and its targets must be
/// inside the target set, as for an indirect dat's map.
#[test]
fn a_map_read_only_by_an_index_argument_is_required_and_checked() {
    let analysis = analyse(
        "set nodes;\nset cells;\nmap pcell: cells -> nodes[2];\nglobal g: int;\n\
         kernel k(const int *n, int *s) { *s += n[0]; }\n\
         main {\n    par_loop k over cells (idx[pcell[1]], g INC);\n    print(\"%d\", g);\n}\n",
    );
    let loaded = read(&analysis, r#"{"sets": {"cells": 2, "nodes": 3}}"#);
    let problem = only(&loaded, Code::E701);
    assert_eq!(problem.path, "maps.pcell");
    let loaded = read(
        &analysis,
        r#"{"sets": {"cells": 2, "nodes": 3}, "maps": {"pcell": [[0, 1], [2, 3]]}}"#,
    );
    assert_eq!(only(&loaded, Code::E702).path, "maps.pcell[1][1]");
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_without_blocking() {
    let directory = tempfile::tempdir().unwrap();
    let fifo = directory.path().join("mesh.json");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let program = analyse_text(
        Path::new("p.op2"),
        "set s;\nmain { }\n",
        &Options { require_main: true },
    );
    assert!(!program.has_errors(), "{:#?}", program.diagnostics);
    // No writer: a blocking open would wait forever.
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let result = instance::read_file(&fifo, &program.program, &mut NoProgress);
        let _ = send.send(result.map(|_| ()).map_err(|e| e.to_string()));
    });
    let result = receive
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("reading a FIFO blocked");
    assert_eq!(result, Err("not a regular file".to_owned()));
}
