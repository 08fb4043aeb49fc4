//! Fuzzing of `op2 import`'s translation: the C/C++ front end (tree-sitter's
//! parse, the OP2 API recogniser, macro expansion, kernel and host
//! translation, the report), through [`op2_import::translate`], with a
//! synthetic capture.
//!
//! Nothing here compiles or runs C++: a mutated application could do
//! anything when run, and compiling it is slow. The capture the translation
//! asks for is made up from the instrumented text it hands over (the
//! handles and values it asks to record, their `op_decl_*` calls read
//! loosely from the text), written in the recorder's format and read back
//! with [`op2_import::capture::parse`], sometimes mutated on the way.
//!
//! The applications are the import's test applications
//! (`server/import/tests/apps/**`, `.cpp` and `.h`), mutated with
//! [`mutate`]'s byte and token mutations, and generated hostile shapes:
//! deep nesting of parentheses, blocks and macros in kernels and in host
//! code, huge numbers, very long lines, thousands of par_loops, `#define`
//! chains, recursive host functions, and the shapes of names that made
//! lookups and fresh-name searches quadratic (blocks that redeclare a name
//! many deep, sources that spell the candidates of many kernels' fresh
//! names).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use op2_import::{Capture, CaptureError, Instrumented};

use crate::rng::Rng;
use crate::{Finding, mutate, tame};

/// Where the case's files are said to be (nothing is read from there).
pub const ROOT: &str = "/op2-fuzz-import";

/// An application to translate.
#[derive(Clone, Debug)]
pub struct Application {
    /// The file with `main`, relative to [`ROOT`].
    pub main: String,
    /// Every file, relative to [`ROOT`] (the main file included).
    pub files: Vec<(String, Vec<u8>)>,
    /// Seed of the synthetic capture.
    pub capture_seed: u64,
    /// Whether the capture's text is mutated before it is read.
    pub mutate_capture: bool,
}

/// The application in `folder` (as [`crate::Case::save`] writes it) whose
/// main file is `main`: every file below the folder.
pub fn from_folder(folder: &Path, main: &Path) -> Result<Application, String> {
    let relative = |path: &Path| {
        path.strip_prefix(folder)
            .map(|p| p.to_string_lossy().into_owned())
            .map_err(|_| format!("{} is not in {}", path.display(), folder.display()))
    };
    let mut files = Vec::new();
    let mut folders = vec![folder.to_owned()];
    while let Some(dir) = folders.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for path in entries.flatten().map(|e| e.path()) {
            if path.is_dir() {
                folders.push(path);
            } else {
                let text = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                files.push((relative(&path)?, text));
            }
        }
    }
    files.sort();
    Ok(Application {
        main: relative(main)?,
        files,
        capture_seed: 0,
        mutate_capture: false,
    })
}

/// The import's test applications: each folder's `.cpp` and `.h` files.
fn apps() -> &'static [Application] {
    static APPS: OnceLock<Vec<Application>> = OnceLock::new();
    APPS.get_or_init(|| {
        let root = crate::corpus::repository().join("server/import/tests/apps");
        let mut apps = Vec::new();
        let mut folders: Vec<PathBuf> = std::fs::read_dir(&root)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        folders.sort();
        for folder in folders {
            let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&folder)
                .map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
                .unwrap_or_default()
                .into_iter()
                .filter(|p| p.extension().is_some_and(|e| e == "cpp" || e == "h"))
                .filter_map(|p| {
                    Some((p.file_name()?.to_str()?.to_owned(), std::fs::read(&p).ok()?))
                })
                .collect();
            files.sort();
            let dir = folder
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            for (name, _) in files.iter().filter(|(n, _)| n.ends_with(".cpp")) {
                apps.push(Application {
                    main: format!("{dir}/{name}"),
                    files: files
                        .iter()
                        .map(|(n, t)| (format!("{dir}/{n}"), t.clone()))
                        .collect(),
                    capture_seed: 0,
                    mutate_capture: false,
                });
            }
        }
        if apps.is_empty() {
            apps.push(hostile(&mut Rng::new(0), 0, 4));
        }
        apps
    })
}

/// Case `index` of the campaign with `seed` in `--import` mode.
pub fn case(rng: &mut Rng) -> Application {
    let apps = apps();
    let texts: Vec<&[u8]> = apps
        .iter()
        .flat_map(|a| a.files.iter().map(|(_, t)| t.as_slice()))
        .collect();
    let mut app = if rng.one_in(5) {
        let kind = rng.below(HOSTILE_KINDS);
        let size = if tame() {
            rng.range(1, 40)
        } else {
            rng.size(100_000)
        };
        hostile(rng, kind, size)
    } else {
        let mut app = apps[rng.below(apps.len())].clone();
        if !rng.one_in(8) {
            for _ in 0..rng.range(1, 2) {
                let file = rng.below(app.files.len());
                let text = &app.files[file].1;
                app.files[file].1 = mutate::mutate(text, &texts, rng, 6);
            }
        }
        app
    };
    app.capture_seed = rng.next_u64();
    app.mutate_capture = rng.one_in(8);
    app
}

const HOSTILE_KINDS: usize = 12;

/// A generated application of one of the hostile shapes, `n` deep or long.
pub fn hostile(rng: &mut Rng, kind: usize, n: usize) -> Application {
    let mut defines = String::new();
    let mut kernel = "x[0] = x[0] + 1.0;".to_owned();
    let mut functions = String::new();
    let mut host = String::new();
    let mut setup = String::new();
    match kind {
        // Parentheses in a kernel.
        0 => kernel = format!("x[0] = {}x[0]{};", "(".repeat(n), ")".repeat(n)),
        // Blocks and ifs in a kernel.
        1 => {
            kernel = format!(
                "{}x[0] += 1.0;{}",
                "if (x[0] > 0.0) {".repeat(n),
                "}".repeat(n)
            );
        }
        // Function-like macros nested in a kernel, and a chain of them.
        2 => {
            defines.push_str("#define M0(a) ((a) + 1.0)\n");
            for i in 1..n.min(5_000) {
                let _ = writeln!(defines, "#define M{i}(a) M{}(M{}(a))", i - 1, i - 1);
            }
            kernel = format!(
                "x[0] = {}x[0]{}; x[0] = M{}(x[0]);",
                "M0(".repeat(n),
                ")".repeat(n),
                n.min(5_000) - 1
            );
        }
        // Object-like `#define` chains.
        3 => {
            defines.push_str("#define D0 1.0\n");
            for i in 1..n.min(20_000) {
                let _ = writeln!(defines, "#define D{i} (D{} + D{})", i - 1, i - 1);
            }
            kernel = format!("x[0] = D{};", n.min(20_000) - 1);
            host = format!(
                "double y = D{}; op_printf(\"%g\\n\", y);",
                n.min(20_000) - 1
            );
        }
        // Huge numbers and a very long line.
        4 => {
            let mut line =
                String::from("x[0] = 1e99999 + 184467440737095516161844674407370955161.0");
            for i in 0..n {
                let _ = write!(line, " + {}.{}e{}", i, "9".repeat(i % 40), i % 700);
            }
            line.push(';');
            kernel = line;
            host = format!(
                "int big = {}; op_printf(\"%d\\n\", big);",
                "9".repeat(n.min(100_000))
            );
        }
        // Thousands of par_loops.
        5 => {
            for _ in 0..n.min(20_000) {
                host.push_str(
                    "op_par_loop(k, \"k\", cells, op_arg_dat(x, -1, OP_ID, 1, \"double\", OP_RW));\n",
                );
            }
        }
        // Parentheses and blocks in the host code.
        6 => {
            host = format!(
                "double y = {}1.0{};\n{}op_par_loop(k, \"k\", cells, op_arg_dat(x, -1, OP_ID, 1, \"double\", OP_RW));{}",
                "(".repeat(n),
                ")".repeat(n),
                "for (int i = 0; i < 2; i++) {".repeat(n),
                "}".repeat(n)
            );
        }
        // Recursive host functions, direct and mutual.
        7 => {
            functions = "void step(int n);\nvoid again(int n) { if (n > 0) step(n - 1); }\nvoid step(int n) { op_par_loop(k, \"k\", cells, op_arg_dat(x, -1, OP_ID, 1, \"double\", OP_RW)); again(n); step(n - 1); }\n".to_owned();
            host = format!("step({n}); again({n});");
        }
        // A chain of host functions, each calling the next twice.
        8 => {
            let depth = n.min(2_000);
            functions.push_str("void f0() { op_par_loop(k, \"k\", cells, op_arg_dat(x, -1, OP_ID, 1, \"double\", OP_RW)); }\n");
            for i in 1..depth {
                let _ = writeln!(functions, "void f{i}() {{ f{}(); f{}(); }}", i - 1, i - 1);
            }
            host = format!("f{}();", depth - 1);
        }
        // Blocks nested in a kernel, each declaring `t` again, with a macro
        // that names `t` used after each inner block (resolved by place).
        10 => {
            defines.push_str("#define TWICE (t * 2.0)\n");
            kernel = format!(
                "double t = x[0]; {}x[0] += TWICE;",
                "{ double t = x[0] + 1.0; ".repeat(n) + &"x[0] += TWICE; }".repeat(n)
            );
        }
        // Many kernels whose fresh names the sources' names push on: each
        // kernel's INC parameter `x`, which it does not only add to, needs
        // a local (`x_inc`, spelled with `_` after `_` by a global each),
        // and a local `len` in many blocks, whose `.op2` spelling `len_`,
        // `len_1`, … globals take.
        11 => {
            let names = n.min(2_000);
            let kernels = n.min(2_000);
            let spelled: Vec<String> = (0..names)
                .map(|k| format!("x_inc{}", "_".repeat(k)))
                .chain((0..names).map(|k| match k {
                    0 => "len_".to_owned(),
                    _ => format!("len_{k}"),
                }))
                .collect();
            let _ = writeln!(functions, "static double {};", spelled.join(", "));
            functions.push_str("static op_map m;\n");
            setup.push_str(
                "int pairs[4] = {1, 2, 3, 0};\n  m = op_decl_map(cells, cells, 1, pairs, \"m\");\n  ",
            );
            for i in 0..kernels {
                let _ = writeln!(
                    functions,
                    "inline void k{i}(double *x) {{ x[0] = x[0] * 2.0; }}"
                );
                let _ = writeln!(
                    host,
                    "op_par_loop(k{i}, \"k{i}\", cells, op_arg_dat(x, 0, m, 1, \"double\", OP_INC));"
                );
            }
            kernel = "{ int len = 1; x[0] += len; } ".repeat(n.min(20_000));
        }
        // Unbalanced text: an open kernel, stray closers.
        _ => {
            kernel = format!("x[0] = {}", "(x[0] + ".repeat(n));
            host = "}".repeat(n.min(10_000));
        }
    }
    if rng.one_in(4) {
        // Everything on one line.
        kernel = kernel.replace('\n', " ");
    }
    let text = format!(
        "#include \"op_seq.h\"\n{defines}\nstatic op_set cells;\nstatic op_dat x;\ninline void k(double *x) {{ {kernel} }}\n{functions}\nint main(int argc, char **argv) {{\n  op_init(argc, argv, 2);\n  cells = op_decl_set(4, \"cells\");\n  double data[4] = {{1, 2, 3, 4}};\n  x = op_decl_dat(cells, 1, \"double\", data, \"x\");\n  {setup}op_par_loop(k, \"k\", cells, op_arg_dat(x, -1, OP_ID, 1, \"double\", OP_RW));\n  {host}\n  op_exit();\n}}\n"
    );
    Application {
        main: "hostile/hostile.cpp".to_owned(),
        files: vec![("hostile/hostile.cpp".to_owned(), text.into_bytes())],
        capture_seed: 0,
        mutate_capture: false,
    }
}

/// The recorder's file for `instrumented`: each handle the translation
/// asks for, of the kind and shape its `op_decl_*` call in the text says
/// (or a random one), with random data; each value a random number.
pub fn synthetic_capture(instrumented: &str, rng: &mut Rng) -> String {
    let mut out = String::new();
    let mut sets: Vec<(String, usize)> = Vec::new();
    let mut maps = 0;
    let mut dats = 0;
    let set_size = |rng: &mut Rng| {
        if !tame() && rng.one_in(50) {
            *rng.pick(&[1 << 40, usize::MAX / 2, 1 << 24])
        } else {
            rng.range(0, 5)
        }
    };
    let numbers = |rng: &mut Rng, count: usize, ty: &str| -> String {
        if count > 4096 {
            return "null".to_owned();
        }
        let words: Vec<String> = (0..count)
            .map(|_| match ty {
                "int" => (rng.below(7) as i64 - 3).to_string(),
                _ => rng
                    .pick(&["0.5", "-1", "1e300", "nan", "inf", "3"])
                    .to_string(),
            })
            .collect();
        words.join(" ")
    };
    for (name, kind_hint) in calls(instrumented, "op2_import_handle(\"") {
        let kind = match kind_hint.as_deref() {
            Some(k) => k.to_owned(),
            None => rng.pick(&["set", "map", "dat"]).to_string(),
        };
        let (set_arg, dim_arg, ty_arg) = declaration(instrumented, &name);
        let set_of = |rng: &mut Rng, sets: &[(String, usize)], arg: Option<&str>| {
            arg.and_then(|a| sets.iter().position(|(n, _)| n == a.trim()))
                .unwrap_or_else(|| rng.below(sets.len()))
        };
        match kind.as_str() {
            "set" => {
                let size = set_size(rng);
                let _ = writeln!(out, "set {} {size}", sets.len());
                let _ = writeln!(out, "handle {name} set {}", sets.len());
                sets.push((name, size));
            }
            "map" if !sets.is_empty() => {
                let from = set_of(rng, &sets, set_arg.as_deref());
                let to = rng.below(sets.len());
                let dim = dim_arg.unwrap_or_else(|| rng.range(1, 4)).min(1 << 20);
                let count = sets[from].1.saturating_mul(dim);
                let entries = if count > 4096 || rng.one_in(10) {
                    "null".to_owned()
                } else {
                    (0..count)
                        .map(|_| (rng.below(sets[to].1.max(1)) as i64).to_string())
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                let _ = writeln!(out, "map {maps} {from} {to} {dim}\n{entries}");
                let _ = writeln!(out, "handle {name} map {maps}");
                maps += 1;
            }
            "dat" if !sets.is_empty() => {
                let set = set_of(rng, &sets, set_arg.as_deref());
                let dim = dim_arg.unwrap_or_else(|| rng.range(1, 4)).min(1 << 20);
                let ty =
                    ty_arg.unwrap_or_else(|| rng.pick(&["double", "float", "int"]).to_string());
                let count = sets[set].1.saturating_mul(dim);
                let values = if rng.one_in(10) {
                    "null".to_owned()
                } else {
                    numbers(rng, count, &ty)
                };
                let _ = writeln!(out, "dat {dats} {set} {dim} {ty}\n{values}");
                let _ = writeln!(out, "handle {name} dat {dats}");
                dats += 1;
            }
            _ => {}
        }
    }
    for (name, _) in calls(instrumented, "op2_import_value(\"") {
        let ty = rng.pick(&["double", "int", "float"]).to_string();
        let (count, array) = if rng.one_in(5) {
            (rng.range(0, 6), " array")
        } else {
            (1, "")
        };
        let values = numbers(rng, count, &ty);
        let _ = writeln!(out, "value {name} {ty} {count}{array}\n{values}");
    }
    out.push_str("stop\n");
    out
}

/// The names of the calls `start…"` in `text`, with the kind of handle the
/// text declares each with (`NAME = op_decl_set`, …), when it says.
fn calls(text: &str, start: &str) -> Vec<(String, Option<String>)> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices(start) {
        let rest = &text[at + start.len()..];
        let Some(end) = rest.find('"') else { continue };
        let name = &rest[..end];
        if name.is_empty()
            || name.contains(char::is_whitespace)
            || found.iter().any(|(n, _)| n == name)
        {
            continue;
        }
        let kind = declaration_call(text, name).map(|(kind, _)| kind.to_owned());
        found.push((name.to_owned(), kind));
    }
    found
}

/// `NAME = op_decl_KIND(ARGS` in `text`: the kind and the text after the
/// parenthesis.
fn declaration_call<'t>(text: &'t str, name: &str) -> Option<(&'static str, &'t str)> {
    for kind in ["set", "map", "dat"] {
        for spelling in [
            format!("{name} = op_decl_{kind}("),
            format!("{name} = op_decl_{kind}_hdf5("),
        ] {
            if let Some(at) = text.find(&spelling) {
                return Some((kind, &text[at + spelling.len()..]));
            }
        }
    }
    None
}

/// The set argument, dimension and type of `name`'s `op_decl_map` or
/// `op_decl_dat`, as far as they are plain words in the text.
fn declaration(text: &str, name: &str) -> (Option<String>, Option<usize>, Option<String>) {
    let Some((kind, args)) = declaration_call(text, name) else {
        return (None, None, None);
    };
    let args: Vec<&str> = args
        .split(')')
        .next()
        .unwrap_or("")
        .splitn(6, ',')
        .collect();
    let word = |i: usize| args.get(i).map(|a| a.trim().to_owned());
    let number = |i: usize| word(i).and_then(|w| w.parse::<usize>().ok());
    match kind {
        "map" => (word(0), number(2), None),
        "dat" => (
            word(0),
            number(1),
            word(2)
                .map(|t| t.trim_matches('"').to_owned())
                .filter(|t| !t.is_empty()),
        ),
        _ => (None, None, None),
    }
}

/// `app` through [`op2_import::translate`] with the synthetic capture and
/// macro table, and its files as the translation read them.
pub fn translate(
    app: &Application,
) -> (
    BTreeMap<PathBuf, String>,
    Result<op2_import::Translation, op2_import::ImportError>,
) {
    let root = Path::new(ROOT);
    let files: BTreeMap<PathBuf, String> = app
        .files
        .iter()
        .map(|(name, text)| (root.join(name), String::from_utf8_lossy(text).into_owned()))
        .collect();
    let main = root.join(&app.main);
    let mut rng = Rng::new(app.capture_seed);
    let mutate_capture = app.mutate_capture;
    let mut capture = |instrumented: Instrumented| -> Result<Capture, CaptureError> {
        let mut text = synthetic_capture(&instrumented.text, &mut rng).into_bytes();
        if mutate_capture {
            text = mutate::mutate(&text, &[], &mut rng, 3);
        }
        op2_import::capture::parse(&String::from_utf8_lossy(&text)).map_err(CaptureError::Malformed)
    };
    // The preprocessor's table of macros, made up as the capture is: every
    // file's `#define`s, the last of a name winning.
    let mut macros = |_: Instrumented| -> Result<String, CaptureError> {
        let mut defines = Vec::new();
        for (path, text) in &files {
            let source = op2_import::c::Source::parse(path, String::new(), text.clone())
                .map_err(CaptureError::Io)?;
            defines.extend(op2_import::c::defines(&source));
        }
        Ok(op2_import::c::write_macro_table(&defines))
    };
    let result =
        op2_import::translate(&main, &[], Path::new(""), &files, &mut macros, &mut capture);
    (files, result)
}

/// Runs the translation of `app` and checks its properties: no panic (the
/// worker's hook sees those), an answer or an error, every place named in
/// the report or the error inside the file it names, every message
/// non-empty, and the program written at most a bounded multiple of the
/// input.
pub fn run(app: &Application) -> Result<(), Finding> {
    let (files, result) = translate(app);
    let input: usize = files.values().map(String::len).sum();
    // Each file's lines' lengths, found once: a location is checked in
    // O(1) (splitting the text for each of thousands of report entries of a
    // large mutated application took most of a 19 s case, campaign seed 9).
    let texts: BTreeMap<String, Vec<usize>> = files
        .iter()
        .map(|(path, text)| {
            let lines = text.split('\n').map(str::len).collect();
            (path.display().to_string(), lines)
        })
        .collect();
    match result {
        Ok(translation) => {
            for entry in &translation.report.entries {
                check_message(&entry.message)?;
                if let Some(location) = &entry.location {
                    check_location(&texts, location, &entry.message)?;
                }
            }
            let limit = 64 * input + (8 << 20);
            if translation.program.len() > limit {
                return Err(Finding::property(
                    "import",
                    format!(
                        "the program is {} bytes for {input} bytes of C, over {limit}",
                        translation.program.len()
                    ),
                ));
            }
        }
        Err(error) => {
            let message = error.to_string();
            check_message(&message)?;
            if let op2_import::ImportError::NoParLoop(at)
            | op2_import::ImportError::DeclAfterParLoop { at, .. } = &error
            {
                check_location(&texts, at, &message)?;
            }
        }
    }
    Ok(())
}

fn check_message(message: &str) -> Result<(), Finding> {
    if message.trim().is_empty() {
        return Err(Finding::property("import", "an empty message"));
    }
    Ok(())
}

/// `location` is a line and column of the file it names (the column may
/// be one past the line's end).
fn check_location(
    texts: &BTreeMap<String, Vec<usize>>,
    location: &op2_import::c::Location,
    message: &str,
) -> Result<(), Finding> {
    let bad = |why: &str| {
        Err(Finding::property(
            "import",
            format!("`{message}` is reported at {location}, {why}"),
        ))
    };
    let Some(lines) = texts.get(&location.file) else {
        return bad("a file the application does not have");
    };
    if location.line == 0 || location.column == 0 {
        return bad("counted from 0");
    }
    let Some(&length) = lines.get(location.line - 1) else {
        return bad("past the file's last line");
    };
    if location.column > length + 1 {
        return bad("past the line's end");
    }
    Ok(())
}
