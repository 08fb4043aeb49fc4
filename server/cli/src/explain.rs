//! `op2 explain CODE`: the long explanation of a diagnostic code, the same
//! text editors show on hover and docs/diagnostics.md collects.

use std::io::{self, Write};

use anyhow::{Result, bail};
use op2_analysis::explain::{explanation, title};
use op2_syntax::Code;

use crate::Outcome;

pub fn run(code: Option<&str>) -> Result<Outcome> {
    let mut out = io::stdout().lock();
    match code {
        Some(text) => {
            let Some(code) = Code::parse(text) else {
                bail!("`{text}` is not a diagnostic code; run `op2 explain` for the list");
            };
            out.write_all(explanation(code).as_bytes())?;
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
