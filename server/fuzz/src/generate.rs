//! A grammar-aware generator of `.op2` programs: declarations of every kind,
//! kernels in the C subset whose parameters match the par_loops that call
//! them, and a `main` with loops, conditions, prints and par_loops. Most
//! programs are valid (so that they reach `build`, `run` and `simulate`);
//! some take a hostile turn: long operator chains, deep nesting, big
//! numbers, huge dimensions, print formats with huge widths, imports that
//! are missing or cyclic, thousands of declarations.

use std::fmt::Write as _;

use crate::rng::Rng;

/// A generated program: the root file and the files it imports.
#[derive(Clone, Debug, Default)]
pub struct Generated {
    /// The text of the root file.
    pub text: String,
    /// Imported files: name (relative to the root's folder) and text.
    pub imports: Vec<(String, String)>,
}

use op2_syntax::ast::ScalarType as Scalar;

/// The scalar types, `double` and `int` more often.
const SCALARS: &[Scalar] = &[
    Scalar::Double,
    Scalar::Double,
    Scalar::Double,
    Scalar::Float,
    Scalar::Int,
    Scalar::Int,
    Scalar::Uint,
    Scalar::Ll,
    Scalar::Ull,
    Scalar::Bool,
];

fn is_float(scalar: Scalar) -> bool {
    matches!(scalar, Scalar::Double | Scalar::Float)
}

#[derive(Clone, Debug)]
struct Ty {
    scalar: Scalar,
    dim: u64,
}

impl Ty {
    fn text(&self) -> String {
        if self.dim == 1 {
            self.scalar.keyword().to_string()
        } else {
            format!("{}[{}]", self.scalar.keyword(), self.dim)
        }
    }
}

#[derive(Clone, Debug)]
struct MapDecl {
    name: String,
    from: usize,
    to: usize,
    arity: u64,
}

#[derive(Clone, Debug)]
struct DatDecl {
    name: String,
    ty: Ty,
    set: usize,
}

#[derive(Clone, Debug)]
struct Named {
    name: String,
    ty: Ty,
    /// For a const: whether the program gives its value.
    valued: bool,
}

use op2_syntax::ast::AccessMode as Mode;

/// One argument of a planned par_loop and the parameter bound to it.
#[derive(Clone, Debug)]
struct Arg {
    text: String,
    ty: Ty,
    mode: Mode,
}

struct Gen<'r> {
    rng: &'r mut Rng,
    sets: Vec<String>,
    maps: Vec<MapDecl>,
    dats: Vec<DatDecl>,
    consts: Vec<Named>,
    globals: Vec<Named>,
    /// Whether this program takes the hostile turns.
    hostile: bool,
}

/// Generates one program.
pub fn program(rng: &mut Rng) -> Generated {
    let hostile = rng.one_in(12) && !crate::tame();
    let mut g = Gen {
        rng,
        sets: Vec::new(),
        maps: Vec::new(),
        dats: Vec::new(),
        consts: Vec::new(),
        globals: Vec::new(),
        hostile,
    };
    g.program()
}

impl Gen<'_> {
    fn program(&mut self) -> Generated {
        let many = self.hostile && self.rng.one_in(8);
        let set_count = if many {
            self.rng.size(3000)
        } else {
            self.rng.range(1, 4)
        };
        for i in 0..set_count {
            self.sets.push(format!("s_{i}"));
        }
        let map_count = if many {
            self.rng.size(2000)
        } else {
            self.rng.range(0, 4)
        };
        for i in 0..map_count {
            let arity = if self.hostile && self.rng.one_in(10) {
                *self.rng.pick(&[0, 100_000, 4_000_000_000, u64::MAX])
            } else {
                self.rng.range(1, 4) as u64
            };
            let from = self.rng.below(self.sets.len());
            let to = self.rng.below(self.sets.len());
            self.maps.push(MapDecl {
                name: format!("m_{i}"),
                from,
                to,
                arity,
            });
        }
        let dat_count = if many {
            self.rng.size(3000)
        } else {
            self.rng.range(1, 7)
        };
        for i in 0..dat_count {
            let ty = self.ty();
            let set = self.rng.below(self.sets.len());
            self.dats.push(DatDecl {
                name: format!("d_{i}"),
                ty,
                set,
            });
        }
        for i in 0..self.rng.range(0, 4) {
            let ty = self.ty();
            let valued = !self.rng.one_in(5);
            self.consts.push(Named {
                name: format!("c_{i}"),
                ty,
                valued,
            });
        }
        for i in 0..self.rng.range(1, 4) {
            let ty = self.ty();
            self.globals.push(Named {
                name: format!("g_{i}"),
                ty,
                valued: true,
            });
        }

        let mut items: Vec<String> = Vec::new();
        let mut lib: Vec<String> = Vec::new();
        let split = self.rng.one_in(6);
        for set in &self.sets.clone() {
            let item = format!("set {set};");
            if split && self.rng.chance(70) {
                lib.push(item);
            } else {
                items.push(item);
            }
        }
        for map in self.maps.clone() {
            let item = format!(
                "map {}: {} -> {}[{}];",
                map.name, self.sets[map.from], self.sets[map.to], map.arity
            );
            if split && self.rng.chance(70) {
                lib.push(item);
            } else {
                items.push(item);
            }
        }
        for (i, c) in self.consts.clone().iter().enumerate() {
            let value = if !c.valued {
                String::new()
            } else {
                format!(" = {}", self.const_init(&c.ty, i))
            };
            items.push(format!("const {}: {}{value};", c.name, c.ty.text()));
        }
        for dat in self.dats.clone() {
            let init = self.initialiser(&dat.ty);
            let item = format!(
                "dat {}: {} on {}{init};",
                dat.name,
                dat.ty.text(),
                self.sets[dat.set]
            );
            if split && self.rng.chance(40) {
                lib.push(item);
            } else {
                items.push(item);
            }
        }
        for global in self.globals.clone() {
            let init = self.initialiser(&global.ty);
            items.push(format!(
                "global {}: {}{init};",
                global.name,
                global.ty.text()
            ));
        }

        let mut main_body = String::new();
        let loops = self.rng.range(0, 4);
        for k in 0..loops {
            let (kernel, call) = self.kernel_and_loop(k);
            items.push(kernel);
            self.main_statements(&call, &mut main_body);
        }
        if self.rng.chance(96) {
            items.push(format!("main {{\n{main_body}}}"));
        }
        if self.hostile && self.rng.one_in(3) {
            items.push(self.hostile_item());
        }

        // Any order: names may be used before their declaration.
        if self.rng.one_in(3) {
            for i in (1..items.len()).rev() {
                let j = self.rng.below(i + 1);
                items.swap(i, j);
            }
        }
        let mut imports = Vec::new();
        if split {
            let mut lib_text = lib.join("\n");
            if self.rng.one_in(6) {
                // A cycle: the library imports the root back.
                lib_text.insert_str(0, "import \"main.op2\";\n");
            }
            imports.push(("lib.op2".to_string(), lib_text));
            items.insert(0, "import \"lib.op2\";".to_string());
        } else {
            items.extend(lib);
        }
        if self.rng.one_in(40) {
            let path = *self.rng.pick(&[
                "missing.op2",
                "main.op2",
                "",
                "../../../../etc/passwd",
                "/dev/zero",
                "sub/../lib.op2",
                "😀.op2",
            ]);
            items.insert(0, format!("import \"{path}\";"));
        }
        let mut text = String::new();
        for item in items {
            self.comment(&mut text);
            text.push_str(&item);
            text.push('\n');
        }
        Generated { text, imports }
    }

    fn comment(&mut self, out: &mut String) {
        if self.rng.one_in(6) {
            let body = *self.rng.pick(&[
                "a comment",
                "ünïcödé 😀 𝄞",
                "*/ not the end",
                "TODO: \t tabs",
                "",
            ]);
            if self.rng.chance(50) {
                let _ = writeln!(out, "// {body}");
            } else {
                let _ = writeln!(out, "/* {} */", body.replace("*/", "* /"));
            }
        }
    }

    fn ty(&mut self) -> Ty {
        let scalar = *self.rng.pick(SCALARS);
        let dim = if self.hostile && self.rng.one_in(15) {
            *self.rng.pick(&[0, 65_536, 4_000_000_000, u64::MAX])
        } else if self.rng.chance(70) {
            1
        } else {
            self.rng.range(2, 4) as u64
        };
        Ty { scalar, dim }
    }

    /// A literal of `scalar`, sometimes an extreme one.
    fn literal(&mut self, scalar: Scalar) -> String {
        if self.hostile && self.rng.one_in(8) {
            return (*self.rng.pick(&[
                "99999999999999999999",
                "0xFFFFFFFFFFFFFFFFFFFF",
                "1e400",
                "1e-400",
                "4294967296u",
                "18446744073709551615u",
                "2147483648",
                "0x",
                "1.7976931348623157e308",
            ]))
            .to_string();
        }
        match scalar {
            Scalar::Bool => (*self.rng.pick(&["true", "false"])).to_string(),
            Scalar::Int | Scalar::Ll => format!("{}", self.rng.range(0, 20) as i64 - 5),
            Scalar::Uint | Scalar::Ull => match self.rng.below(3) {
                0 => format!("{}u", self.rng.range(0, 50)),
                1 => format!("0x{:X}", self.rng.range(0, 255)),
                _ => format!("{}", self.rng.range(0, 50)),
            },
            Scalar::Float => format!("{}.{}f", self.rng.range(0, 9), self.rng.range(0, 99)),
            Scalar::Double => match self.rng.below(5) {
                0 => format!(".{}", self.rng.range(1, 9)),
                1 => format!("{}.", self.rng.range(0, 9)),
                2 => format!("{}e-{}", self.rng.range(1, 9), self.rng.range(0, 3)),
                3 => format!("{}.{}E+1", self.rng.range(0, 9), self.rng.range(0, 9)),
                _ => format!("{}.{}", self.rng.range(0, 9), self.rng.range(0, 99)),
            },
        }
    }

    /// A constant expression for const `index` (which may use the consts
    /// before it).
    fn const_init(&mut self, ty: &Ty, index: usize) -> String {
        let one = |g: &mut Gen<'_>| {
            if ty.scalar == Scalar::Bool {
                return g.literal(Scalar::Bool);
            }
            let earlier: Vec<Named> = g.consts[..index]
                .iter()
                .filter(|c| c.valued && c.ty.dim == 1 && c.ty.scalar == ty.scalar)
                .cloned()
                .collect();
            let mut terms = vec![g.literal(ty.scalar)];
            for _ in 0..g.rng.range(0, 3) {
                let term = if !earlier.is_empty() && g.rng.chance(40) {
                    g.rng.pick(&earlier).name.clone()
                } else if is_float(ty.scalar) && g.rng.one_in(4) {
                    format!("sqrt({})", g.literal(Scalar::Double))
                } else {
                    g.literal(ty.scalar)
                };
                // Integer consts stay small and non-negative (E202).
                let op = if is_float(ty.scalar) {
                    *g.rng.pick(&[" + ", " - ", " * "])
                } else {
                    " + "
                };
                terms.push(op.to_string());
                terms.push(term);
            }
            terms.concat()
        };
        if ty.dim == 1 {
            one(self)
        } else if ty.dim <= 16 {
            let parts: Vec<String> = (0..ty.dim).map(|_| one(self)).collect();
            format!("{{{}}}", parts.join(", "))
        } else {
            "{0}".into()
        }
    }

    /// ` = …` or nothing, for a dat or global.
    fn initialiser(&mut self, ty: &Ty) -> String {
        match self.rng.below(4) {
            0 => String::new(),
            1 if ty.dim > 1 && ty.dim <= 16 => {
                let parts: Vec<String> = (0..ty.dim).map(|_| self.literal(ty.scalar)).collect();
                format!(" = {{{}}}", parts.join(", "))
            }
            2 => {
                let same: Vec<String> = self
                    .consts
                    .iter()
                    .filter(|c| c.ty.scalar == ty.scalar && c.ty.dim == ty.dim)
                    .map(|c| c.name.clone())
                    .collect();
                if same.is_empty() {
                    String::new()
                } else {
                    format!(" = {}", self.rng.pick(&same))
                }
            }
            _ => format!(" = {}", self.literal(ty.scalar)),
        }
    }

    /// A kernel and the par_loop that calls it.
    fn kernel_and_loop(&mut self, k: usize) -> (String, String) {
        let set = self.rng.below(self.sets.len());
        let mut args: Vec<Arg> = Vec::new();
        let mut written: Vec<String> = Vec::new();
        let mut used: Vec<(String, Mode)> = Vec::new();
        for _ in 0..self.rng.range(1, 6) {
            let arg = match self.rng.below(5) {
                0 | 1 => self.direct_arg(set, &mut written, &mut used),
                2 => self.indirect_arg(set, &written, &mut used),
                3 => self.global_arg(&mut written, &mut used),
                _ => self.const_or_len_arg(),
            };
            if let Some(arg) = arg {
                args.push(arg);
            }
        }
        let name = format!("k_{k}");
        let mut params = Vec::new();
        let mut body = String::new();
        let mut readable: Vec<(String, Ty)> = Vec::new();
        for (i, arg) in args.iter().enumerate() {
            let p = format!("p{i}");
            let keyword = arg.ty.scalar.keyword();
            let param = match (arg.mode, self.rng.chance(70) || arg.ty.dim > 64) {
                (Mode::Read, true) => format!("const {keyword} *{p}"),
                (Mode::Read, false) => format!("const {keyword} {p}[{}]", arg.ty.dim),
                (_, true) => format!("{keyword} *{p}"),
                (_, false) => format!("{keyword} {p}[{}]", arg.ty.dim),
            };
            params.push(param);
            if matches!(arg.mode, Mode::Read | Mode::Rw) {
                readable.push((p, arg.ty.clone()));
            }
        }
        let mut locals = Vec::new();
        for l in 0..self.rng.range(0, 2) {
            let local = format!("t{l}");
            let value = self.expr(&readable, &locals, 3);
            let _ = writeln!(body, "    double {local} = {value};");
            locals.push(local);
        }
        for (i, arg) in args.iter().enumerate() {
            let p = format!("p{i}");
            let dims = arg.ty.dim.min(4);
            for j in 0..dims {
                let target = if j == 0 && self.rng.chance(50) {
                    format!("*{p}")
                } else {
                    format!("{p}[{j}]")
                };
                let value = self.expr(&readable, &locals, 3);
                let statement = match (arg.mode, arg.ty.scalar) {
                    (Mode::Read, _) => continue,
                    (Mode::Write | Mode::Rw, Scalar::Bool) => {
                        format!("{target} = {value} > 0.5;")
                    }
                    (Mode::Write, _) => format!("{target} = {value};"),
                    (Mode::Rw, _) => format!("{target} = {target} * 0.5 + {value};"),
                    (Mode::Inc, _) => format!("{target} += {value};"),
                    (Mode::Min, _) => format!("{target} = fmin({target}, {value});"),
                    (Mode::Max, _) => format!("{target} = fmax({target}, {value});"),
                };
                let wrapped = match self.rng.below(8) {
                    0 => format!(
                        "if ({} > 0.0) {{ {statement} }} else {{ {target} {}= 0; }}",
                        self.expr(&readable, &locals, 2),
                        if arg.mode == Mode::Inc { "+" } else { "" }
                    ),
                    1 if arg.mode == Mode::Inc => format!(
                        "for (int i = 0; i < {}; i++) {{ {statement} }}",
                        self.rng.range(0, 4)
                    ),
                    2 if arg.mode == Mode::Inc => format!(
                        "{{ int n = 0; while (n < {}) {{ n++; if (n == 2) continue; {statement} }} }}",
                        self.rng.range(0, 4)
                    ),
                    _ => statement,
                };
                let _ = writeln!(body, "    {wrapped}");
            }
        }
        if self.rng.one_in(10) {
            body.push_str("    return;\n");
        }
        self.hostile_statement(&readable, &mut body);
        let kernel = format!("kernel {name}({}) {{\n{body}}}", params.join(", "));
        let arg_text: Vec<String> = args.iter().map(|a| a.text.clone()).collect();
        let trailing = if !args.is_empty() && self.rng.one_in(4) {
            ","
        } else {
            ""
        };
        let alias = if self.rng.one_in(6) {
            format!(" as loop_{k}")
        } else {
            String::new()
        };
        let call = format!(
            "par_loop {name}{alias} over {} ({}{trailing});",
            self.sets[set],
            arg_text.join(", ")
        );
        (kernel, call)
    }

    /// A dat on the iteration set. One written directly appears in no
    /// other argument (E401).
    fn direct_arg(
        &mut self,
        set: usize,
        written: &mut Vec<String>,
        used: &mut Vec<(String, Mode)>,
    ) -> Option<Arg> {
        let candidates: Vec<DatDecl> = self.dats.iter().filter(|d| d.set == set).cloned().collect();
        if candidates.is_empty() {
            return None;
        }
        let dat = self.rng.pick(&candidates).clone();
        let mode = if written.contains(&dat.name) {
            return None;
        } else if dat.ty.scalar == Scalar::Bool {
            *self.rng.pick(&[Mode::Read, Mode::Write, Mode::Rw])
        } else {
            *self
                .rng
                .pick(&[Mode::Read, Mode::Read, Mode::Write, Mode::Rw, Mode::Inc])
        };
        let before = used
            .iter()
            .find(|(name, _)| *name == dat.name)
            .map(|&(_, m)| m);
        let mode = match before {
            None => mode,
            Some(Mode::Read) => Mode::Read,
            Some(_) => return None,
        };
        if mode != Mode::Read {
            written.push(dat.name.clone());
        }
        used.push((dat.name.clone(), mode));
        Some(Arg {
            text: format!("{} {}", dat.name, mode.keyword()),
            ty: dat.ty.clone(),
            mode,
        })
    }

    fn indirect_arg(
        &mut self,
        set: usize,
        written: &[String],
        used: &mut Vec<(String, Mode)>,
    ) -> Option<Arg> {
        let maps: Vec<MapDecl> = self
            .maps
            .iter()
            .filter(|m| m.from == set && m.arity >= 1 && m.arity <= 64)
            .cloned()
            .collect();
        if maps.is_empty() {
            return None;
        }
        let map = self.rng.pick(&maps).clone();
        let dats: Vec<DatDecl> = self
            .dats
            .iter()
            .filter(|d| d.set == map.to)
            .cloned()
            .collect();
        if dats.is_empty() {
            return None;
        }
        let dat = self.rng.pick(&dats).clone();
        if written.contains(&dat.name) {
            return None;
        }
        let before = used
            .iter()
            .find(|(name, _)| *name == dat.name)
            .map(|&(_, m)| m);
        let index = self.rng.below(map.arity as usize);
        // Indirect writes other than INC may collide (E704); reads and
        // increments are what OP2 codes do through maps.
        let mode = match before {
            Some(mode) => mode,
            None if dat.ty.scalar == Scalar::Bool || self.rng.chance(50) => Mode::Read,
            None => Mode::Inc,
        };
        used.push((dat.name.clone(), mode));
        Some(Arg {
            text: format!("{}[{}[{index}]] {}", dat.name, map.name, mode.keyword()),
            ty: dat.ty.clone(),
            mode,
        })
    }

    fn global_arg(
        &mut self,
        written: &mut Vec<String>,
        used: &mut Vec<(String, Mode)>,
    ) -> Option<Arg> {
        let global = self.rng.pick(&self.globals).clone();
        if written.contains(&global.name) {
            return None;
        }
        let mode = if global.ty.scalar == Scalar::Bool {
            Mode::Read
        } else if is_float(global.ty.scalar) {
            *self
                .rng
                .pick(&[Mode::Read, Mode::Inc, Mode::Inc, Mode::Min, Mode::Max])
        } else {
            *self.rng.pick(&[Mode::Read, Mode::Inc])
        };
        let before = used.iter().any(|(name, _)| *name == global.name);
        let mode = if before { Mode::Read } else { mode };
        if mode != Mode::Read {
            written.push(global.name.clone());
        }
        used.push((global.name.clone(), mode));
        Some(Arg {
            text: format!("{} {}", global.name, mode.keyword()),
            ty: global.ty.clone(),
            mode,
        })
    }

    fn const_or_len_arg(&mut self) -> Option<Arg> {
        if !self.consts.is_empty() && self.rng.chance(50) {
            let c = self.rng.pick(&self.consts).clone();
            let mode = if self.rng.chance(50) { " READ" } else { "" };
            return Some(Arg {
                text: format!("{}{mode}", c.name),
                ty: c.ty.clone(),
                mode: Mode::Read,
            });
        }
        let set = self.rng.pick(&self.sets).clone();
        Some(Arg {
            text: format!("len({set})"),
            ty: Ty {
                scalar: Scalar::Int,
                dim: 1,
            },
            mode: Mode::Read,
        })
    }

    /// A numeric expression over the readable parameters, locals and consts.
    fn expr(&mut self, readable: &[(String, Ty)], locals: &[String], depth: usize) -> String {
        if depth == 0 || self.rng.chance(35) {
            return self.atom(readable, locals);
        }
        match self.rng.below(9) {
            0 => format!("-({})", self.expr(readable, locals, depth - 1)),
            1 => format!("({})", self.expr(readable, locals, depth - 1)),
            2 => {
                let f = *self
                    .rng
                    .pick(&["sqrt", "fabs", "exp", "log", "floor", "sin"]);
                format!("{f}(fabs({}))", self.expr(readable, locals, depth - 1))
            }
            3 => {
                let f = *self.rng.pick(&["fmin", "fmax", "pow", "atan2"]);
                format!(
                    "{f}({}, {})",
                    self.expr(readable, locals, depth - 1),
                    self.expr(readable, locals, depth - 1)
                )
            }
            4 => format!(
                "({} < {} ? {} : {})",
                self.expr(readable, locals, depth - 1),
                self.expr(readable, locals, depth - 1),
                self.expr(readable, locals, depth - 1),
                self.expr(readable, locals, depth - 1)
            ),
            5 => format!("(double) ({})", self.expr(readable, locals, depth - 1)),
            _ => {
                let op = *self.rng.pick(&[" + ", " - ", " * ", " / "]);
                format!(
                    "{}{op}{}",
                    self.expr(readable, locals, depth - 1),
                    self.expr(readable, locals, depth - 1)
                )
            }
        }
    }

    fn atom(&mut self, readable: &[(String, Ty)], locals: &[String]) -> String {
        match self.rng.below(5) {
            0 if !readable.is_empty() => {
                let (p, ty) = self.rng.pick(readable).clone();
                let element = if self.rng.chance(30) {
                    format!("*{p}")
                } else {
                    format!("{p}[{}]", self.rng.below(ty.dim.min(4) as usize))
                };
                if ty.scalar == Scalar::Bool {
                    format!("({element} ? 1.0 : 0.0)")
                } else {
                    element
                }
            }
            1 if !locals.is_empty() => self.rng.pick(locals).clone(),
            2 => {
                let usable: Vec<Named> = self
                    .consts
                    .iter()
                    .filter(|c| c.ty.scalar != Scalar::Bool && c.ty.dim <= 4)
                    .cloned()
                    .collect();
                if usable.is_empty() {
                    self.literal(Scalar::Double)
                } else {
                    let c = self.rng.pick(&usable).clone();
                    if c.ty.dim == 1 {
                        c.name
                    } else {
                        format!("{}[{}]", c.name, self.rng.below(c.ty.dim as usize))
                    }
                }
            }
            3 => self.literal(Scalar::Int),
            _ => self.literal(Scalar::Double),
        }
    }

    /// A statement of a hostile program: long and deep expressions.
    fn hostile_statement(&mut self, readable: &[(String, Ty)], body: &mut String) {
        if !self.hostile || !self.rng.one_in(2) {
            return;
        }
        let atom = self.atom(readable, &[]);
        let n = self.rng.size(100_000);
        let expr = match self.rng.below(5) {
            0 => {
                let op = *self.rng.pick(&["+", "*", "-", "&&", "<", "==", "="]);
                let mut s = String::with_capacity(n * (atom.len() + 3));
                s.push_str(&atom);
                for _ in 1..n {
                    let _ = write!(s, " {op} {atom}");
                }
                s
            }
            1 => format!("{}{atom}{}", "(".repeat(n), ")".repeat(n)),
            2 => format!("{}{atom}", "-".repeat(n)),
            3 => format!("{}{atom}", "!".repeat(n)),
            _ => format!("{}{atom}{}", "fabs(".repeat(n), ")".repeat(n)),
        };
        match self.rng.below(3) {
            0 => {
                let _ = writeln!(body, "    double h = {expr};");
            }
            1 => {
                let depth = self.rng.size(20_000);
                let _ = writeln!(
                    body,
                    "    {}double h = 1.0;{}",
                    "{ ".repeat(depth),
                    " }".repeat(depth)
                );
            }
            _ => {
                let depth = self.rng.size(20_000);
                let _ = writeln!(
                    body,
                    "    double h = 0.0;\n    {}h += 1.0;",
                    "if (h < 1.0) ".repeat(depth)
                );
            }
        }
    }

    /// An item only a hostile program has.
    fn hostile_item(&mut self) -> String {
        let n = self.rng.size(100_000);
        match self.rng.below(6) {
            0 => {
                let chain = vec!["1"; n].join(" + ");
                format!("const c_chain: int = {chain};")
            }
            1 => format!(
                "const c_deep: double = {}1.0{};",
                "(".repeat(n),
                ")".repeat(n)
            ),
            2 => format!("set {};", "x".repeat(n)),
            3 => format!(
                "const c_big: double[{n}] = {{{}}};",
                vec!["1.0"; n].join(", ")
            ),
            4 => format!(
                "main {{ int y = (1){}; }}",
                "x+".repeat(n.min(50_000)).trim_end_matches('+')
            ),
            _ => format!("global g_many: {};", "int[99999999999999999999]"),
        }
    }

    /// Statements of `main` around one par_loop.
    fn main_statements(&mut self, call: &str, body: &mut String) {
        let float_globals: Vec<Named> = self
            .globals
            .iter()
            .filter(|g| is_float(g.ty.scalar) && g.ty.dim == 1)
            .cloned()
            .collect();
        if !float_globals.is_empty() && self.rng.chance(50) {
            let g = self.rng.pick(&float_globals).name.clone();
            let _ = writeln!(body, "    {g} = {};", self.literal(Scalar::Double));
        }
        match self.rng.below(4) {
            0 => {
                let n = self.rng.range(0, 4);
                let _ = writeln!(
                    body,
                    "    {{ int it = 0;\n    while (it < {n}) {{\n        {call}\n        it++;\n    }} }}"
                );
            }
            1 => {
                let _ = writeln!(
                    body,
                    "    for (int it = 0; it < {}; it++) {call}",
                    self.rng.range(0, 3)
                );
            }
            2 if !float_globals.is_empty() => {
                let g = self.rng.pick(&float_globals).name.clone();
                let _ = writeln!(body, "    {call}\n    if ({g} > 1.0e300) return;");
            }
            _ => {
                let _ = writeln!(body, "    {call}");
            }
        }
        if self.rng.chance(60) {
            let print = self.print();
            let _ = writeln!(body, "    {print}");
        }
        if self.hostile && self.rng.one_in(4) {
            // An unbounded loop: only --max-iterations stops it.
            let _ = writeln!(body, "    while (true) {{ {call} }}");
        }
    }

    fn print(&mut self) -> String {
        let mut format = String::from("fuzz");
        let mut args = Vec::new();
        for _ in 0..self.rng.range(0, 3) {
            let (conversion, arg) = if !self.globals.is_empty() && self.rng.chance(60) {
                let g = self.rng.pick(&self.globals).clone();
                let element = if g.ty.dim == 1 {
                    g.name.clone()
                } else {
                    format!("{}[{}]", g.name, self.rng.below(g.ty.dim.min(4) as usize))
                };
                let conversion = match g.ty.scalar {
                    Scalar::Double | Scalar::Float => {
                        *self.rng.pick(&["%g", "%f", "%e", "%10.4e", "%-8.3f"])
                    }
                    Scalar::Int | Scalar::Ll | Scalar::Bool => *self.rng.pick(&["%d", "%i", "%5d"]),
                    Scalar::Uint | Scalar::Ull => *self.rng.pick(&["%u", "%x"]),
                };
                (conversion.to_string(), element)
            } else {
                (
                    "%d".to_string(),
                    format!("len({})", self.rng.pick(&self.sets)),
                )
            };
            let conversion = if self.hostile && self.rng.one_in(4) {
                (*self.rng.pick(&[
                    "%.70000f",
                    "%999999999d",
                    "%99999999999999999999g",
                    "%.*f",
                    "%n",
                    "%s",
                    "%",
                    "%lld",
                ]))
                .to_string()
            } else {
                conversion
            };
            let _ = write!(format, " {conversion}");
            args.push(arg);
        }
        if self.rng.one_in(8) {
            format.push_str(" 100%% \\t\\\"😀\\n");
        }
        let mut text = format!("print(\"{format}\"");
        for arg in args {
            let _ = write!(text, ", {arg}");
        }
        text.push_str(");");
        text
    }
}
