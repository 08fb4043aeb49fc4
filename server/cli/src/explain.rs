//! `op2 explain CODE`: the long explanation of a diagnostic code, the same
//! text editors show on hover and docs/diagnostics.md collects.

use std::io::{self, IsTerminal, Write};

use anyhow::{Result, bail};
use op2_analysis::explain::{explanation, title};
use op2_syntax::Code;

use crate::{ColorChoice, Outcome, markdown};

/// The terminal's width: `COLUMNS` when set (shells export it), else 80.
fn width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(80)
}

/// On a terminal (or with `--color always`) the explanation is rendered:
/// headings in bold, code blocks indented, prose wrapped; piped, or with
/// `--color never`, it is the Markdown source.
pub fn run(code: Option<&str>, color: ColorChoice) -> Result<Outcome> {
    let rendered = match color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    };
    let mut out = io::stdout().lock();
    match code {
        Some(text) => {
            let Some(code) = Code::parse(text) else {
                bail!("`{text}` is not a diagnostic code; run `op2 explain` for the list");
            };
            let text = explanation(code);
            if rendered {
                out.write_all(markdown::render(text, width(), true).as_bytes())?;
            } else {
                out.write_all(text.as_bytes())?;
            }
        }
        None => {
            for code in Code::ALL {
                writeln!(out, "{code}  {:<7}  {}", code.severity(), title(*code))?;
            }
        }
    }
    out.flush()?;
    Ok(Outcome::Success)
}
