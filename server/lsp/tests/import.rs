//! "Import OP2 application…" (`op2.import`) over the protocol: an OP2
//! application in the workspace imports with progress into the workspace;
//! files outside it, files that are not OP2 applications and output
//! directories leading out are refused before anything runs; outputs that
//! are links leading out are refused, before the run and after it; the
//! cancel button and `$/cancelRequest` kill the application's set-up, and a
//! cancelled import writes nothing, even when the set-up left a process
//! behind holding its output.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use op2_analysis::{Analyser, NoImports, Options};
use serde_json::{Value, json};
use support::{Session, file_uri};

/// OP2's sample grid application of the import tests.
fn grid_app() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../import/tests/apps/grid")
}

/// Whether a C++ compiler runs (the import compiles the application); a
/// loud message when not.
#[allow(clippy::print_stderr)]
fn have_compiler(test: &str) -> bool {
    let found = op2_import::capture::compiler().is_some();
    if !found {
        eprintln!(
            "SKIPPED {test}: no C++ compiler (set CXX or install c++/g++/clang++); op2 import cannot capture without one"
        );
    }
    found
}

/// A workspace folder `ws` in a temporary directory, with the grid
/// application copied into `ws/app`.
struct Workspace {
    root: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Workspace {
        let root = tempfile::tempdir().expect("a temporary directory");
        let app = root.path().join("ws/app");
        std::fs::create_dir_all(&app).expect("create the workspace folder");
        for name in ["grid.cpp", "grid.dat", "grid_kernels.h"] {
            std::fs::copy(grid_app().join(name), app.join(name)).expect("copy the grid app");
        }
        Workspace { root }
    }

    fn folder(&self) -> PathBuf {
        self.root.path().join("ws")
    }

    /// A directory `dir` of the folder holding `file` of `text`; its path.
    fn app(&self, dir: &str, file: &str, text: &str) -> PathBuf {
        let app = self.folder().join(dir);
        std::fs::create_dir(&app).expect("create the application's directory");
        std::fs::write(app.join(file), text).expect("write the application");
        app
    }

    async fn session(&self) -> Session {
        let mut session = Session::in_process();
        session.initialize(&[], Some(&self.folder()), None).await;
        session
    }
}

fn import_params(main: &Path, out: Option<&Path>) -> Value {
    let mut arguments = vec![json!(file_uri(main))];
    if let Some(out) = out {
        arguments.push(json!(file_uri(out)));
    }
    json!({"command": "op2.import", "arguments": arguments})
}

/// The messages of the `$/progress` reports received so far.
fn progress_messages(session: &Session) -> Vec<String> {
    session
        .received
        .iter()
        .filter(|m| m["method"] == "$/progress")
        .filter_map(|m| m["params"]["value"]["message"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn an_application_in_the_workspace_imports_beside_itself_with_progress() {
    if !have_compiler("an_application_in_the_workspace_imports_beside_itself_with_progress") {
        return;
    }
    let workspace = Workspace::new();
    let mut session = workspace.session().await;
    let app = workspace.folder().join("app");
    let answer = session
        .call(
            "workspace/executeCommand",
            import_params(&app.join("grid.cpp"), None),
        )
        .await;
    let program = app.canonicalize().unwrap().join("grid.op2");
    let instance = app.canonicalize().unwrap().join("grid.json");
    assert_eq!(answer["program"], json!(file_uri(&program)), "{answer}");
    assert_eq!(answer["instance"], json!(file_uri(&instance)), "{answer}");
    assert_eq!(answer["faithful"], json!(true), "{answer}");
    assert_eq!(answer["units"], json!([]), "{answer}");
    let report = answer["report"].as_str().expect("the report text");
    assert!(report.contains("translated ("), "{report}");
    // No compilation database: the main file alone, as a note says.
    assert!(
        report.starts_with(&format!(
            "note: no compilation database lists `{}`",
            app.canonicalize().unwrap().join("grid.cpp").display()
        )),
        "{report}"
    );
    assert!(
        report.contains(&format!("wrote {}", program.display())),
        "{report}"
    );

    // What was written is a program without errors, and its instance.
    let text = std::fs::read_to_string(&program).expect("the program is written");
    let parse = op2_syntax::Parse::new(&text);
    let analysis = Analyser::new().analyse(
        &program,
        &parse,
        &NoImports,
        &Options { require_main: true },
    );
    assert!(!analysis.has_errors(), "{:?}", analysis.diagnostics);
    assert!(instance.is_file());

    // The phases were reported as progress and logged.
    let steps = progress_messages(&session);
    assert!(
        steps.iter().any(|s| s.starts_with("compiling")),
        "progress: {steps:?}"
    );
    assert!(
        steps.iter().any(|s| s.starts_with("running the set-up")),
        "progress: {steps:?}"
    );
    let logs = session.log_messages();
    assert!(
        logs.iter()
            .any(|l| l.starts_with("op2 import of ") && l.contains("wrote ")),
        "{logs:?}"
    );
    session.shutdown().await;
}

/// Writes the compilation database `database` at `at`, imports `main`
/// through the server and checks that the import is faithful and linked
/// exactly the other unit `unit`; the session and the answer.
async fn import_linking(
    workspace: &Workspace,
    at: &Path,
    database: &Value,
    main: &Path,
    unit: &Path,
) -> (Session, Value) {
    std::fs::write(at, serde_json::to_string_pretty(database).unwrap()).unwrap();
    let mut session = workspace.session().await;
    let answer = session
        .call("workspace/executeCommand", import_params(main, None))
        .await;
    assert_eq!(answer["faithful"], json!(true), "{answer}");
    assert_eq!(answer["units"], json!([file_uri(unit)]), "{answer}");
    (session, answer)
}

#[tokio::test]
async fn an_application_of_several_units_imports_every_unit_its_compilation_database_links() {
    if !have_compiler(
        "an_application_of_several_units_imports_every_unit_its_compilation_database_links",
    ) {
        return;
    }
    let workspace = Workspace::new();
    let app = workspace.folder().join("db");
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../import/tests/apps/database");
    for dir in ["", "main_inc", "mesh_inc", "kernels", "pre", "build"] {
        std::fs::create_dir_all(app.join(dir)).unwrap();
    }
    for name in [
        "database.cpp",
        "database_mesh.cpp",
        "main_inc/params.h",
        "mesh_inc/mesh.h",
        "kernels/step.h",
        "pre/forced.h",
    ] {
        std::fs::copy(from.join(name), app.join(name)).unwrap();
    }
    // Beside them, a program of its own (a `main` that calls the mesh's
    // function too) and a unit nothing calls: neither is linked.
    std::fs::write(
        app.join("other.cpp"),
        "void build_mesh(void *, void *);\nint main() { build_mesh(0, 0); }\n",
    )
    .unwrap();
    std::fs::write(app.join("unused.cpp"), "void unrelated() {}\n").unwrap();
    let app = app.canonicalize().unwrap();
    let entry = |file: &str, flags: &[&str]| {
        let mut arguments = vec!["c++"];
        arguments.extend(flags);
        arguments.extend(["-c", file]);
        json!({"directory": app, "file": file, "arguments": arguments})
    };
    let database = json!([
        entry("other.cpp", &[]),
        entry(
            "database.cpp",
            &[
                "-std=c++17",
                "-Imain_inc",
                "-iquote",
                "kernels",
                "-DHALF=(0.5 * 1.0)",
                "-DFAST",
                "-include",
                "pre/forced.h",
            ]
        ),
        entry("unused.cpp", &[]),
        entry(
            "database_mesh.cpp",
            &["-std=gnu++14", "-Imesh_inc", "-DNCELLS=7"]
        ),
    ]);
    let (session, answer) = import_linking(
        &workspace,
        &app.join("build/compile_commands.json"),
        &database,
        &app.join("database.cpp"),
        &app.join("database_mesh.cpp"),
    )
    .await;
    let report = answer["report"].as_str().expect("the report text");
    let db = app.join("build/compile_commands.json");
    assert!(
        report.starts_with(&format!(
            "note: the application's other translation units, chosen from `{}` as a linker chooses from a library: `{}`\nnote: each translation unit was compiled with its flags in `{}` (entries `[1]`, `[3]`)\n",
            db.display(),
            app.join("database_mesh.cpp").display(),
            db.display()
        )),
        "{report}"
    );
    // The mesh unit's set and dat were captured: 7 cells.
    let program = std::fs::read_to_string(app.join("database.op2")).unwrap();
    assert!(program.contains("set cells; // 7 elements"), "{program}");
    session.shutdown().await;
}

#[tokio::test]
async fn a_unit_that_only_defines_a_global_the_application_uses_is_linked() {
    if !have_compiler("a_unit_that_only_defines_a_global_the_application_uses_is_linked") {
        return;
    }
    let workspace = Workspace::new();
    let app = workspace.folder().join("gains");
    std::fs::create_dir_all(&app).unwrap();
    let files = [
        (
            "gains.cpp",
            "#include <stdlib.h>\n#include \"op_seq.h\"\n#include \"gains.h\"\n\nint main(int argc, char **argv) {\n  op_init(argc, argv, 2);\n  float *x = (float *)malloc(3 * sizeof(float));\n  for (int i = 0; i < 3; i++)\n    x[i] = i + 1.0f;\n  op_set cells = op_decl_set(3, \"cells\");\n  op_dat p_x = op_decl_dat(cells, 1, \"float\", x, \"p_x\");\n  op_decl_const(1, \"float\", &gain);\n  op_par_loop(boost, \"boost\", cells, op_arg_dat(p_x, -1, OP_ID, 1, \"float\", OP_RW));\n  op_exit();\n  return 0;\n}\n",
        ),
        (
            "gains.h",
            "extern float gain;\nstatic inline void boost(float *x) { *x = *x * gain; }\n",
        ),
        // Defines no function: only the global the others use.
        ("gain.cpp", "float gain = 2.5f;\n"),
        // A global nobody uses: not linked.
        ("spare.cpp", "float spare = 1.0f;\n"),
    ];
    for (name, text) in files {
        std::fs::write(app.join(name), text).unwrap();
    }
    let app = app.canonicalize().unwrap();
    let database = json!(
        ["gains.cpp", "spare.cpp", "gain.cpp"]
            .iter()
            .map(|file| json!({"directory": app, "file": file, "arguments": ["c++", "-c", file]}))
            .collect::<Vec<_>>()
    );
    let (session, _) = import_linking(
        &workspace,
        &app.join("compile_commands.json"),
        &database,
        &app.join("gains.cpp"),
        &app.join("gain.cpp"),
    )
    .await;
    // The global's value, from the unit that defines it.
    let program = std::fs::read_to_string(app.join("gains.op2")).unwrap();
    assert!(
        program
            .lines()
            .any(|l| l.starts_with("const gain: float = 2.5f;")),
        "{program}"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn files_outside_the_workspace_and_other_files_are_refused_before_anything_runs() {
    let workspace = Workspace::new();
    let mut session = workspace.session().await;
    let outside = workspace.root.path().join("elsewhere");
    std::fs::create_dir(&outside).unwrap();
    std::fs::copy(grid_app().join("grid.cpp"), outside.join("grid.cpp")).unwrap();
    let not_op2 = workspace.folder().join("hello.cpp");
    std::fs::write(&not_op2, "int main() { return 0; }\n").unwrap();
    let app = workspace.folder().join("app");
    std::os::unix::fs::symlink(&outside, workspace.folder().join("out")).unwrap();

    let cases = [
        (
            import_params(&outside.join("grid.cpp"), None),
            "is outside every workspace folder; op2 import runs only on files inside a workspace folder",
        ),
        (import_params(&not_op2, None), "does not call `op_init`"),
        (
            import_params(&app.join("grid.cpp"), Some(&workspace.folder().join("out"))),
            "outside the workspace folder",
        ),
        (
            import_params(
                &app.join("grid.cpp"),
                Some(&workspace.folder().join("missing")),
            ),
            "does not exist",
        ),
        (
            import_params(&workspace.folder().join("../ws/app/grid.cpp"), None),
            "is spelled with `..`",
        ),
    ];
    for (params, expected) in cases {
        let error = session
            .request("workspace/executeCommand", params.clone())
            .await
            .expect_err("refused");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(message.contains(expected), "{params}: {message}");
    }
    // Nothing was compiled or written anywhere.
    assert!(progress_messages(&session).is_empty());
    for dir in [&outside, &app] {
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name();
            assert!(
                !name.to_string_lossy().ends_with(".op2"),
                "{} written",
                name.to_string_lossy()
            );
        }
    }
    session.shutdown().await;
}

/// An OP2 application whose set-up writes its process id, then never ends.
const HANGING: &str = r#"#include "op_seq.h"
#include <cstdio>
#include <unistd.h>

inline void touch(double *x) { x[0] = 1.0; }

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  FILE *f = fopen("pid.tmp", "w");
  fprintf(f, "%d\n", (int)getpid());
  fclose(f);
  rename("pid.tmp", "pid.txt");
  for (;;) sleep(1);
  op_set nodes = op_decl_set(3, "nodes");
  op_dat p_x = op_decl_dat(nodes, 1, "double", (double *)0, "p_x");
  op_par_loop(touch, "touch", nodes, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_WRITE));
  op_exit();
}
"#;

/// Checks that the server still answers.
async fn still_serving(session: &mut Session) {
    let status = session
        .call("workspace/executeCommand", json!({"command": "op2.status"}))
        .await;
    assert!(status["documents"].is_array(), "{status}");
}

/// Waits until process `pid` has gone.
async fn gone(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            Instant::now() < deadline,
            "the application's set-up (pid {pid}) still runs after the cancel"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_cancel_button_and_cancel_request_kill_a_set_up_that_never_ends() {
    if !have_compiler("the_cancel_button_and_cancel_request_kill_a_set_up_that_never_ends") {
        return;
    }
    let workspace = Workspace::new();
    let app = workspace.app("hang", "hang.cpp", HANGING);
    let mut session = workspace.session().await;

    // The progress's cancel button.
    let id = session.send_request(
        "workspace/executeCommand",
        import_params(&app.join("hang.cpp"), None),
    );
    let pid = said_pid(&app, "pid.txt").await;
    let begin = session
        .wait_for("the import's progress", |m| {
            m["method"] == "$/progress" && m["params"]["value"]["kind"] == "begin"
        })
        .await;
    assert_eq!(
        begin["params"]["value"]["cancellable"],
        json!(true),
        "{begin}"
    );
    let token = begin["params"]["token"].clone();
    session.notify("window/workDoneProgress/cancel", json!({"token": token}));
    let error = session
        .response(id, "the cancelled import")
        .await
        .expect_err("a cancelled import fails");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("cancelled"),
        "{error}"
    );
    gone(pid).await;
    assert!(!app.join("hang.op2").exists());

    // `$/cancelRequest`.
    std::fs::remove_file(app.join("pid.txt")).unwrap();
    let id = session.send_request(
        "workspace/executeCommand",
        import_params(&app.join("hang.cpp"), None),
    );
    let pid = said_pid(&app, "pid.txt").await;
    session.notify("$/cancelRequest", json!({"id": id}));
    let error = session
        .response(id, "the cancelled request")
        .await
        .expect_err("a cancelled request fails");
    assert_eq!(error["code"], json!(-32800), "{error}");
    gone(pid).await;

    still_serving(&mut session).await;
    session.shutdown().await;
}

/// The grid application, whose set-up first links `grid.op2` (when
/// `link_program`) to `victim` and `grid.json` to `victim2`, both outside the
/// workspace.
fn linking_grid(link_program: bool) -> String {
    let grid = std::fs::read_to_string(grid_app().join("grid.cpp")).unwrap();
    let at = grid.find("op_init(").expect("grid.cpp calls op_init");
    let end = at + grid[at..].find(';').unwrap() + 1;
    let link = if link_program {
        "symlink(\"../../outside/victim.txt\", \"grid.op2\");"
    } else {
        ""
    };
    format!(
        "#include <unistd.h>\n{}\n  {link} symlink(\"../../outside/victim2.txt\", \"grid.json\");{}",
        &grid[..end],
        &grid[end..]
    )
}

#[tokio::test]
async fn outputs_that_are_links_leading_out_of_the_workspace_are_refused() {
    let workspace = Workspace::new();
    let outside = workspace.root.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    for victim in ["victim.txt", "victim2.txt"] {
        std::fs::write(outside.join(victim), "not yours\n").unwrap();
    }
    let app = workspace.folder().join("app");
    let mut session = workspace.session().await;
    let unchanged = || {
        for victim in ["victim.txt", "victim2.txt"] {
            assert_eq!(
                std::fs::read_to_string(outside.join(victim)).unwrap(),
                "not yours\n",
                "{victim} was written"
            );
        }
    };

    // Links there before the import: refused before anything runs.
    for (name, victim) in [("grid.op2", "victim.txt"), ("grid.json", "victim2.txt")] {
        std::os::unix::fs::symlink(outside.join(victim), app.join(name)).unwrap();
        let error = session
            .request(
                "workspace/executeCommand",
                import_params(&app.join("grid.cpp"), None),
            )
            .await
            .expect_err("refused");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("`{}` leads to", app.join(name).display()))
                && message.contains("outside the workspace folder")
                && message.contains("nothing written"),
            "{message}"
        );
        std::fs::remove_file(app.join(name)).unwrap();
    }
    assert!(progress_messages(&session).is_empty());
    unchanged();

    // Links the set-up makes while it runs: refused before writing.
    if have_compiler("outputs_that_are_links_leading_out_of_the_workspace_are_refused") {
        for link_program in [true, false] {
            for name in ["grid.op2", "grid.json"] {
                let _ = std::fs::remove_file(app.join(name));
            }
            std::fs::write(app.join("grid.cpp"), linking_grid(link_program)).unwrap();
            let error = session
                .request(
                    "workspace/executeCommand",
                    import_params(&app.join("grid.cpp"), None),
                )
                .await
                .expect_err("refused");
            let message = error["message"].as_str().unwrap_or_default();
            assert!(
                message.contains("outside the workspace folder"),
                "{message}"
            );
            unchanged();
            // Neither is written: both are decided before either is.
            assert_eq!(
                std::fs::symlink_metadata(app.join("grid.op2")).is_ok(),
                link_program,
                "grid.op2 is the set-up's link or nothing"
            );
        }
    }
    session.shutdown().await;
}

/// An OP2 application whose set-up writes its process id, then starts a
/// process that holds its output until the test writes `release` (three
/// minutes at most), after writing its own process id, and waits until it
/// has.
const LEAVES_A_PROCESS: &str = r#"#include "op_seq.h"
#include <cstdio>
#include <unistd.h>

inline void touch(double *x) { x[0] = 1.0; }

static void say(const char *name, int pid) {
  FILE *f = fopen("say.tmp", "w");
  fprintf(f, "%d\n", pid);
  fclose(f);
  rename("say.tmp", name);
}

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  say("setup.txt", (int)getpid());
  fflush(stdout);
  if (fork() == 0) {
    // Out of the set-up's process group, which the import kills when the
    // set-up ends: this one holds its output on.
    setsid();
    say("left.txt", (int)getpid());
    for (int i = 0; i < 1800 && access("release", F_OK) != 0; i++)
      usleep(100000);
    _exit(0);
  }
  // The set-up goes on only once the child has left its process group:
  // ending first, it would have the child killed with the group (under
  // load the child may not have run yet).
  for (int i = 0; i < 1800 && access("left.txt", F_OK) != 0; i++)
    usleep(100000);
  op_set nodes = op_decl_set(3, "nodes");
  op_dat p_x = op_decl_dat(nodes, 1, "double", (double *)0, "p_x");
  op_par_loop(touch, "touch", nodes, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_WRITE));
  op_exit();
}
"#;

/// The process id `app` wrote in `name`, once it has.
async fn said_pid(app: &Path, name: &str) -> u32 {
    let deadline = Instant::now() + support::TIMEOUT;
    loop {
        if let Ok(text) = std::fs::read_to_string(app.join(name)) {
            return text.trim().parse().expect("a process id");
        }
        assert!(Instant::now() < deadline, "the set-up never wrote {name}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_cancelled_import_writes_nothing_when_its_set_up_left_a_process_holding_its_output() {
    if !have_compiler(
        "a_cancelled_import_writes_nothing_when_its_set_up_left_a_process_holding_its_output",
    ) {
        return;
    }
    let workspace = Workspace::new();
    let app = workspace.app("leaves", "leaves.cpp", LEAVES_A_PROCESS);
    let mut session = workspace.session().await;
    let id = session.send_request(
        "workspace/executeCommand",
        import_params(&app.join("leaves.cpp"), None),
    );
    let setup = said_pid(&app, "setup.txt").await;
    let left = said_pid(&app, "left.txt").await;
    // The set-up has ended (and was waited for); the process it left holds
    // its output.
    gone(setup).await;
    session.notify("$/cancelRequest", json!({"id": id}));
    let error = session
        .response(id, "the cancelled request")
        .await
        .expect_err("a cancelled request fails");
    assert_eq!(error["code"], json!(-32800), "{error}");
    // The process left behind ends: the import, cancelled, still writes
    // nothing.
    std::fs::write(app.join("release"), "").unwrap();
    gone(left).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    for name in ["leaves.op2", "leaves.json"] {
        assert!(!app.join(name).exists(), "{name} written after the cancel");
    }
    still_serving(&mut session).await;
    session.shutdown().await;
}
