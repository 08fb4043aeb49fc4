//! What an import did with each part of the application.

use std::fmt;

use crate::c::Location;

/// How a construct of the application fared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Translated into `.op2` with the same meaning.
    Translated,
    /// Executed during the capture; its result is in the instance or the
    /// program's values.
    Captured,
    /// Left out because it does not affect what the program computes or
    /// prints (timers, diagnostics, profiling), or with a note saying what
    /// is lost.
    Dropped,
    /// Not translated, or translated with a different meaning: the result
    /// is not faithful.
    NotTranslated,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Translated => "translated",
            Kind::Captured => "captured",
            Kind::Dropped => "dropped",
            Kind::NotTranslated => "not translated",
        }
    }
}

/// One line of the report.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    /// What happened.
    pub kind: Kind,
    /// Where in the C sources, when it concerns one place.
    pub location: Option<Location>,
    /// What it is (lower case, no trailing period).
    pub message: String,
    /// What the user can do about it.
    pub suggestion: Option<String>,
}

/// Everything the import did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// In the order they were found.
    pub entries: Vec<Entry>,
}

impl Report {
    /// Adds an entry.
    pub fn add(
        &mut self,
        kind: Kind,
        location: Option<Location>,
        message: impl Into<String>,
        suggestion: Option<&str>,
    ) {
        self.entries.push(Entry {
            kind,
            location,
            message: message.into(),
            suggestion: suggestion.map(str::to_owned),
        });
    }

    /// Adds a construct that is not translated.
    pub fn not_translated(&mut self, at: Location, message: String, help: Option<&str>) {
        self.add(Kind::NotTranslated, Some(at), message, help);
    }

    /// Whether the `.op2` program and instance mean what the application
    /// means: nothing was left untranslated or approximated.
    pub fn faithful(&self) -> bool {
        !self.entries.iter().any(|e| e.kind == Kind::NotTranslated)
    }

    /// The entries of one kind.
    pub fn of(&self, kind: Kind) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(move |e| e.kind == kind)
    }
}

/// `n` and the noun that goes with it: `1 error`, `2 errors` (`one` and
/// `many` its singular and plural), as every count of the report is written.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl fmt::Display for Report {
    /// Grouped by kind: translated and captured as one line each, dropped
    /// and not translated item by item.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for kind in [
            Kind::Translated,
            Kind::Captured,
            Kind::Dropped,
            Kind::NotTranslated,
        ] {
            let entries: Vec<_> = self.of(kind).collect();
            if entries.is_empty() {
                continue;
            }
            writeln!(f, "{} ({}):", kind.label(), entries.len())?;
            for entry in entries {
                match &entry.location {
                    Some(location) => writeln!(f, "  {location}: {}", entry.message)?,
                    None => writeln!(f, "  {}", entry.message)?,
                }
                if let Some(suggestion) = &entry.suggestion {
                    writeln!(f, "    help: {suggestion}")?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_take_the_singular_for_one() {
        assert_eq!(count(0, "error", "errors"), "0 errors");
        assert_eq!(count(1, "error", "errors"), "1 error");
        assert_eq!(count(2, "entry", "entries"), "2 entries");
    }
}
