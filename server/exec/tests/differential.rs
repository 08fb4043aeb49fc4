//! The compiled engine against the interpreter on generated programs:
//! random kernels over every scalar type (mixed arithmetic, conversions,
//! casts, shifts, integer division that may fault, computed indices that
//! may leave their array, loops, built-ins, reductions), each run by both
//! engines, which must print the same text and end in bit-identical
//! states, or fail with the same message; the same for `op2 simulate`'s
//! two engines on each program's graph. `OP2_DIFFERENTIAL_PROGRAMS`
//! sets how many (default 150, a few seconds); thousands are a documented
//! campaign (docs/benchmarks.md).

#![allow(clippy::print_stderr)]

use crate::support;

use std::fmt::Write;

use support::{assert_same_run, load};

/// xorshift64*: a seeded, reproducible stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const TYPES: [&str; 7] = ["double", "float", "int", "uint", "ll", "ull", "bool"];

/// A dat of the generated program.
struct Dat {
    name: &'static str,
    ty: &'static str,
    dim: usize,
    on_nodes: bool,
}

const DATS: [Dat; 10] = [
    Dat {
        name: "c_d",
        ty: "double",
        dim: 2,
        on_nodes: false,
    },
    Dat {
        name: "c_f",
        ty: "float",
        dim: 1,
        on_nodes: false,
    },
    Dat {
        name: "c_i",
        ty: "int",
        dim: 2,
        on_nodes: false,
    },
    Dat {
        name: "c_u",
        ty: "uint",
        dim: 1,
        on_nodes: false,
    },
    Dat {
        name: "c_l",
        ty: "ll",
        dim: 1,
        on_nodes: false,
    },
    Dat {
        name: "c_q",
        ty: "ull",
        dim: 1,
        on_nodes: false,
    },
    Dat {
        name: "c_b",
        ty: "bool",
        dim: 1,
        on_nodes: false,
    },
    Dat {
        name: "n_d",
        ty: "double",
        dim: 3,
        on_nodes: true,
    },
    Dat {
        name: "n_f",
        ty: "float",
        dim: 1,
        on_nodes: true,
    },
    Dat {
        name: "n_i",
        ty: "int",
        dim: 1,
        on_nodes: true,
    },
];

/// A kernel parameter being generated: its name, type, length and what
/// the body may do with it.
struct Param {
    name: String,
    ty: &'static str,
    dim: usize,
    readable: bool,
    /// `=` allowed (WRITE, RW).
    writable: bool,
    /// Only `+=`/`-=` (INC).
    increment: bool,
}

struct Local {
    name: String,
    ty: &'static str,
    dim: usize,
}

struct Gen<'a> {
    rng: &'a mut Rng,
    params: Vec<Param>,
    locals: Vec<Local>,
    /// Names of loop counters in scope (int, 0..3).
    counters: Vec<String>,
    next_name: usize,
}

impl Gen<'_> {
    fn fresh(&mut self, prefix: &str) -> String {
        self.next_name += 1;
        format!("{prefix}{}", self.next_name)
    }

    fn literal(&mut self) -> String {
        match self.rng.below(8) {
            0 => format!("{}", self.rng.below(9)),
            1 => format!("-{}", self.rng.below(300)),
            2 => format!("{}.{}", self.rng.below(5), self.rng.below(1000)),
            3 => format!("{}.{}f", self.rng.below(5), self.rng.below(1000)),
            4 => format!("{}u", self.rng.below(70_000)),
            5 => format!("{}e{}", 1 + self.rng.below(9), self.rng.below(30)),
            6 => "2147483647".into(),
            _ => format!("0.{}", self.rng.below(100_000)),
        }
    }

    /// An index into an array of length `dim`: usually a literal in range,
    /// sometimes a loop counter (in range or not, which faults alike).
    fn index(&mut self, dim: usize) -> String {
        if !self.counters.is_empty() && self.rng.chance(40) {
            let counter = self.rng.pick(&self.counters).clone();
            if self.rng.chance(10) {
                return format!("{counter} + {}", dim.saturating_sub(2));
            }
            return format!("{counter} % {dim}");
        }
        self.rng.below(dim).to_string()
    }

    fn operand(&mut self, depth: u32) -> String {
        let readable: Vec<usize> = (0..self.params.len())
            .filter(|&k| self.params[k].readable)
            .collect();
        match self.rng.below(6) {
            0 | 1 if !readable.is_empty() => {
                let k = *self.rng.pick(&readable);
                let dim = self.params[k].dim;
                let index = self.index(dim);
                format!("{}[{index}]", self.params[k].name)
            }
            2 if !self.locals.is_empty() => {
                let k = self.rng.below(self.locals.len());
                let (name, dim) = (self.locals[k].name.clone(), self.locals[k].dim);
                if dim == 1 {
                    name
                } else {
                    let index = self.index(dim);
                    format!("{name}[{index}]")
                }
            }
            3 if !self.counters.is_empty() => self.rng.pick(&self.counters).clone(),
            4 if depth > 0 => format!("({})", self.expr(depth - 1)),
            _ => self.literal(),
        }
    }

    fn expr(&mut self, depth: u32) -> String {
        if depth == 0 {
            return self.operand(0);
        }
        let d = depth - 1;
        match self.rng.below(17) {
            0..=4 => {
                let op = *self.rng.pick(&["+", "-", "*", "/", "+", "*"]);
                format!("{} {op} {}", self.operand(d), self.operand(d))
            }
            5 => {
                let op = *self.rng.pick(&["<", "<=", ">", ">=", "==", "!="]);
                format!("{} {op} {}", self.operand(d), self.operand(d))
            }
            6 => {
                let op = *self.rng.pick(&["&&", "||"]);
                format!("{} {op} {}", self.operand(d), self.operand(d))
            }
            7 => format!(
                "{} ? {} : {}",
                self.operand(d),
                self.operand(d),
                self.operand(d)
            ),
            8 => {
                let ty = *self.rng.pick(&TYPES);
                format!("({ty})({})", self.expr(d))
            }
            9 => {
                // Integer operators on integer casts.
                let ty = *self.rng.pick(&["int", "uint", "ll", "ull"]);
                let op = *self.rng.pick(&["%", "/", "&", "|", "^", "<<", ">>"]);
                let right = if matches!(op, "<<" | ">>") {
                    format!("{}", self.rng.below(70))
                } else if self.rng.chance(85) {
                    format!("(({ty})({}) | 1)", self.operand(d))
                } else {
                    format!("({ty})({})", self.operand(d))
                };
                format!("({ty})({}) {op} {right}", self.operand(d))
            }
            10 => {
                let f = *self.rng.pick(&[
                    "sqrt", "fabs", "exp", "log", "sin", "cos", "atan", "floor", "ceil", "round",
                    "tan", "asin", "acos", "log10",
                ]);
                format!("{f}({})", self.expr(d))
            }
            11 => {
                let f = *self
                    .rng
                    .pick(&["pow", "atan2", "fmin", "fmax", "min", "max"]);
                format!("{f}({}, {})", self.operand(d), self.operand(d))
            }
            12 => {
                let f = *self.rng.pick(&["abs", "isnan", "isinf"]);
                format!("{f}({})", self.operand(d))
            }
            13 => format!("-{}", self.operand(d)),
            14 => format!("!{}", self.operand(d)),
            15 => self.chain(d),
            _ => format!("~(int)({})", self.operand(d)),
        }
    }

    /// A flat left-associated chain of 17 to 24 operators (more than
    /// `hir::CHAIN_MIN`, so that it lowers to one `Chain`), its operators in
    /// falling precedence so that every one is on the chain's left spine,
    /// over operands of mixed types.
    fn chain(&mut self, depth: u32) -> String {
        const OPS: [&str; 12] = [
            "*", "/", "+", "-", "<", ">=", "==", "!=", "&&", "||", "+", "*",
        ];
        let links = 17 + self.rng.below(8);
        let mut ops: Vec<usize> = (0..links).map(|_| self.rng.below(OPS.len())).collect();
        // `+` and `*` are twice as likely; sort by precedence (table order).
        let rank = |k: usize| match k {
            10 => 2,
            11 => 0,
            k => k,
        };
        ops.sort_by_key(|&k| rank(k));
        let mut text = self.operand(depth);
        for k in ops {
            let _ = write!(text, " {} {}", OPS[k], self.operand(depth));
        }
        text
    }

    fn statement(&mut self, out: &mut String, depth: u32, indent: usize) {
        let pad = " ".repeat(indent);
        match self.rng.below(9) {
            0 | 1 => {
                let ty = *self.rng.pick(&TYPES);
                let name = self.fresh("t");
                let dim = if self.rng.chance(30) { 3 } else { 1 };
                if dim == 1 {
                    let _ = writeln!(out, "{pad}{ty} {name} = {};", self.expr(2));
                } else {
                    let items: Vec<String> = (0..dim).map(|_| self.expr(1)).collect();
                    let _ = writeln!(out, "{pad}{ty} {name}[{dim}] = {{{}}};", items.join(", "));
                }
                self.locals.push(Local { name, ty, dim });
            }
            2..=4 => {
                let targets: Vec<usize> = (0..self.params.len())
                    .filter(|&k| self.params[k].writable || self.params[k].increment)
                    .collect();
                if targets.is_empty() {
                    return;
                }
                let k = *self.rng.pick(&targets);
                let dim = self.params[k].dim;
                let index = self.index(dim);
                let name = self.params[k].name.clone();
                let op = if self.params[k].increment {
                    *self.rng.pick(&["+=", "-="])
                } else if self.params[k].readable && self.params[k].ty != "bool" {
                    *self.rng.pick(&["=", "+=", "*=", "-="])
                } else {
                    "="
                };
                let value = self.expr(2);
                let _ = writeln!(out, "{pad}{name}[{index}] {op} {value};");
            }
            5 => {
                let locals: Vec<usize> = (0..self.locals.len()).collect();
                if locals.is_empty() {
                    return;
                }
                let k = *self.rng.pick(&locals);
                let (name, dim, ty) = (
                    self.locals[k].name.clone(),
                    self.locals[k].dim,
                    self.locals[k].ty,
                );
                let place = if dim == 1 {
                    name
                } else {
                    let index = self.index(dim);
                    format!("{name}[{index}]")
                };
                let op = if ty == "bool" {
                    "="
                } else {
                    *self.rng.pick(&["=", "+=", "-=", "*=", "/="])
                };
                if self.rng.chance(20) && ty != "bool" {
                    let _ = writeln!(out, "{pad}{place}++;");
                } else {
                    let _ = writeln!(out, "{pad}{place} {op} {};", self.expr(2));
                }
            }
            6 if depth > 0 => {
                let _ = writeln!(out, "{pad}if ({}) {{", self.expr(2));
                let scope = self.locals.len();
                self.block(out, depth - 1, indent + 4);
                self.locals.truncate(scope);
                if self.rng.chance(50) {
                    let _ = writeln!(out, "{pad}}} else {{");
                    self.block(out, depth - 1, indent + 4);
                    self.locals.truncate(scope);
                }
                let _ = writeln!(out, "{pad}}}");
            }
            7 if depth > 0 => {
                let counter = self.fresh("j");
                let _ = writeln!(
                    out,
                    "{pad}for (int {counter} = 0; {counter} < 3; {counter}++) {{"
                );
                let scope = self.locals.len();
                self.counters.push(counter);
                self.block(out, depth - 1, indent + 4);
                if self.rng.chance(20) {
                    let _ = writeln!(
                        out,
                        "{pad}    if ({}) {};",
                        self.expr(1),
                        self.rng.pick(&["break", "continue"])
                    );
                }
                self.counters.pop();
                self.locals.truncate(scope);
                let _ = writeln!(out, "{pad}}}");
            }
            8 if self.rng.chance(15) => {
                let _ = writeln!(out, "{pad}if ({}) return;", self.expr(1));
            }
            _ => {}
        }
    }

    fn block(&mut self, out: &mut String, depth: u32, indent: usize) {
        for _ in 0..1 + self.rng.below(4) {
            self.statement(out, depth, indent);
        }
    }
}

/// One random program and its instance, and whether `main` fetches a dat.
fn program(seed: u64) -> (String, String, bool) {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    // The instance's shape and the fetch come from a stream of their own,
    // so that the kernels are those every seed had before `fetch`.
    let mut shape = Rng(seed.wrapping_mul(0xD1B5_4A32_D192_ED03) | 1);
    let cells = 1 + shape.below(40);
    let nodes = 1 + shape.below(20);
    // Half the programs copy a dat into a global between two loops.
    let fetch = shape.chance(50).then(|| {
        let dat = shape.pick(&DATS);
        let size = if dat.on_nodes { nodes } else { cells };
        (dat, size * dat.dim)
    });
    let mut text = String::from(
        "set cells;\nset nodes;\nmap c2n: cells -> nodes[3];\nconst k_d: double[3];\nconst k_i: int;\n",
    );
    for dat in &DATS {
        let set = if dat.on_nodes { "nodes" } else { "cells" };
        let ty = if dat.dim == 1 {
            dat.ty.to_owned()
        } else {
            format!("{}[{}]", dat.ty, dat.dim)
        };
        let _ = writeln!(text, "dat {}: {ty} on {set};", dat.name);
    }
    let globals = [
        ("g_d", "double", "INC"),
        ("g_f", "float", "INC"),
        ("g_i", "int", "INC"),
        ("g_l", "ll", "INC"),
        ("g_lo", "double", "MIN"),
        ("g_hi", "int", "MAX"),
        ("g_r", "double", "READ"),
    ];
    for (name, ty, _) in globals {
        let _ = writeln!(text, "global {name}: {ty};");
    }
    if let Some((dat, len)) = fetch {
        let _ = writeln!(text, "global f_{}: {}[{len}];", dat.name, dat.ty);
    }
    let mut main = String::new();
    let loops = 2 + rng.below(3);
    let fetch_after = shape.below(loops);
    for l in 0..loops {
        let mut kg = Gen {
            rng: &mut rng,
            params: Vec::new(),
            locals: Vec::new(),
            counters: Vec::new(),
            next_name: 0,
        };
        let mut args = Vec::new();
        let mut signature = Vec::new();
        let mut used_dats: Vec<&str> = Vec::new();
        let count = 2 + kg.rng.below(4);
        for p in 0..count {
            let name = format!("a{p}");
            let choice = kg.rng.below(10);
            if choice < 7 {
                let dat = kg.rng.pick(&DATS);
                if used_dats.contains(&dat.name) {
                    continue;
                }
                used_dats.push(dat.name);
                let (arg, direct) = if dat.on_nodes {
                    let i = kg.rng.below(3);
                    (format!("{}[c2n[{i}]]", dat.name), false)
                } else {
                    (dat.name.to_owned(), true)
                };
                let modes: &[&str] = if dat.ty == "bool" {
                    &["READ", "RW", "WRITE"]
                } else if direct {
                    &["READ", "RW", "WRITE", "INC", "READ"]
                } else {
                    &["READ", "INC", "READ"]
                };
                let mode = *kg.rng.pick(modes);
                let constness = if mode == "READ" { "const " } else { "" };
                signature.push(format!("{constness}{} *{name}", dat.ty));
                args.push(format!("{arg} {mode}"));
                kg.params.push(Param {
                    name,
                    ty: dat.ty,
                    dim: dat.dim,
                    readable: matches!(mode, "READ" | "RW"),
                    writable: matches!(mode, "RW" | "WRITE"),
                    increment: mode == "INC",
                });
                if mode == "WRITE" {
                    // Every component written first, so no read sees an
                    // undefined value.
                    let p = kg.params.last_mut().expect("just pushed");
                    p.readable = false;
                }
            } else if choice < 9 {
                let (global, ty, mode) = *kg.rng.pick(&globals);
                if used_dats.contains(&global) {
                    continue;
                }
                used_dats.push(global);
                let constness = if mode == "READ" { "const " } else { "" };
                signature.push(format!("{constness}{ty} *{name}"));
                args.push(format!("{global} {mode}"));
                kg.params.push(Param {
                    name,
                    ty,
                    dim: 1,
                    readable: matches!(mode, "READ" | "MIN" | "MAX"),
                    writable: matches!(mode, "MIN" | "MAX"),
                    increment: mode == "INC",
                });
            } else if kg.rng.chance(50) {
                signature.push(format!("const double *{name}"));
                args.push("k_d".into());
                kg.params.push(Param {
                    name,
                    ty: "double",
                    dim: 3,
                    readable: true,
                    writable: false,
                    increment: false,
                });
            } else {
                signature.push(format!("const int *{name}"));
                args.push("len(nodes)".into());
                kg.params.push(Param {
                    name,
                    ty: "int",
                    dim: 1,
                    readable: true,
                    writable: false,
                    increment: false,
                });
            }
        }
        let mut body = String::new();
        // WRITE parameters: every component first.
        for p in 0..kg.params.len() {
            if kg.params[p].writable && !kg.params[p].readable {
                for c in 0..kg.params[p].dim {
                    let value = kg.expr(1);
                    let _ = writeln!(body, "    {}[{c}] = {value};", kg.params[p].name);
                }
            }
        }
        kg.block(&mut body, 2, 4);
        let _ = writeln!(text, "kernel k{l}({}) {{\n{body}}}", signature.join(", "));
        let _ = writeln!(main, "    par_loop k{l} over cells ({});", args.join(", "));
        if let Some((dat, _)) = fetch.filter(|_| l == fetch_after) {
            let _ = writeln!(main, "    fetch {name} into f_{name};", name = dat.name);
        }
    }
    let _ = writeln!(
        main,
        "    print(\"%g %g %d %d %g %d\", g_d, g_f, g_i, g_l, g_lo, g_hi);"
    );
    let _ = writeln!(text, "main {{\n{main}}}");
    // The instance.
    let mut json =
        format!("{{\"sets\": {{\"cells\": {cells}, \"nodes\": {nodes}}}, \"maps\": {{\"c2n\": [");
    for c in 0..cells {
        let targets: Vec<String> = (0..3).map(|_| rng.below(nodes).to_string()).collect();
        let _ = write!(
            json,
            "{}[{}]",
            if c == 0 { "" } else { ", " },
            targets.join(", ")
        );
    }
    json.push_str("]}, \"dats\": {");
    for (d, dat) in DATS.iter().enumerate() {
        let n = if dat.on_nodes { nodes } else { cells };
        let values: Vec<String> = (0..n)
            .map(|_| {
                let one = |rng: &mut Rng| match dat.ty {
                    "double" | "float" => {
                        format!("{}.{}", rng.below(20) as i64 - 10, rng.below(1000))
                    }
                    "bool" => rng.chance(50).to_string(),
                    "uint" | "ull" => rng.below(1_000_000).to_string(),
                    _ => (rng.below(2_000_000) as i64 - 1_000_000).to_string(),
                };
                if dat.dim == 1 {
                    one(&mut rng)
                } else {
                    let items: Vec<String> = (0..dat.dim).map(|_| one(&mut rng)).collect();
                    format!("[{}]", items.join(", "))
                }
            })
            .collect();
        let _ = write!(
            json,
            "{}\"{}\": [{}]",
            if d == 0 { "" } else { ", " },
            dat.name,
            values.join(", ")
        );
    }
    let _ = write!(
        json,
        "}}, \"consts\": {{\"k_d\": [0.5, -1.25, {}.5], \"k_i\": {}}}, \"globals\": {{\"g_r\": 2.5, \"g_lo\": 1e300, \"g_hi\": -100}}}}",
        rng.below(9),
        rng.below(9)
    );
    (text, json, fetch.is_some())
}

#[test]
fn generated_programs_run_identically_under_both_engines() {
    let count: u64 = std::env::var("OP2_DIFFERENTIAL_PROGRAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150);
    let mut accepted = 0;
    let mut faulted = 0;
    let mut chains = 0;
    let mut fetched = 0;
    let mut rejected = Vec::new();
    for seed in 0..count {
        let (text, json, fetches) = program(seed);
        let analysis = op2_analysis::analyse_text(
            std::path::Path::new("generated.op2"),
            &text,
            &op2_analysis::Options { require_main: true },
        );
        if analysis.has_errors() {
            rejected.push((seed, analysis.diagnostics[0].message.clone()));
            continue;
        }
        let case = load("generated.op2", &text, json.as_bytes());
        chains += usize::from(case.analysis.program.kernels.iter().any(|k| {
            let mut found = false;
            for stmt in &k.body.statements {
                op2_analysis::hir::walk_stmt_exprs(stmt, &mut |e| {
                    found |= matches!(e.kind, op2_analysis::hir::ExprKind::Chain(..));
                });
            }
            found
        }));
        let interpreted = case.run_with(op2_exec::Engine::Interp, 10_000);
        let compiled = case.run_with(op2_exec::Engine::Compiled, 10_000);
        let result = std::panic::catch_unwind(|| assert_same_run(&interpreted, &compiled));
        if result.is_err() {
            panic!("seed {seed} differs; the program:\n{text}\ninstance: {json}");
        }
        // The simulator's two engines, on the program's graph (a fetch is
        // the graph's reduction).
        let result = std::panic::catch_unwind(|| {
            case.assert_engines_simulate_alike(seed, 10_000);
        });
        if result.is_err() {
            panic!("seed {seed} simulates differently; the program:\n{text}\ninstance: {json}");
        }
        accepted += 1;
        fetched += usize::from(fetches);
        faulted += usize::from(interpreted.is_err());
    }
    eprintln!(
        "{count} generated, {accepted} valid and run by both engines, {faulted} of them fault alike, {chains} with a flat operator chain, {fetched} fetching a dat; rejections: {:?}",
        &rejected[..rejected.len().min(3)]
    );
    // The generator must mostly produce valid programs, or this test would
    // check little.
    assert!(
        accepted * 10 >= count as usize * 8,
        "only {accepted} of {count} generated programs are valid; first rejections: {:?}",
        &rejected[..rejected.len().min(5)]
    );
    assert!(
        (accepted - faulted) * 2 >= accepted,
        "most generated programs fault ({faulted} of {accepted})"
    );
    // `fetch` runs in both engines, between loops.
    assert!(
        fetched * 4 >= accepted,
        "only {fetched} of {accepted} programs fetch a dat"
    );
    // Long flat chains (`hir::ExprKind::Chain`) are compiled too.
    assert!(
        chains * 10 >= accepted,
        "only {chains} of {accepted} programs have a flat operator chain"
    );
}
