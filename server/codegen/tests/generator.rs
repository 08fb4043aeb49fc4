//! A `Generator` kept across the versions of an edited program builds what a
//! fresh build of each version builds, whatever it kept: kernel functions
//! reused while the kernel is unchanged (or only moved), the rest of the
//! graph type reused while only kernel bodies and positions changed.

use crate::graph_type_support;

use std::path::Path;

use graph_type_support::xml;
use op2_analysis::{Analyser, Analysis, NoImports, Options};
use op2_codegen::Generator;
use op2_syntax::Parse;

const BASE: &str = "\
// Several kernels, consts read in bodies and passed as arguments, globals.
const gam: double = 1.4;
const gm1: double = gam - 1.0;
const scale: double[2] = {0.5, 2.0};

set nodes;
set edges;
set cells;

map pedge: edges -> nodes[2];
map pecell: edges -> cells[2];

dat p_x: double[2] on nodes;
dat p_q: double[4] on cells;
dat p_res: double[4] on cells;
dat p_a: double on cells;
dat p_b: double on cells;

global rms: double;
global top: double;

kernel flux(const double *x1, const double *x2, const double *q1, const double *q2,
            double *res1, double *res2) {
    double dx = x1[0] - x2[0];
    double f = gm1 * (q1[0] - q2[0]) * dx + 0.0;
    for (int n = 0; n < 4; n++) {
        res1[n] += f * scale[0];
        res2[n] -= f * scale[1];
    }
}

kernel copy(double *a, double *b) {
    a[0] = b[0] * gam;
}

kernel update(double *q, const double *res, double *r, double *m, const double *s) {
    for (int n = 0; n < 4; n++) {
        q[n] -= res[n] * s[0];
        *r += res[n] * res[n];
    }
    if (q[0] > *m) {
        *m = q[0];
    }
}

main {
    for (int iter = 0; iter < 3; iter++) {
        par_loop flux over edges (p_x[pedge[0]] READ, p_x[pedge[1]] READ,
            p_q[pecell[0]] READ, p_q[pecell[1]] READ,
            p_res[pecell[0]] INC, p_res[pecell[1]] INC);
        par_loop copy over cells (p_a WRITE, p_b READ);
        rms = 0.0;
        par_loop update over cells (p_q RW, p_res READ, rms INC, top MAX, scale);
        print(\"%d %g %g\", iter, rms, top);
    }
}
";

/// One version of the edited program: the edits that make it from the one
/// before (each replaces every occurrence of a text), and what the
/// generator is expected to reuse when it builds it.
struct Step {
    what: &'static str,
    edits: &'static [(&'static str, &'static str)],
    expect: Option<Reuse>,
}

/// What one build reused: kernel functions reused and printed, and whether
/// the rest of the graph type was reused.
#[derive(Debug, PartialEq, Eq)]
struct Reuse {
    kernels_reused: usize,
    kernels_printed: usize,
    graph_reused: bool,
}

const fn reuse(kernels_reused: usize, kernels_printed: usize, graph_reused: bool) -> Option<Reuse> {
    Some(Reuse {
        kernels_reused,
        kernels_printed,
        graph_reused,
    })
}

/// The kernel `copy` of [`BASE`].
macro_rules! copy_kernel {
    () => {
        "kernel copy(double *a, double *b) {\n    a[0] = b[0] * gam;\n}\n\n"
    };
}

const COPY: &str = copy_kernel!();

const STEPS: &[Step] = &[
    Step {
        what: "the first build",
        edits: &[],
        expect: reuse(0, 3, false),
    },
    Step {
        what: "the same text again",
        edits: &[],
        expect: reuse(3, 0, true),
    },
    // That kernel alone is printed again; `copy` and `update` moved by a
    // character and are compared apart from positions.
    Step {
        what: "an edit in the body of one kernel",
        edits: &[("* dx + 0.0", "* dx + 0.25")],
        expect: reuse(2, 1, true),
    },
    // Whether a kernel prints decides the execute handlers that call it
    // (their print buffer and the arguments they pass): the graph type is
    // built again, not only the kernel.
    Step {
        what: "a kernel's first print added",
        edits: &[(
            "a[0] = b[0] * gam;",
            "a[0] = b[0] * gam;\n    print(\"x\");",
        )],
        expect: reuse(2, 1, false),
    },
    Step {
        what: "a second print added",
        edits: &[("print(\"x\");", "print(\"x\");\n    print(\"y\");")],
        expect: reuse(2, 1, true),
    },
    Step {
        what: "a kernel's prints removed",
        edits: &[("\n    print(\"x\");\n    print(\"y\");", "")],
        expect: reuse(2, 1, false),
    },
    // `copy`'s second parameter becomes writable, so its function loses a
    // `const` although its text is the same.
    Step {
        what: "a direct argument's mode changed",
        edits: &[("p_b READ", "p_b RW")],
        expect: reuse(2, 1, false),
    },
    Step {
        what: "the mode changed back",
        edits: &[("p_b RW", "p_b READ")],
        expect: reuse(2, 1, false),
    },
    // Pins and state change.
    Step {
        what: "indirect increments made read-write",
        edits: &[(
            "p_res[pecell[0]] INC, p_res[pecell[1]] INC",
            "p_res[pecell[0]] RW, p_res[pecell[1]] RW",
        )],
        expect: reuse(3, 0, false),
    },
    // Unused, so warnings only; they shift the ids of consts, sets, dats
    // and globals.
    Step {
        what: "a const inserted before the others",
        edits: &[(
            "const gam: double = 1.4;\n",
            "const first: double = 3.0;\nconst gam: double = 1.4;\n",
        )],
        expect: None,
    },
    Step {
        what: "a set inserted before the others",
        edits: &[("set nodes;\n", "set early;\nset nodes;\n")],
        expect: None,
    },
    Step {
        what: "a dat inserted before the others",
        edits: &[(
            "dat p_x: double[2] on nodes;\n",
            "dat p_early: double on early;\ndat p_x: double[2] on nodes;\n",
        )],
        expect: None,
    },
    Step {
        what: "a global inserted before the others",
        edits: &[(
            "global rms: double;\n",
            "global g_early: double;\nglobal rms: double;\n",
        )],
        expect: None,
    },
    // The kernel reading it prints its new name.
    Step {
        what: "a const renamed where it is declared and read",
        edits: &[("gm1", "gm2")],
        expect: reuse(2, 1, false),
    },
    Step {
        what: "a kernel moved before another (kernel ids swap)",
        edits: &[
            (COPY, ""),
            ("kernel flux(", concat!(copy_kernel!(), "kernel flux(")),
        ],
        expect: None,
    },
    Step {
        what: "text inserted above everything (every kernel and main move)",
        edits: &[("// Several kernels", "\n\n// Several kernels")],
        expect: reuse(3, 0, true),
    },
    Step {
        what: "main changed",
        edits: &[("iter < 3", "iter < 30")],
        expect: reuse(3, 0, false),
    },
    // Names that reach the generated names of types, pins and members.
    Step {
        what: "a set renamed",
        edits: &[("cells", "cellz")],
        expect: reuse(3, 0, false),
    },
    Step {
        what: "a dat renamed",
        edits: &[("p_res", "p_residual")],
        expect: reuse(3, 0, false),
    },
    Step {
        what: "a global renamed",
        edits: &[("top", "peak")],
        expect: reuse(3, 0, false),
    },
    Step {
        what: "a kernel renamed",
        edits: &[("update", "advance")],
        expect: reuse(2, 1, false),
    },
    Step {
        what: "an invocation named with `as`",
        edits: &[("par_loop copy over", "par_loop copy as copy_ab over")],
        expect: reuse(3, 0, false),
    },
    // Only the call in the execute handler and the function's name change.
    Step {
        what: "a kernel renamed, its invocation named with `as`",
        edits: &[
            ("kernel copy(", "kernel duplicate("),
            ("par_loop copy as", "par_loop duplicate as"),
        ],
        expect: reuse(2, 1, false),
    },
    Step {
        what: "a kernel parameter renamed",
        edits: &[("*a, double *b", "*a, double *from"), ("b[0]", "from[0]")],
        expect: reuse(2, 1, false),
    },
    Step {
        what: "a local renamed",
        edits: &[("dx", "delta_x")],
        expect: reuse(2, 1, true),
    },
    Step {
        what: "a kernel removed with its par_loop and dats",
        edits: &[
            (
                "        par_loop duplicate as copy_ab over cellz (p_a WRITE, p_b READ);\n",
                "",
            ),
            (
                "kernel duplicate(double *a, double *from) {\n    a[0] = from[0] * gam;\n}\n\n",
                "",
            ),
            ("dat p_a: double on cellz;\ndat p_b: double on cellz;\n", ""),
        ],
        expect: reuse(2, 0, false),
    },
    Step {
        what: "a kernel added with its par_loop",
        edits: &[
            (
                "main {",
                "kernel damp(double *q) {\n    q[0] *= 0.5;\n}\n\nmain {",
            ),
            (
                "        rms = 0.0;",
                "        par_loop damp over cellz (p_q RW);\n        rms = 0.0;",
            ),
        ],
        expect: reuse(2, 1, false),
    },
];

/// The program being edited: its text, kept in a `Parse` edited as the
/// language server edits it, analysed by one warm `Analyser` and built by
/// one warm `Generator`.
struct Session {
    text: String,
    parse: Parse,
    analyser: Analyser,
    generator: Generator,
}

impl Session {
    fn new() -> Session {
        Session {
            text: BASE.to_owned(),
            parse: Parse::new(BASE),
            analyser: Analyser::new(),
            generator: Generator::new(),
        }
    }

    /// Replaces every `from` with `to`, one edit each.
    fn edit(&mut self, from: &str, to: &str) {
        assert!(
            self.text.contains(from),
            "`{from}` is not in\n{}",
            self.text
        );
        let mut after = 0;
        while let Some(found) = self.text[after..].find(from) {
            let range = after + found..after + found + from.len();
            self.text.replace_range(range.clone(), to);
            self.parse
                .edit(range.clone(), to)
                .expect("an edit inside the text");
            after = range.start + to.len();
        }
    }

    fn analyse(&mut self) -> Analysis {
        let analysis = self.analyser.analyse(
            Path::new("edited.op2"),
            &self.parse,
            &NoImports,
            &Options { require_main: true },
        );
        let errors: Vec<_> = analysis
            .diagnostics
            .iter()
            .filter(|d| d.severity == op2_syntax::Severity::Error)
            .map(|d| format!("{} {}", d.code, d.message))
            .collect();
        assert!(errors.is_empty(), "errors in\n{}\n{errors:#?}", self.text);
        analysis
    }

    /// Builds the current version with the warm generator and from scratch,
    /// checks that both agree, and returns what the generator reused.
    fn build(&mut self, step: &str) -> Reuse {
        let analysis = self.analyse();
        let before = self.generator.stats();
        let warm = self.generator.graph_type(&analysis, "edited");
        let fresh = op2_codegen::graph_type(&analysis, "edited");
        if let Some(difference) = first_difference(&xml(&warm), &xml(&fresh)) {
            panic!("{step}: the warm generator's XML differs from a fresh build\n{difference}");
        }
        assert!(
            warm == fresh,
            "{step}: the warm generator's graph type differs from a fresh build"
        );
        assert_eq!(
            op2_codegen::limits::check(analysis.lowered(), &warm),
            op2_codegen::limits::check(analysis.lowered(), &fresh),
            "{step}"
        );
        let after = self.generator.stats();
        Reuse {
            kernels_reused: after.kernels_reused - before.kernels_reused,
            kernels_printed: after.kernels_printed - before.kernels_printed,
            graph_reused: after.graphs_reused > before.graphs_reused,
        }
    }
}

/// The first line where two texts differ, with its number, if any.
fn first_difference(warm: &str, fresh: &str) -> Option<String> {
    let mut warm_lines = warm.lines();
    let mut fresh_lines = fresh.lines();
    for number in 1.. {
        match (warm_lines.next(), fresh_lines.next()) {
            (None, None) => return None,
            (w, f) if w == f => {}
            (w, f) => return Some(format!("line {number}:\n warm: {w:?}\nfresh: {f:?}")),
        }
    }
    None
}

#[test]
fn a_warm_generator_builds_what_a_fresh_build_builds_across_edits() {
    let mut session = Session::new();
    for step in STEPS {
        for (from, to) in step.edits {
            session.edit(from, to);
        }
        let reused = session.build(step.what);
        if let Some(expected) = &step.expect {
            assert_eq!(&reused, expected, "{}", step.what);
        }
    }
    // Back to the first version, as if reopened.
    session.text = BASE.to_owned();
    session.parse = Parse::new(BASE);
    session.build("back to the start");
}

#[test]
fn the_free_function_and_a_new_generator_agree_on_every_example() {
    for dir in [
        graph_type_support::examples_dir(),
        graph_type_support::programs_dir(),
    ] {
        for stem in graph_type_support::op2_stems(&dir) {
            let (_, analysis) = graph_type_support::analyse_file(&dir.join(format!("{stem}.op2")));
            let fresh = op2_codegen::graph_type(&analysis, &stem);
            let mut generator = Generator::new();
            for round in 0..2 {
                let warm = generator.graph_type(&analysis, &stem);
                assert!(warm == fresh, "{stem}, build {round}");
                assert!(xml(&warm) == xml(&fresh), "{stem}, build {round}");
            }
            assert_eq!(generator.stats().graphs_reused, 1, "{stem}");
        }
    }
}

#[test]
fn a_generator_can_be_shared_between_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Generator>();
}
