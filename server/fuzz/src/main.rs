//! `op2-fuzz`: runs fuzzing campaigns against op2, and replays saved
//! inputs. See docs/reliability.md.
//!
//! ```text
//! op2-fuzz [--cases N] [--seed S] [--jobs J] [--out DIR] [--from I]
//!          [--print-cases] [--slow-secs T] [--hang-secs T] [--hang-wall-secs W]
//!          [--memory-mb M] [--full-every N]
//! op2-fuzz --seed S --case I          run one case of a campaign again
//! op2-fuzz replay PATH...             run saved inputs (files or folders)
//! ```
//!
//! The process that is started supervises: it runs the cases in worker
//! processes (this binary, `worker`), each under a memory limit (`ulimit
//! -v`), each case on a thread with a 2 MB stack. A worker that dies (stack
//! overflow, abort, out of memory) or stops reporting (a hang) is a finding;
//! its input is saved and a new worker goes on with the next case. The slow
//! and hang limits count the worker's CPU time during the case (all its
//! threads), so that load on the machine or a paused campaign makes no case
//! slow; a case that waits without using the processor is stopped by a
//! longer limit on the wall time (`--hang-wall-secs`).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use op2_fuzz::rng::Rng;
use op2_fuzz::{Case, Corpus, Finding, cpu, run_case};

/// Every panic message of this process since the last case started.
static PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[derive(Clone, Debug)]
struct Settings {
    cases: u64,
    seed: u64,
    jobs: u64,
    start: u64,
    out: PathBuf,
    /// CPU time of a case past which it is reported as slow.
    slow: Duration,
    /// CPU time of a case past which its worker is killed as hanging.
    hang: Duration,
    /// Wall time of a case past which its worker is killed as hanging
    /// whatever its CPU time (a case blocked or asleep); `None`: five
    /// times `hang`.
    hang_wall: Option<Duration>,
    memory_mb: u64,
    files: Vec<PathBuf>,
    quiet: bool,
    /// Print each case's index, fingerprint and how far it went.
    print_cases: bool,
    tame: bool,
    /// `--import`: cases are applications through `op2 import`.
    import: bool,
    /// One program case in this many goes on to build, run and simulate.
    full_every: u64,
    /// Substrings of findings that are known and open (`--known FILE`).
    known: Vec<String>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            cases: 10_000,
            seed: 0,
            jobs: 1,
            start: 0,
            out: PathBuf::from("fuzz-findings"),
            slow: Duration::from_secs(10),
            hang: Duration::from_secs(120),
            hang_wall: None,
            memory_mb: 4096,
            files: Vec::new(),
            quiet: false,
            print_cases: false,
            tame: false,
            import: false,
            full_every: 1,
            known: Vec::new(),
        }
    }
}

impl Settings {
    /// The wall-clock limit of a case (`--hang-wall-secs`).
    fn wall_limit(&self) -> Duration {
        self.hang_wall.unwrap_or(self.hang.saturating_mul(5))
    }
}

/// Whole microseconds, for the workers' lines.
fn micros(time: Duration) -> u64 {
    u64::try_from(time.as_micros()).unwrap_or(u64::MAX)
}

fn main() -> ExitCode {
    // The HDF5 reader the `hdf5` stage reads damaged files with: this
    // binary, as `op2` is its own (op2_instance's child module).
    let mut raw = std::env::args_os().skip(1);
    if raw.next().as_deref() == Some(std::ffi::OsStr::new(op2_instance::READER_COMMAND)) {
        return op2_instance::reader_main(&raw.collect::<Vec<_>>());
    }
    if cfg!(target_os = "linux") {
        op2_fuzz::set_damages_hdf5();
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

fn number(args: &[String], i: &mut usize, name: &str) -> Result<u64, String> {
    *i += 1;
    let value = args
        .get(*i)
        .ok_or_else(|| format!("`{name}` needs a value"))?;
    value
        .replace('_', "")
        .parse()
        .map_err(|_| format!("`{name}` needs a number, not `{value}`"))
}

fn run(args: &[String]) -> Result<ExitCode, String> {
    let mut settings = Settings::default();
    let mut mode = "campaign";
    let mut worker_first = 0;
    let mut worker_step = 1;
    let mut one_case = None;
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        match arg {
            "worker" | "replay" | "save" if i == 0 => mode = arg,
            "--cases" | "--count" => settings.cases = number(args, &mut i, arg)?,
            "--seed" => settings.seed = number(args, &mut i, arg)?,
            "--jobs" => settings.jobs = number(args, &mut i, arg)?.max(1),
            "--from" | "--start" => settings.start = number(args, &mut i, arg)?,
            "--first" => worker_first = number(args, &mut i, arg)?,
            "--step" => worker_step = number(args, &mut i, arg)?.max(1),
            "--case" => one_case = Some(number(args, &mut i, arg)?),
            "--slow-secs" => settings.slow = Duration::from_secs(number(args, &mut i, arg)?),
            "--hang-secs" => settings.hang = Duration::from_secs(number(args, &mut i, arg)?),
            "--hang-wall-secs" => {
                settings.hang_wall = Some(Duration::from_secs(number(args, &mut i, arg)?));
            }
            "--memory-mb" => settings.memory_mb = number(args, &mut i, arg)?,
            "--quiet" => settings.quiet = true,
            "--print-cases" => settings.print_cases = true,
            "--tame" => settings.tame = true,
            "--import" => settings.import = true,
            "--full-every" => settings.full_every = number(args, &mut i, arg)?.max(1),
            "--known" => {
                i += 1;
                let path = args.get(i).ok_or("`--known` needs a file")?;
                let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
                settings.known.extend(
                    text.lines()
                        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
                        .map(|l| l.split('\t').next().unwrap_or(l).to_string()),
                );
            }
            "--out" => {
                i += 1;
                settings.out = PathBuf::from(args.get(i).ok_or("`--out` needs a folder")?);
            }
            "--files" => {
                settings
                    .files
                    .extend(args[i + 1..].iter().map(PathBuf::from));
                i = args.len();
            }
            "-h" | "--help" => {
                println!("{}", HELP.trim());
                return Ok(ExitCode::SUCCESS);
            }
            _ if mode == "replay" && !arg.starts_with("--") => {
                settings.files.extend(expand(Path::new(arg))?);
            }
            _ => return Err(format!("unknown argument `{arg}` (see --help)")),
        }
        i += 1;
    }
    op2_fuzz::set_tame(settings.tame);
    op2_fuzz::set_import(settings.import);
    op2_fuzz::set_full_every(settings.full_every);
    match mode {
        "worker" => Ok(worker(&settings, worker_first, worker_step)),
        "save" => {
            let corpus = Corpus::load();
            let index = one_case.ok_or("`save` needs --case")?;
            save_case(&corpus, &settings, index);
            Ok(ExitCode::SUCCESS)
        }
        "replay" => {
            if settings.files.is_empty() {
                return Err("`replay` needs files or folders".into());
            }
            settings.cases = settings.files.len() as u64;
            settings.start = 0;
            Ok(supervise(&settings))
        }
        _ => {
            if let Some(index) = one_case {
                settings.start = index;
                settings.cases = 1;
                settings.jobs = 1;
            }
            Ok(supervise(&settings))
        }
    }
}

const HELP: &str = "
op2-fuzz: fuzzing campaigns against op2's commands and language server

usage:
  op2-fuzz [--cases N] [--seed S] [--jobs J] [--out DIR] [--from I]
           [--slow-secs T] [--hang-secs T] [--hang-wall-secs W] [--memory-mb M]
           [--quiet] [--tame]
           [--known FILE] [--full-every N] [--print-cases] [--import]
  op2-fuzz --seed S --case I     run case I of campaign S again
  op2-fuzz replay PATH...        run saved inputs (.op2 and .lsp files, folders)

--from I starts at case I: the campaign runs cases I..I+N (default 0). A
case is a function of the seed and its index alone, so one campaign can be
run in disjoint ranges, at different times, by the same binary; the summary
names the range (`--start` is an older name of --from).
--print-cases prints a line per case: `case I FINGERPRINT REACHED`, a hash of
the case's input and the last command it went through.
--tame leaves out hostile sizes, depths, repetitions and malformed protocol
messages (the test suite's campaign uses it while those defects are open).
--known FILE names findings that are known and open (a substring of the
message per line, a tab and a note after it): they are reported as known and
do not fail the campaign.
--full-every N sends one program case in N (those whose index N divides) on
to build, run and simulate; the others stop after parse, check and fmt
(default 1: every case goes through every command). The summary's `stages`
line says how many cases each command ran for.
--slow-secs T (default 10) reports a case that used more than T s of CPU
time as slow; --hang-secs T (default 120) kills the worker of a case that
used more than T s of CPU time and reports a hang. Both count the worker's
CPU time during the case (all its threads), not the wall clock, so load on
the machine or a paused campaign makes no case slow. --hang-wall-secs W
(default five times --hang-secs) kills a case that has run W s of wall time
whatever its CPU time (one blocked or asleep); time while the campaign
itself was stopped does not count. Each finding says which limit it passed.
--import makes every case a C/C++ application (the import's test applications
mutated, or a generated hostile one) through `op2 import`'s translation, with
a synthetic capture: nothing is compiled or run.
Findings are written to DIR (default fuzz-findings) as input files with a
.finding.txt beside each; the exit code is 1 when there is any.
";

/// The `.op2` and `.lsp` files under `path`.
fn expand(path: &Path) -> Result<Vec<PathBuf>, String> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let entries = std::fs::read_dir(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "op2" || e == "lsp"))
        .collect();
    files.sort();
    Ok(files)
}

/// The case with this index: a file of the list, or a campaign's case.
fn make_case(corpus: &Corpus, settings: &Settings, index: u64) -> Result<Case, String> {
    if index == 1 && std::env::var("OP2_FUZZ_SELF_TEST").is_ok_and(|w| w == "abort-making") {
        std::process::abort();
    }
    if settings.files.is_empty() {
        Ok(Case::new(corpus, settings.seed, index).0)
    } else {
        let path = settings
            .files
            .get(index as usize)
            .ok_or_else(|| format!("no file {index}"))?;
        Case::from_file(path)
    }
}

fn case_name(settings: &Settings, index: u64) -> String {
    if settings.files.is_empty() {
        format!("seed {} case {index}", settings.seed)
    } else {
        settings.files[index as usize].display().to_string()
    }
}

// ---------------------------------------------------------------- worker

fn worker(settings: &Settings, first: u64, step: u64) -> ExitCode {
    panic::set_hook(Box::new(|info| {
        let thread = std::thread::current();
        let message = format!("{info} (thread {})", thread.name().unwrap_or("unnamed"));
        if let Ok(mut panics) = PANICS.lock() {
            panics.push(message);
        }
    }));
    let settings = settings.clone();
    // The cases run on a thread with the default 2 MB stack of spawned
    // threads, as the language server's threads have.
    let handle = std::thread::Builder::new()
        .name("op2-fuzz case".into())
        .stack_size(2 << 20)
        .spawn(move || worker_loop(&settings, first, step));
    match handle.map(std::thread::JoinHandle::join) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        _ => ExitCode::from(3),
    }
}

/// The case being run and since when, for the watchdog.
static CURRENT: Mutex<Option<(u64, Instant)>> = Mutex::new(None);

fn worker_loop(settings: &Settings, first: u64, step: u64) {
    let corpus = Corpus::load();
    let stdout = std::io::stdout();
    // Tells the supervisor which stage a long case is in, so that a hang
    // is reported with the command that hung.
    std::thread::spawn(|| {
        let mut told = None;
        loop {
            std::thread::sleep(Duration::from_millis(500));
            let current = CURRENT.lock().ok().and_then(|c| *c);
            if let Some((index, since)) = current
                && since.elapsed() > Duration::from_secs(3)
                && told != Some(index)
            {
                told = Some(index);
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "stage {index} {}", op2_fuzz::stage());
                let _ = out.flush();
            }
        }
    });
    let end = settings.start + settings.cases;
    let mut index = first;
    while index < end {
        // The process's CPU time when the case begins, for the
        // supervisor's hang limit (`-` where it cannot be read).
        let cpu_began = cpu::own();
        {
            let mut out = stdout.lock();
            let cpu = cpu_began.map_or("-".to_string(), |t| micros(t).to_string());
            let _ = writeln!(out, "begin {index} {cpu}");
            let _ = out.flush();
        }
        let case = make_case(&corpus, settings, index);
        let fingerprint = case.as_ref().map_or(0, fingerprint);
        if let Ok(mut panics) = PANICS.lock() {
            panics.clear();
        }
        // The case's own time starts here, after it is made (the
        // supervisor's limits count the making too).
        let cpu_started = cpu::own();
        let started = Instant::now();
        if let Ok(mut current) = CURRENT.lock() {
            *current = Some((index, started));
        }
        let mut made = None;
        let mut reached = "none";
        let result = match &case {
            Ok(case) => {
                let mut rng = Rng::for_case(settings.seed ^ 0x5EED, index);
                match panic::catch_unwind(AssertUnwindSafe(|| {
                    self_test(index);
                    run_case(case, &mut rng, &mut made)
                })) {
                    Ok(result) => result,
                    Err(_) => Err(Finding {
                        kind: "panic".into(),
                        stage: "case".into(),
                        message: String::new(),
                    }),
                }
            }
            Err(message) => Err(Finding::property("input", message.clone())),
        };
        let elapsed = started.elapsed();
        // The case's CPU time, all the worker's threads; the wall time
        // where it cannot be read.
        let cpu_time = cpu::own()
            .zip(cpu_started)
            .map(|(end, began)| end.saturating_sub(began));
        let used = cpu_time.unwrap_or(elapsed);
        if let Ok(mut current) = CURRENT.lock() {
            *current = None;
        }
        let panics = PANICS.lock().map(|p| p.clone()).unwrap_or_default();
        if let Ok(outcome) = &result {
            reached = outcome.word();
        }
        let finding = match result {
            Err(mut finding) if finding.kind == "panic" => {
                finding.message = panics.join("; ");
                Some(finding)
            }
            Err(finding) => Some(finding),
            Ok(_) if !panics.is_empty() => Some(Finding {
                kind: "panic".into(),
                stage: "caught".into(),
                message: panics.join("; "),
            }),
            Ok(_) if used > settings.slow => Some(Finding {
                kind: "slow".into(),
                stage: "case".into(),
                message: match cpu_time {
                    Some(cpu) => format!(
                        "took {:.1} s of CPU time, over the limit of {} s of CPU (--slow-secs), \
                         and {:.1} s of wall time, last in {}",
                        cpu.as_secs_f64(),
                        settings.slow.as_secs(),
                        elapsed.as_secs_f64(),
                        op2_fuzz::stage()
                    ),
                    None => format!(
                        "took {:.1} s of wall time (CPU time cannot be read here), over the \
                         limit of {} s (--slow-secs), last in {}",
                        elapsed.as_secs_f64(),
                        settings.slow.as_secs(),
                        op2_fuzz::stage()
                    ),
                },
            }),
            Ok(_) => None,
        };
        let mut out = stdout.lock();
        if let Some(finding) = finding {
            let saved = match (&case, settings.files.is_empty()) {
                (Ok(case), true) => {
                    save(case, settings, index, &finding, made.as_deref()).unwrap_or_default()
                }
                _ => String::new(),
            };
            let line = finding.to_string().replace('\n', " ");
            let _ = writeln!(out, "finding {index} {saved}\t{line}");
        }
        let _ = writeln!(
            out,
            "end {index} {} {reached} {fingerprint:016x} {}",
            micros(used),
            micros(elapsed)
        );
        let _ = out.flush();
        index += step;
    }
}

/// A hash of a case's input (with `--print-cases`): equal for the same case
/// wherever in a campaign's ranges it runs.
fn fingerprint(case: &Case) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    match case {
        Case::Program(program) => {
            program.text.hash(&mut hasher);
            program.imports.hash(&mut hasher);
            program.instance.hash(&mut hasher);
            program.max_iterations.hash(&mut hasher);
            program.seed.hash(&mut hasher);
            program.execute.hash(&mut hasher);
            program.full.hash(&mut hasher);
        }
        Case::Lsp(script) => script.chunks.hash(&mut hasher),
        Case::Import(app) => {
            app.main.hash(&mut hasher);
            app.files.hash(&mut hasher);
            app.capture_seed.hash(&mut hasher);
            app.mutate_capture.hash(&mut hasher);
        }
    }
    hasher.finish()
}

/// A hash of the corpus the cases are mutated from: chunks of one campaign
/// run the same cases only when it is the same.
fn corpus_fingerprint(corpus: &Corpus) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    for seed in &corpus.seeds {
        (&seed.name, &seed.text, &seed.instance).hash(&mut hasher);
    }
    hasher.finish()
}

/// With `OP2_FUZZ_SELF_TEST` set, case 1 misbehaves on purpose (`overflow`,
/// `panic`, `abort`, `hang`: asleep for ever, `spin`: busy for ever;
/// `abort-making` aborts while the case is made, in [`make_case`]), so
/// that tests can check that each becomes a finding and the campaign goes
/// on; or takes time: `sleep` 3 s of wall time asleep, `busy` 1.5 s of CPU
/// time.
fn self_test(index: u64) {
    let Ok(what) = std::env::var("OP2_FUZZ_SELF_TEST") else {
        return;
    };
    if index != 1 {
        return;
    }
    match what.as_str() {
        "overflow" => {
            std::hint::black_box(deep(std::hint::black_box(u64::MAX)));
        }
        "panic" => panic!("self test"),
        "abort" => std::process::abort(),
        "hang" => loop {
            std::thread::sleep(Duration::from_secs(1));
        },
        "spin" => loop {
            std::hint::black_box(deep(std::hint::black_box(1000)));
        },
        "sleep" => std::thread::sleep(Duration::from_secs(3)),
        "busy" => {
            let began = cpu::own();
            let started = Instant::now();
            let used = || match (cpu::own(), began) {
                (Some(now), Some(began)) => now.saturating_sub(began),
                _ => started.elapsed(),
            };
            while used() < Duration::from_millis(1500) {
                std::hint::black_box(deep(std::hint::black_box(1000)));
            }
        }
        _ => {}
    }
}

/// Recursion as deep as `n`: far deeper than any stack.
fn deep(n: u64) -> u64 {
    let frame = std::hint::black_box([n; 64]);
    if n == 0 {
        return frame[0];
    }
    deep(n - 1).wrapping_add(frame[1])
}

/// Saves a case that found something; returns the main file's path.
fn save(
    case: &Case,
    settings: &Settings,
    index: u64,
    finding: &Finding,
    instance: Option<&[u8]>,
) -> std::io::Result<String> {
    let stem = format!(
        "seed{}-case{index}-{}-{}",
        settings.seed, finding.kind, finding.stage
    );
    let path = case.save(&settings.out, &stem, instance)?;
    let note = format!(
        "{finding}\n\nreplay: op2-fuzz replay {}\nregenerate: op2-fuzz --seed {} --case {index}\n",
        path.display(),
        settings.seed
    );
    std::fs::write(settings.out.join(format!("{stem}.finding.txt")), note)?;
    Ok(path.display().to_string())
}

/// `save`: writes a case that killed its worker. The program first, then
/// (since making it may analyse the program, which is what crashed) the
/// instance data it would have had.
fn save_case(corpus: &Corpus, settings: &Settings, index: u64) {
    let Ok(case) = make_case(corpus, settings, index) else {
        return;
    };
    let kind = std::env::var("OP2_FUZZ_KIND").unwrap_or_else(|_| "crash".into());
    let message = std::env::var("OP2_FUZZ_MESSAGE").unwrap_or_default();
    let finding = Finding {
        kind,
        stage: "process".into(),
        message,
    };
    let _ = save(&case, settings, index, &finding, None);
    if let Case::Program(program) = &case
        && program.instance.is_none()
    {
        let mut rng = Rng::for_case(settings.seed ^ 0x5EED, index);
        let text = String::from_utf8_lossy(&program.text).into_owned();
        let analysis = op2_analysis::analyse_text(
            Path::new(op2_fuzz::pipeline::ROOT),
            &text,
            &op2_analysis::Options { require_main: true },
        );
        let json = op2_fuzz::instance::generate(&analysis.program, &mut rng);
        let _ = save(&case, settings, index, &finding, Some(&json));
    }
}

// ------------------------------------------------------------ supervisor

enum Event {
    Line(usize, String),
    Closed(usize),
}

/// A case a worker is running, for the hang limits.
#[derive(Clone, Copy, Debug)]
struct Running {
    index: u64,
    /// The supervisor's awake time (see `supervise`) when the case began.
    awake: Duration,
    /// The worker's CPU time when the case began, as the worker said.
    cpu: Option<Duration>,
}

/// A gap longer than this between two turns of the supervisor's loop (which
/// turns at least every half second) is a pause of the whole campaign
/// (SIGSTOP, a suspended machine): it does not count towards the wall-clock
/// limit of the cases running.
const PAUSED: Duration = Duration::from_secs(5);

struct Job {
    child: Option<Child>,
    /// Case indices this job has left, in order.
    queue: VecDeque<u64>,
    current: Option<Running>,
    /// The stage the current case was in when it became slow.
    stage: String,
    stderr: Tail,
    generation: u64,
}

/// The head of a worker's standard error, read by a thread of its own.
#[derive(Default)]
struct Tail {
    text: Arc<Mutex<Vec<u8>>>,
    /// Told when the reading thread has read to the end.
    ended: Option<mpsc::Receiver<()>>,
}

impl Tail {
    /// What the worker wrote, once the reading thread has read to the end
    /// or `wait` has passed (a process the worker started may hold the
    /// pipe open after the worker died). Read before then, a dead worker's
    /// last words could still be in the pipe, and the finding would not
    /// say what happened.
    fn read(&self, wait: Duration) -> String {
        if let Some(ended) = &self.ended {
            let _ = ended.recv_timeout(wait);
        }
        self.text
            .lock()
            .map(|t| String::from_utf8_lossy(&t).into_owned())
            .unwrap_or_default()
    }
}

fn spawn_worker(
    settings: &Settings,
    job: usize,
    queue: &VecDeque<u64>,
    events: &mpsc::Sender<(u64, Event)>,
    generation: u64,
) -> Option<(Child, Tail)> {
    let (first, last) = (*queue.front()?, *queue.back()?);
    let step = settings.jobs;
    let exe = std::env::current_exe().ok()?;
    let mut command = limited(settings, &exe);
    command
        .arg("worker")
        .args(["--seed", &settings.seed.to_string()])
        .args(["--start", "0", "--cases", &(last + 1).to_string()])
        .args(["--first", &first.to_string(), "--step", &step.to_string()])
        .args(["--slow-secs", &settings.slow.as_secs().to_string()])
        .arg("--out")
        .arg(&settings.out);
    if settings.import {
        command.arg("--import");
    }
    if settings.tame {
        command.arg("--tame");
    }
    command.args(["--full-every", &settings.full_every.to_string()]);
    if !settings.files.is_empty() {
        command.arg("--files").args(&settings.files);
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().ok()?;
    let stdout = child.stdout.take()?;
    let mut stderr = child.stderr.take()?;
    let sender = events.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            match line {
                Ok(line) => {
                    if sender.send((generation, Event::Line(job, line))).is_err() {
                        return;
                    }
                }
                Err(_) => break,
            }
        }
        let _ = sender.send((generation, Event::Closed(job)));
    });
    let text = Arc::new(Mutex::new(Vec::new()));
    let keep = Arc::clone(&text);
    let (ended, at_end) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buffer) {
            if n == 0 {
                break;
            }
            if let Ok(mut kept) = keep.lock() {
                // The head says what happened (the backtrace follows).
                let room = 8192usize.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..n.min(room)]);
            }
        }
        let _ = ended.send(());
    });
    Some((
        child,
        Tail {
            text,
            ended: Some(at_end),
        },
    ))
}

fn supervise(settings: &Settings) -> ExitCode {
    let started = Instant::now();
    let (sender, events) = mpsc::channel::<(u64, Event)>();
    let mut jobs: Vec<Job> = (0..settings.jobs)
        .map(|j| Job {
            child: None,
            queue: (settings.start + j..settings.start + settings.cases)
                .step_by(settings.jobs as usize)
                .collect(),
            current: None,
            stage: String::new(),
            stderr: Tail::default(),
            generation: 0,
        })
        .collect();
    let mut generation = 0;
    for (j, job) in jobs.iter_mut().enumerate() {
        generation += 1;
        job.generation = generation;
        if let Some((child, tail)) = spawn_worker(settings, j, &job.queue, &sender, generation) {
            job.child = Some(child);
            job.stderr = tail;
        } else if !job.queue.is_empty() {
            eprintln!("error: cannot start a worker");
            return ExitCode::from(2);
        }
    }
    let mut done = 0u64;
    let mut reached = Reached::default();
    let mut total_micros = 0u64;
    // The slowest cases: CPU and wall time in microseconds, index.
    let mut slowest: Vec<(u64, u64, u64)> = Vec::new();
    let mut findings: Vec<String> = Vec::new();
    let mut last_report = Instant::now();
    let mut last_done = 0u64;
    // Wall time the supervisor has been running, less the pauses.
    let mut awake = Duration::ZERO;
    let mut tick = Instant::now();
    while jobs.iter().any(|j| j.child.is_some()) {
        let event = events.recv_timeout(Duration::from_millis(500));
        let now = Instant::now();
        let gap = now.duration_since(tick);
        if gap <= PAUSED {
            awake += gap;
        }
        tick = now;
        let mut dead: Option<(usize, String, &'static str)> = None;
        match event {
            Ok((generation, event)) => {
                let j = match &event {
                    Event::Line(j, _) | Event::Closed(j) => *j,
                };
                if jobs[j].generation != generation {
                    continue;
                }
                match event {
                    Event::Line(_, line) => {
                        if let Some(rest) = line.strip_prefix("begin ") {
                            let mut fields = rest.split(' ');
                            let index = fields.next().and_then(|i| i.parse().ok()).unwrap_or(0);
                            let cpu = fields.next().and_then(|c| c.parse().ok());
                            jobs[j].current = Some(Running {
                                index,
                                awake,
                                cpu: cpu.map(Duration::from_micros),
                            });
                            while jobs[j].queue.front().is_some_and(|&q| q <= index) {
                                jobs[j].queue.pop_front();
                            }
                        } else if let Some(rest) = line.strip_prefix("end ") {
                            jobs[j].current = None;
                            jobs[j].stage.clear();
                            done += 1;
                            let mut fields = rest.split(' ');
                            let index = fields.next();
                            let micros = fields.next();
                            let went = fields.next().unwrap_or("none");
                            reached.count(went);
                            let fingerprint = fields.next().unwrap_or("-");
                            if settings.print_cases {
                                println!("case {} {fingerprint} {went}", index.unwrap_or("-"));
                            }
                            let wall: u64 = fields.next().and_then(|w| w.parse().ok()).unwrap_or(0);
                            if let (Some(index), Some(micros)) = (index, micros) {
                                let micros: u64 = micros.parse().unwrap_or(0);
                                total_micros += micros;
                                slowest.push((micros, wall, index.parse().unwrap_or(0)));
                                slowest.sort_unstable_by(|a, b| b.cmp(a));
                                slowest.truncate(5);
                            }
                        } else if let Some(rest) = line.strip_prefix("stage ") {
                            jobs[j].stage = rest.split_once(' ').map_or("", |(_, s)| s).to_string();
                        } else if let Some(rest) = line.strip_prefix("finding ") {
                            let (head, what) = rest.split_once('\t').unwrap_or((rest, ""));
                            let (index, path) = head.split_once(' ').unwrap_or((head, ""));
                            let name = case_name(settings, index.parse().unwrap_or(0));
                            let report = format!(
                                "{name}: {what}{}",
                                if path.is_empty() {
                                    String::new()
                                } else {
                                    format!(" (saved as {path})")
                                }
                            );
                            eprintln!("FINDING {report}");
                            findings.push(report);
                        }
                    }
                    Event::Closed(_) => {
                        let status = jobs[j].child.as_mut().and_then(|c| c.wait().ok());
                        let clean = status
                            .as_ref()
                            .is_some_and(std::process::ExitStatus::success);
                        if clean && jobs[j].current.is_none() {
                            jobs[j].child = None;
                        } else {
                            let tail = jobs[j].stderr.read(Duration::from_secs(5));
                            let last_line = what_happened(&tail);
                            let how = status.as_ref().map_or("vanished".to_string(), ended);
                            dead = Some((j, format!("the worker {how}: {last_line}"), "crash"));
                        }
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if dead.is_none() {
            for (j, job) in jobs.iter().enumerate() {
                if let Some(running) = job.current
                    && let Some(message) = hung(settings, job, running, awake)
                {
                    dead = Some((j, message, "hang"));
                    break;
                }
            }
        }
        if let Some((j, message, kind)) = dead {
            let job = &mut jobs[j];
            if let Some(mut child) = job.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
            job.stage.clear();
            if let Some(Running { index, .. }) = job.current.take() {
                done += 1;
                let name = case_name(settings, index);
                let mut saved = String::new();
                if settings.files.is_empty() {
                    saved = format!(" ({})", save_dead(settings, index, kind, &message));
                }
                let report = format!("{name}: {kind} in process: {message}{saved}");
                eprintln!("FINDING {report}");
                findings.push(report);
            }
            generation += 1;
            job.generation = generation;
            if let Some((child, tail)) = spawn_worker(settings, j, &job.queue, &sender, generation)
            {
                job.child = Some(child);
                job.stderr = tail;
            }
        }
        if !settings.quiet && last_report.elapsed() > Duration::from_secs(10) {
            let rate = (done - last_done) as f64 / last_report.elapsed().as_secs_f64();
            eprintln!(
                "{done} of {} cases, {rate:.0} cases/s, {} findings, {:.0} s ({})",
                settings.cases,
                findings.len(),
                started.elapsed().as_secs_f64(),
                reached.summary()
            );
            last_report = Instant::now();
            last_done = done;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let (known, findings): (Vec<String>, Vec<String>) = findings
        .into_iter()
        .partition(|f| settings.known.iter().any(|k| f.contains(k.as_str())));
    println!(
        "{done} cases (seed {}, cases {}..{}) in {elapsed:.1} s: {:.0} cases/s with {} jobs; {} findings{}",
        settings.seed,
        settings.start,
        settings.start + settings.cases,
        done as f64 / elapsed.max(1e-9),
        settings.jobs,
        findings.len(),
        if known.is_empty() {
            String::new()
        } else {
            format!(", and {} of known open defects (--known)", known.len())
        }
    );
    println!("stages: {}", reached.summary());
    if settings.files.is_empty() {
        let corpus = Corpus::load();
        println!(
            "corpus: {} programs from {}, fingerprint {:016x}",
            corpus.seeds.len(),
            op2_fuzz::corpus::repository().display(),
            corpus_fingerprint(&corpus)
        );
    }
    for finding in &known {
        println!("  KNOWN {finding}");
    }
    if done > 0 {
        println!(
            "mean case {:.2} ms of CPU; slowest in CPU time: {}",
            total_micros as f64 / done as f64 / 1e3,
            slowest
                .iter()
                .map(|(micros, wall, index)| format!(
                    "{} ({:.2} s of CPU, {:.2} s of wall time)",
                    case_name(settings, *index),
                    *micros as f64 / 1e6,
                    *wall as f64 / 1e6
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for finding in &findings {
        println!("  {finding}");
    }
    if findings.is_empty() && done == settings.cases {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Why the case `running` of `job` counts as hung, if it does: its worker
/// used more CPU time on it than `--hang-secs` allows (the wall time where
/// the worker's CPU time cannot be read), or it has run longer than the
/// wall-clock limit while the supervisor was `awake`.
fn hung(settings: &Settings, job: &Job, running: Running, awake: Duration) -> Option<String> {
    let stage = if job.stage.is_empty() {
        "an unknown stage"
    } else {
        job.stage.as_str()
    };
    let wall = awake.saturating_sub(running.awake);
    let pid = job.child.as_ref().map(Child::id);
    let cpu = running
        .cpu
        .zip(pid.and_then(cpu::of))
        .map(|(began, now)| now.saturating_sub(began));
    match cpu {
        Some(cpu) if cpu > settings.hang => Some(format!(
            "used {:.1} s of CPU time, over the limit of {} s of CPU (--hang-secs), in \
             {:.1} s of wall time, in {stage}",
            cpu.as_secs_f64(),
            settings.hang.as_secs(),
            wall.as_secs_f64()
        )),
        None if wall > settings.hang => Some(format!(
            "no answer within {} s (--hang-secs, in wall time: the worker's CPU time cannot be \
             read here), in {stage}",
            settings.hang.as_secs()
        )),
        _ if wall > settings.wall_limit() => Some(format!(
            "no answer within {} s of wall time (--hang-wall-secs, the limit for a case that \
             waits without using the processor; it used {} of CPU time), in {stage}",
            settings.wall_limit().as_secs(),
            cpu.map_or("an unknown amount".to_string(), |c| format!(
                "{:.1} s",
                c.as_secs_f64()
            ))
        )),
        _ => None,
    }
}

/// How far the cases of a campaign went, from the workers' `end` lines.
#[derive(Clone, Copy, Debug, Default)]
struct Reached {
    /// Programs through parse, check and fmt that stopped there.
    checked: u64,
    /// Programs built (graph type and, with instance data, instance).
    built: u64,
    /// Programs built, run and simulated.
    ran: u64,
    /// Of those, the ones where values differed that the order of sums
    /// may move by any amount (not compared), or that the reference run in
    /// another order moved as far (not failures).
    order_dependent: u64,
    /// Language server sessions.
    sessions: u64,
    /// Cases that ended in a finding (where they stopped is not counted).
    other: u64,
}

impl Reached {
    fn count(&mut self, word: &str) {
        match word {
            "checked" => self.checked += 1,
            "built" => self.built += 1,
            "ran" => self.ran += 1,
            "ran-order" => {
                self.ran += 1;
                self.order_dependent += 1;
            }
            "lsp" => self.sessions += 1,
            _ => self.other += 1,
        }
    }

    /// Each command and how many cases it ran for.
    fn summary(&self) -> String {
        let programs = self.checked + self.built + self.ran;
        format!(
            "parse, check and fmt {programs}; build {}; run and simulate {} ({} with values that differ where the order of sums moves them, not compared or explained by another order); lsp sessions {}; ended in a finding {}",
            self.built + self.ran,
            self.ran,
            self.order_dependent,
            self.sessions,
            self.other
        )
    }
}

/// A command running `exe` under the memory limit (`ulimit -v` through
/// `sh`, on Unix).
fn limited(settings: &Settings, exe: &Path) -> Command {
    if settings.memory_mb > 0 && cfg!(unix) {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!(
                "ulimit -v {} && exec \"$0\" \"$@\"",
                settings.memory_mb * 1024
            ))
            .arg(exe);
        command
    } else {
        Command::new(exe)
    }
}

/// Saves the input of a case whose worker died, in a process of its own,
/// and says where it is, or why it is not: a saving process that dies too
/// died making the case (it does nothing else before writing it), so the
/// defect is in this fuzzer's generator, not in op2.
fn save_dead(settings: &Settings, index: u64, kind: &str, message: &str) -> String {
    let Ok(exe) = std::env::current_exe() else {
        return "not saved: this executable cannot be found again to save it".into();
    };
    let mut command = limited(settings, &exe);
    command.arg("save");
    if settings.import {
        command.arg("--import");
    }
    let status = command
        .args([
            "--seed",
            &settings.seed.to_string(),
            "--case",
            &index.to_string(),
        ])
        .arg("--out")
        .arg(&settings.out)
        .env("OP2_FUZZ_KIND", kind)
        .env("OP2_FUZZ_MESSAGE", message)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .and_then(|mut c| {
            // Saving analyses the program to make its instance: bounded
            // like a case.
            let deadline = Instant::now() + settings.wall_limit();
            loop {
                if let Some(status) = c.try_wait()? {
                    return Ok(status);
                }
                if Instant::now() > deadline {
                    let _ = c.kill();
                    return c.wait();
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
    let note = settings.out.join(format!(
        "seed{}-case{index}-{kind}-process.finding.txt",
        settings.seed
    ));
    match status {
        Err(error) => format!("not saved: the saving process cannot be run: {error}"),
        Ok(_) if note.is_file() => format!("saved in {}", settings.out.display()),
        Ok(status) => format!(
            "not saved: the process that makes the case again to save it ended too ({}), \
             before writing anything: making the case is what fails, a defect of op2-fuzz's \
             generator rather than of op2; see it with `op2-fuzz save --seed {} --case {index} \
             --out DIR` under a debugger",
            ended(&status),
            settings.seed
        ),
    }
}

/// How a process ended, in words: `killed by signal 6`, `exited with ...`.
fn ended(status: &std::process::ExitStatus) -> String {
    match signal_of(status) {
        Some(signal) => format!("killed by signal {signal}"),
        None => format!("exited with {status}"),
    }
}

/// The line of a dead worker's standard error that says why it died.
fn what_happened(stderr: &str) -> String {
    const SIGNS: &[&str] = &[
        "overflowed its stack",
        "memory allocation",
        "panicked",
        "fatal runtime error",
        "abort",
    ];
    stderr
        .lines()
        .find(|l| SIGNS.iter().any(|s| l.contains(s)))
        .or_else(|| stderr.lines().find(|l| !l.trim().is_empty()))
        .unwrap_or("")
        .trim()
        .to_string()
}

#[cfg(unix)]
fn signal_of(status: &std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}

#[cfg(not(unix))]
fn signal_of(_status: &std::process::ExitStatus) -> Option<i32> {
    None
}
