//! Applications built with a compilation database (`compile_commands.json`,
//! written by each test, as CMake and bear write it): every translation unit
//! imported with the flags of its entry, and compared with its native build
//! made with the same flags.

use std::path::{Path, PathBuf};
use std::process::Command;

use op2_import::{CaptureError, ImportError, Imported, Options, import};

use crate::apps::{apps, compiler, numbers, run_imported};

/// A translation unit of `tests/apps/database` and its flags (after the
/// compiler, before `-c`).
struct Unit {
    file: &'static str,
    flags: &'static [&'static str],
}

/// The application's units as its build compiles them: the main file needs
/// its entry's `-I`, `-iquote`, a quoted `-D` with blanks, `-D` then `-U`,
/// `-std=c++17` and `-include`; the mesh its own `-I`, `-D` and `-std`.
const UNITS: [Unit; 2] = [
    Unit {
        file: "database.cpp",
        flags: &[
            "-std=c++17",
            "-I",
            "main_inc",
            "-iquote",
            "kernels",
            "-DHALF=(0.5 * 1.0)",
            "-DFAST",
            "-DLEGACY",
            "-ULEGACY",
            "-include",
            "pre/forced.h",
        ],
    },
    Unit {
        file: "database_mesh.cpp",
        flags: &["-std=gnu++14", "-Imesh_inc", "-DNCELLS=7"],
    },
];

/// `tests/apps/database` copied into `to` (the database names the copy, and
/// the application runs there).
fn copy_app(to: &Path) {
    let from = apps().join("database");
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        std::fs::create_dir_all(to.join(&relative)).unwrap();
        for entry in std::fs::read_dir(from.join(&relative)).unwrap() {
            let entry = entry.unwrap();
            let name = relative.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                pending.push(name);
            } else {
                std::fs::copy(entry.path(), to.join(&name)).unwrap();
            }
        }
    }
}

/// A temporary directory with the application copied into its `app`.
fn copied() -> (tempfile::TempDir, PathBuf) {
    let work = tempfile::tempdir().unwrap();
    let app = work.path().join("app");
    copy_app(&app);
    (work, app)
}

/// A word quoted for a POSIX shell.
fn quoted(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// The database of `units` built in `dir`: the first entry as a `command`
/// string (each word quoted as a shell reads it), the others as
/// `arguments`, then `extra` entries.
fn database(dir: &Path, units: &[Unit], extra: &[serde_json::Value]) -> String {
    let mut entries: Vec<serde_json::Value> = units
        .iter()
        .enumerate()
        .map(|(i, unit)| {
            let object = format!("{}.o", unit.file);
            let mut words = vec!["c++"];
            words.extend(unit.flags);
            words.extend(["-O2", "-c", unit.file, "-o", &object]);
            if i == 0 {
                let command: Vec<String> = words.iter().map(|w| quoted(w)).collect();
                serde_json::json!({
                    "directory": dir,
                    "file": unit.file,
                    "command": command.join(" "),
                })
            } else {
                serde_json::json!({
                    "directory": dir,
                    "file": dir.join(unit.file),
                    "arguments": words,
                })
            }
        })
        .collect();
    entries.extend(extra.iter().cloned());
    serde_json::to_string_pretty(&entries).unwrap()
}

/// Imports the copy in `dir`: its main file, the mesh unit, the database
/// `compile_commands` (or the one found in `dir`), telling `progress`.
fn import_copy(
    dir: &Path,
    out: &Path,
    compile_commands: Option<PathBuf>,
    progress: &mut dyn FnMut(&str),
) -> Result<Imported, ImportError> {
    import(
        &Options {
            main: dir.join(UNITS[0].file),
            sources: vec![dir.join(UNITS[1].file)],
            out: out.to_owned(),
            working_dir: Some(dir.to_owned()),
            compile_commands,
            ..Options::default()
        },
        progress,
    )
}

/// What the copy in `dir` prints when each unit is compiled with its flags
/// against the test OP2 and linked.
fn native(cxx: &str, dir: &Path, build: &Path) -> String {
    let op2seq = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/op2seq");
    let mut objects = Vec::new();
    for unit in &UNITS {
        let object = build.join(format!("{}.o", unit.file));
        let status = Command::new(cxx)
            .current_dir(dir)
            .args(unit.flags)
            .arg("-I")
            .arg(&op2seq)
            .args(["-O0", "-c", unit.file, "-o"])
            .arg(&object)
            .status()
            .expect("the compiler runs");
        assert!(status.success(), "the native build of {} failed", unit.file);
        objects.push(object);
    }
    let binary = build.join("native");
    let status = Command::new(cxx)
        .args(&objects)
        .arg("-o")
        .arg(&binary)
        .status()
        .expect("the linker runs");
    assert!(status.success(), "the native link failed");
    let output = Command::new(&binary)
        .current_dir(dir)
        .output()
        .expect("the native application runs");
    assert!(output.status.success());
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// Every number `imported` prints under `op2 run` (its set-up's output
/// first) is the native build's.
fn assert_same_numbers(cxx: &str, dir: &Path, build: &Path, imported: &Imported) {
    let native = native(cxx, dir, build);
    let ported = format!("{}{}", imported.setup_output, run_imported(imported));
    let (native_numbers, ported_numbers) = (numbers(&native), numbers(&ported));
    // `STEPS` is 3 only under the entry's `-DFAST`: 3 lines of 2 numbers.
    assert_eq!(native_numbers.len(), 6, "{native}");
    assert_eq!(
        native_numbers, ported_numbers,
        "native:\n{native}\nported:\n{ported}"
    );
}

#[test]
fn each_unit_compiled_with_its_entry_in_a_database_given_prints_what_the_native_build_prints() {
    let Some(cxx) = compiler("database given") else {
        return;
    };
    let (work, app) = copied();
    // The database elsewhere, naming the copy by absolute paths; the mesh
    // listed again with other flags (as a second target of a CMake build).
    let again = serde_json::json!({
        "directory": app,
        "file": "database_mesh.cpp",
        "arguments": ["c++", "-DNCELLS=99", "-Imesh_inc", "-c", "database_mesh.cpp"],
    });
    std::fs::create_dir(work.path().join("db")).unwrap();
    let path = work.path().join("db/compile_commands.json");
    std::fs::write(&path, database(&app, &UNITS, &[again])).unwrap();
    let out = work.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let imported = import_copy(&app, &out, Some(path.clone()), &mut |_| {}).expect("imports");
    assert!(imported.report.faithful(), "{}", imported.report);
    assert_same_numbers(&cxx, &app, work.path(), &imported);
    let shown = path.display();
    assert_eq!(
        imported.notes,
        [
            format!(
                "each translation unit was compiled with its flags in `{shown}` (entries `[0]`, `[1]`)"
            ),
            format!(
                "`{shown}` lists `{}` again at `[2]` with other flags; those of `[1]` were used",
                app.join("database_mesh.cpp").display()
            ),
        ]
    );
    assert!(
        imported
            .summary()
            .starts_with("note: each translation unit")
    );
    let program = std::fs::read_to_string(&imported.program).unwrap();
    // `GAIN` from the main file's `-I`, `OFFSET` from its `-include`,
    // `HALF` from its quoted `-D`.
    assert!(
        program.contains("*u = *u * 1.5 + 0.25 * ((0.5 * 1.0) + (0.5 * 1.0));"),
        "{program}"
    );
}

#[test]
fn a_database_where_the_application_runs_is_found_and_said_to_be_used() {
    let Some(cxx) = compiler("database found") else {
        return;
    };
    let (work, app) = copied();
    std::fs::create_dir(app.join("build")).unwrap();
    std::fs::write(
        app.join("build/compile_commands.json"),
        database(&app, &UNITS, &[]),
    )
    .unwrap();
    let mut said = Vec::new();
    let imported = import_copy(&app, work.path(), None, &mut |what| {
        said.push(what.to_owned());
    })
    .expect("imports");
    assert!(imported.report.faithful(), "{}", imported.report);
    assert_same_numbers(&cxx, &app, work.path(), &imported);
    let note = format!(
        "each translation unit was compiled with its flags in `{}` (entries `[0]`, `[1]`)",
        app.join("build/compile_commands.json").display()
    );
    assert_eq!(imported.notes, std::slice::from_ref(&note));
    assert_eq!(said[0], format!("note: {note}"));
}

#[test]
fn without_its_database_the_application_does_not_preprocess() {
    if compiler("no database").is_none() {
        return;
    }
    let (work, app) = copied();
    // A database there that lists only the mesh is not used, with a note.
    std::fs::write(
        app.join("compile_commands.json"),
        database(&app, &UNITS[1..], &[]),
    )
    .unwrap();
    let mut said = Vec::new();
    let error = import_copy(&app, work.path(), None, &mut |what| {
        said.push(what.to_owned());
    })
    .unwrap_err();
    let ImportError::Capture(CaptureError::PreprocessFailed { messages, .. }) = &error else {
        panic!("{error}");
    };
    assert!(messages.contains("params.h"), "{messages}");
    assert_eq!(
        said[0],
        format!(
            "note: `{}` does not list `{}`, so it was not used",
            app.join("compile_commands.json").display(),
            app.join("database.cpp").display()
        )
    );
}

#[test]
fn a_database_listing_a_missing_file_is_an_error_naming_the_entry() {
    let (work, app) = copied();
    let gone =
        serde_json::json!({"directory": app, "file": "gone.cpp", "command": "c++ -c gone.cpp"});
    let path = app.join("compile_commands.json");
    std::fs::write(&path, database(&app, &UNITS, &[gone])).unwrap();
    let error = import_copy(&app, work.path(), Some(path.clone()), &mut |_| {}).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{}: `[2].file`: `{}` is not found",
            path.display(),
            app.join("gone.cpp").display()
        )
    );
}

#[test]
fn a_unit_the_database_given_does_not_list_is_an_error() {
    let (work, app) = copied();
    let path = app.join("compile_commands.json");
    std::fs::write(&path, database(&app, &UNITS[..1], &[])).unwrap();
    let error = import_copy(&app, work.path(), Some(path.clone()), &mut |_| {}).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "`{}` is not listed in the compilation database `{}`\n  help: op2 import compiles each translation unit with the flags of its entry: build the application with the database's build once more, or name another database with --compile-commands",
            app.join("database_mesh.cpp").display(),
            path.display()
        )
    );
}

#[test]
fn a_malformed_database_given_is_an_error_naming_the_json_path() {
    let work = tempfile::tempdir().unwrap();
    let path = work.path().join("compile_commands.json");
    std::fs::write(
        &path,
        r#"[{"directory": "/", "file": "a.cpp", "command": "c++ -DX=\"1 -c a.cpp"}]"#,
    )
    .unwrap();
    let error = import_copy(work.path(), work.path(), Some(path.clone()), &mut |_| {}).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{}: `[0].command`: the `\"` at byte 8 is not closed",
            path.display()
        )
    );
}
