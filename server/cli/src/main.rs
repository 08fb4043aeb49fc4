//! `op2`: check, build, run and simulate OP2 programs for POETS, and the
//! language server that editors start.
//!
//! This crate is a thin shell: every command parses its arguments, reads
//! files, calls the library crates and renders what they return.

mod build;
mod check;
mod completions;
mod excerpt;
mod explain;
mod fmt;
mod import;
mod instance;
mod markdown;
mod output;
mod parse_tree;
mod render;
mod run;
mod source;
mod watch;

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

/// The system allocator, with huge pages for large blocks: the
/// simulator's and the compiled engine's arrays at size
/// (`op2_exec::huge`).
#[global_allocator]
static ALLOCATOR: op2_exec::huge::HugePages = op2_exec::huge::HugePages;

/// Tools for OP2 programs written in the `.op2` kernel description language.
#[derive(Debug, Parser)]
#[command(name = "op2", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the syntax tree of a file.
    Parse {
        /// The `.op2` file.
        file: PathBuf,
    },
    /// Report every problem in the given files; exits 1 when there are errors.
    Check {
        /// The `.op2` files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        options: check::CheckOptions,
    },
    /// Compile a program into a POETS application graph (`<stem>.graph.xml`).
    Build {
        /// The `.op2` file.
        file: PathBuf,
        /// Instance data (JSON or OP2's HDF5 layout, told apart by
        /// content): write the graph instance too.
        #[arg(long)]
        instance: Option<PathBuf>,
        /// Where to write the graph (default: `<stem>.graph.xml` beside the source).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// When to colour diagnostics (on standard error).
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
        #[command(flatten)]
        lints: check::Lints,
        #[command(flatten)]
        fan: FanLimit,
        #[command(flatten)]
        watch: watch::WatchFlag,
    },
    /// Start the language server on standard input and output (editors run
    /// this).
    Lsp,
    /// Run a program's reference semantics on instance data.
    Run {
        #[command(flatten)]
        common: run::Common,
        #[command(flatten)]
        options: run::RunOptions,
    },
    /// Simulate the generated POETS graph with an adversarial message order.
    Simulate {
        #[command(flatten)]
        common: run::Common,
        #[command(flatten)]
        options: run::SimulateOptions,
    },
    /// Rewrite files in the canonical layout; with `--check`, print a unified
    /// diff of each file that would change and exit 1. `op2 fmt -` formats
    /// standard input to standard output.
    Fmt {
        /// The `.op2` files; `-` for standard input.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Write nothing; print what would change as a diff, and exit 1 when
        /// a file is not formatted.
        #[arg(long)]
        check: bool,
    },
    /// Translate an OP2 C/C++ application into `.op2` and capture its mesh
    /// as instance data; exits 1 when the result is not faithful.
    Import(import::Args),
    /// Check instance data against a program, or convert it between JSON
    /// and OP2's HDF5 layout.
    Instance {
        #[command(subcommand)]
        command: instance::Command,
    },
    /// Explain a diagnostic code (`op2 explain E401`); without a code, list them all.
    Explain {
        /// The code, such as `E401`.
        code: Option<String>,
        /// Render the Markdown (headings, code, wrapping) on a terminal;
        /// `never` prints the Markdown source, as when piped.
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
    },
    /// Print the shell completion script for `op2` (`op2 completions bash >
    /// ~/.local/share/bash-completion/completions/op2`).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page `op2(1)`; with `--out-dir`, write it and one
    /// page per command (`op2-check.1`, …) into that directory.
    Man {
        /// An existing directory to write the pages into.
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
    },
}

/// The fan limit of the generated graph.
#[derive(Debug, clap::Args)]
pub struct FanLimit {
    /// Most edges any device has on a begin or end pin, 2 to 65536:
    /// completion and start travel through trees of aggregator devices (0:
    /// one flat controller talks to every device, as the strategy without
    /// trees).
    #[arg(long, default_value_t = op2_codegen::DEFAULT_FAN_LIMIT, value_parser = fan_limit)]
    pub fan_limit: u32,
}

fn fan_limit(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(1) => Err("a tree needs at least 2 children per device; 0 means no trees".into()),
        Ok(n) if n > op2_codegen::MAX_FAN_LIMIT => Err(format!(
            "a tree may have at most {} children per device; 0 means no trees",
            op2_codegen::MAX_FAN_LIMIT
        )),
        Ok(n) => Ok(n),
        Err(error) => Err(error.to_string()),
    }
}

/// Output format of diagnostics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MessageFormat {
    /// rustc-style text with source snippets.
    Human,
    /// One JSON object per diagnostic per line.
    Json,
}

/// Whether to colour human output (diagnostics, which go to standard
/// error).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// When standard error is a terminal and `NO_COLOR` is not set.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// What a command asks the process to exit with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Everything was fine.
    Success,
    /// The input has errors (diagnostics were printed).
    Errors,
    /// The generated graph misbehaved (deadlock or handler assertion).
    Failed,
    /// The program ended with `exit(status)`: `op2 run` and `op2 simulate`
    /// end with its status.
    Exit(u8),
}

/// On SIGINT, SIGTERM or SIGHUP: kills the children an import runs (in
/// process groups of their own, which the terminal's signal does not
/// reach), removes the temporary files being written (a build or an atomic
/// write in progress), then ends the process as the signal would have.
fn remove_temporaries_on_signals() {
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        std::thread::spawn(move || {
            if let Some(signal) = signals.forever().next() {
                // Both held until the process ends: no new child or
                // temporary file now.
                let _children = op2_import::capture::kill_children();
                let _registry = op2_codegen::output::remove_temporary_files();
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                std::process::exit(128 + signal);
            }
        });
    }
}

fn main() -> ExitCode {
    // The HDF5 reader op2 starts for itself (op2_instance's child module),
    // not a command of its own: never listed by --help or completions.
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() == Some(std::ffi::OsStr::new(op2_instance::READER_COMMAND)) {
        return op2_instance::reader_main(&args.collect::<Vec<_>>());
    }
    // HDF5 files are read in a child process, so that libhdf5 failing on a
    // damaged file cannot take this one down (docs/reliability.md). On
    // Linux the child runs `/proc/self/exe`, which still starts this binary
    // when it has been replaced or removed since the language server
    // started.
    if cfg!(target_os = "linux") {
        op2_instance::set_hdf5_reader(PathBuf::from("/proc/self/exe"));
    } else if let Ok(executable) = std::env::current_exe() {
        op2_instance::set_hdf5_reader(executable);
    }
    let cli = Cli::parse();
    remove_temporaries_on_signals();
    let result = match cli.command {
        Command::Parse { file } => parse_tree::run(&file),
        Command::Check { files, options } => check::run(&files, &options),
        Command::Explain { code, color } => explain::run(code.as_deref(), color),
        Command::Completions { shell } => completions::completions(shell),
        Command::Man { out_dir } => completions::man(out_dir.as_deref()),
        Command::Fmt { files, check } => fmt::run(&files, check),
        Command::Run { common, options } => run::run(&common, &options),
        Command::Import(args) => import::run(&args),
        Command::Instance { command } => instance::run(&command),
        Command::Lsp => lsp(),
        Command::Simulate { common, options } => run::simulate(&common, &options),
        Command::Build {
            file,
            instance,
            output,
            color,
            lints,
            fan,
            watch,
        } => build::run(
            &file,
            instance.as_deref(),
            output.as_deref(),
            color,
            &lints,
            fan.fan_limit,
            watch.watch,
        ),
    };
    match result {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::Errors) => ExitCode::from(1),
        Ok(Outcome::Failed) => ExitCode::from(2),
        Ok(Outcome::Exit(status)) => ExitCode::from(status),
        Err(error) => {
            // A closed pipe (`op2 check … | head`) is not worth a message.
            if error
                .downcast_ref::<io::Error>()
                .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
            {
                return ExitCode::from(1);
            }
            let mut stderr = io::stderr().lock();
            // Errors quote paths, and a file name may hold an escape sequence.
            let _ = writeln!(stderr, "error: {}", render::visible(&format!("{error:#}")));
            ExitCode::from(2)
        }
    }
}

/// Runs the language server until the client ends the session.
fn lsp() -> anyhow::Result<Outcome> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let end = runtime.block_on(op2_lsp::serve_stdio());
    // Not the runtime's drop, which waits for every blocking task: an
    // analysis the watchdog abandoned may still be running there, and a
    // runaway one would keep the process alive after `exit` for good.
    runtime.shutdown_background();
    // A build on save still writing (one `shutdown` did not wait for, or
    // an `exit` without `shutdown`) ends with the process: its temporary
    // file is removed, and the registry stays locked until the process
    // ends, so that no new one is made.
    std::mem::forget(op2_codegen::output::remove_temporary_files());
    // The protocol: 0 when `shutdown` came before `exit`, otherwise 1.
    Ok(if end.status() == 0 {
        Outcome::Success
    } else {
        Outcome::Errors
    })
}
