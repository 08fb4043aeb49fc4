//! `op2 completions SHELL` and `op2 man`: shell completions and manual
//! pages generated from the same command definitions the parser uses, so
//! they never fall behind the commands.

use std::io::{self, Write};
use std::path::Path;

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::{Cli, Outcome};

/// Prints the completion script of `shell` on standard output.
pub fn completions(shell: Shell) -> Result<Outcome> {
    let mut command = Cli::command();
    let mut out = io::stdout().lock();
    clap_complete::generate(shell, &mut command, "op2", &mut out);
    out.flush()?;
    Ok(Outcome::Success)
}

/// Prints `op2(1)` on standard output, or with `directory` writes
/// `op2.1` and one `op2-COMMAND.1` per command there.
pub fn man(directory: Option<&Path>) -> Result<Outcome> {
    let command = Cli::command();
    let Some(directory) = directory else {
        let mut roff = Vec::new();
        clap_mangen::Man::new(command).render(&mut roff)?;
        let mut out = io::stdout().lock();
        out.write_all(ascii_roff(&roff).as_bytes())?;
        out.flush()?;
        return Ok(Outcome::Success);
    };
    crate::output::existing_directory("--out-dir", directory)?;
    let mut pages = vec![("op2".to_owned(), command.clone())];
    for sub in command.get_subcommands() {
        if sub.get_name() == "help" {
            continue;
        }
        let page = sub
            .clone()
            .name(format!("op2-{}", sub.get_name()))
            .bin_name(format!("op2 {}", sub.get_name()));
        pages.push((format!("op2-{}", sub.get_name()), page));
    }
    // The pages' names are op2's own: a symbolic link at one is refused
    // (it may lead anywhere), and checked for every page before any is
    // written.
    let links = op2_codegen::output::Links::Refuse;
    for (name, _) in &pages {
        let path = directory.join(format!("{name}.1"));
        op2_codegen::output::write_target_with(&path, links).map_err(|error| {
            let help = if path.is_symlink() {
                "\nhelp: remove the link, or write the pages into another `--out-dir`"
            } else {
                ""
            };
            anyhow::anyhow!("cannot write `{}`: {error}{help}", path.display())
        })?;
    }
    for (name, page) in pages {
        let mut roff = Vec::new();
        clap_mangen::Man::new(page)
            .title(name.clone())
            .render(&mut roff)?;
        let path = directory.join(format!("{name}.1"));
        op2_codegen::output::write_file_atomically_with(&path, links, ascii_roff(&roff).as_bytes())
            .with_context(|| format!("cannot write `{}`", path.display()))?;
    }
    Ok(Outcome::Success)
}

/// The page with roff's own names for the help text's few non-ASCII characters:
/// groff in the C locale has no glyph for them and warned on every `man op2`.
fn ascii_roff(roff: &[u8]) -> String {
    let text = String::from_utf8_lossy(roff);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '…' => out.push_str("..."),
            '×' => out.push_str("\\(mu"),
            '–' => out.push_str("\\(en"),
            '—' => out.push_str("\\(em"),
            '≤' => out.push_str("\\(<="),
            '≥' => out.push_str("\\(>="),
            '’' => out.push('\''),
            c if c.is_ascii() => out.push(c),
            c => out.push_str(&format!("\\[u{:04X}]", u32::from(c))),
        }
    }
    out
}
