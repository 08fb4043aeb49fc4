//! Plain-data diagnostics shared by every layer: a stable code, a severity, a
//! byte range, related locations and machine-applicable fixes.
//!
//! Nothing here knows about LSP or terminals; the CLI and the language server
//! convert at their edges.

use std::fmt;

use crate::TextRange;

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The program is wrong; nothing is built.
    Error,
    /// Probably a mistake; the program still builds.
    Warning,
    /// A suggestion that would make the program better.
    Hint,
}

impl Severity {
    /// The lower-case word used in rendered output and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Hint => "hint",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

macro_rules! codes {
    ($($variant:ident = $severity:ident, $summary:literal;)*) => {
        /// Every diagnostic code of the language (language.md §10).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code {
            $(
                #[doc = $summary]
                $variant,
            )*
        }

        impl Code {
            /// Every code, in the order of the table in language.md §10.
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];

            /// The code as written in messages and docs (`E401`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => stringify!($variant),)*
                }
            }

            /// The severity this code always has.
            pub fn severity(self) -> Severity {
                match self {
                    $(Code::$variant => Severity::$severity,)*
                }
            }

            /// One line saying what the code is about.
            pub fn summary(self) -> &'static str {
                match self {
                    $(Code::$variant => $summary,)*
                }
            }
        }
    };
}

codes! {
    E001 = Error, "syntax error";
    E002 = Error, "the parser gave up on the rest of the file";
    E101 = Error, "unknown name";
    E102 = Error, "duplicate definition";
    E103 = Error, "wrong kind of name";
    E104 = Error, "import not found, or import cycle";
    E201 = Error, "map arity, or a dimension, below 1";
    E202 = Error, "initialiser does not fit the type or dimension";
    E203 = Error, "const initialiser is not a constant expression";
    W204 = Warning, "const without a value";
    E301 = Error, "argument count differs from the kernel's parameter count";
    E302 = Error, "direct dat not on the iteration set";
    E303 = Error, "map does not start at the iteration set";
    E304 = Error, "map does not end at the dat's set";
    E305 = Error, "map index outside the map's arity";
    E306 = Error, "element type differs from the kernel parameter's type";
    E307 = Error, "dimension differs from the kernel parameter's stated dimension";
    E308 = Error, "access mode not allowed for this kind of argument";
    E309 = Error, "reduction on a bool";
    E310 = Error, "a map applied to a global, const or len";
    E311 = Error, "invocation name not unique";
    E312 = Error, "invocation name that POETS loaders misread";
    E313 = Error, "INFO of a global that the par_loop does not reduce with MIN or MAX once";
    E401 = Error, "conflicting accesses to the same data in one par_loop";
    W402 = Warning, "the same argument given twice";
    E501 = Error, "READ parameter written in the kernel";
    E502 = Error, "INC parameter read or assigned";
    W503 = Warning, "WRITE parameter read before it is written, or not written";
    E504 = Error, "const parameter bound to a writing argument";
    H505 = Hint, "non-const parameter bound to a READ argument";
    H506 = Hint, "RW argument could be READ or WRITE";
    E507 = Error, "constant index outside the parameter's dimension or the array's length";
    E508 = Error, "kernel names something it may not use";
    E601 = Error, "par_loop, exit or fetch outside main, or main names a dat or map";
    E602 = Error, "assignment to a const";
    E603 = Error, "no main where one is needed, or more than one";
    W604 = Warning, "unused declaration";
    H605 = Hint, "par_loop whose results are never read";
    E606 = Error, "print format does not fit its arguments";
    E607 = Error, "exit status that is not an integer from 0 to 255";
    E608 = Error, "print in a kernel (retired, no longer reported)";
    E609 = Error, "fetch into a global whose type or length does not fit the dat";
    E701 = Error, "instance data: missing or malformed entry";
    E702 = Error, "instance data: map target outside the target set";
    E703 = Error, "instance data: wrong number of rows or components";
    E704 = Error, "instance data: two elements write the same target";
    W705 = Warning, "instance data names something the program does not declare";
    W801 = Warning, "generated message larger than the POETS payload";
    E802 = Error, "device type with more than 32 output pins";
}

impl Code {
    /// Parses `E401` (any case) into a code.
    pub fn parse(text: &str) -> Option<Code> {
        Code::ALL
            .iter()
            .copied()
            .find(|code| code.as_str().eq_ignore_ascii_case(text.trim()))
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an editor may do with code a diagnostic points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tag {
    /// Declared but never used: editors grey it out.
    Unnecessary,
}

/// Which file a location is in. The syntax layer only ever speaks of the file
/// it parsed ([`FileId::MAIN`] by convention); the analysis assigns ids to
/// imported files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FileId(pub u32);

impl FileId {
    /// The file being checked.
    pub const MAIN: FileId = FileId(0);
}

/// A range in a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Location {
    /// The file.
    pub file: FileId,
    /// Byte range in that file's text.
    pub range: TextRange,
}

/// A secondary location with its own label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Related {
    /// Where.
    pub location: Location,
    /// What it has to do with the diagnostic, lower case, no trailing period.
    pub message: String,
}

/// A replacement of one byte range by new text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextEdit {
    /// The file the edit applies to.
    pub file: FileId,
    /// Byte range replaced.
    pub range: TextRange,
    /// Replacement text.
    pub replacement: String,
}

/// A machine-applicable fix: a title and the edits that carry it out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fix {
    /// Imperative, lower case: "change the mode to `RW`".
    pub title: String,
    /// Edits, applied together.
    pub edits: Vec<TextEdit>,
}

/// One diagnostic: what is wrong, where, and what may fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The stable code.
    pub code: Code,
    /// Usually `code.severity()`.
    pub severity: Severity,
    /// Lower case, no trailing period, code in backticks.
    pub message: String,
    /// The primary location.
    pub location: Location,
    /// Short label for the primary range; empty when the message says it all.
    pub label: String,
    /// Secondary locations.
    pub related: Vec<Related>,
    /// Fixes that can be applied mechanically.
    pub fixes: Vec<Fix>,
    /// Hints for editors.
    pub tags: Vec<Tag>,
}

impl Diagnostic {
    /// A diagnostic with the code's own severity and nothing attached.
    pub fn new(code: Code, location: Location, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            severity: code.severity(),
            message: message.into(),
            location,
            label: String::new(),
            related: Vec::new(),
            fixes: Vec::new(),
            tags: Vec::new(),
        }
    }

    /// Sets the primary label.
    #[must_use]
    pub fn with_label(mut self, label: impl Into<String>) -> Diagnostic {
        self.label = label.into();
        self
    }

    /// Adds a related location.
    #[must_use]
    pub fn with_related(mut self, location: Location, message: impl Into<String>) -> Diagnostic {
        self.related.push(Related {
            location,
            message: message.into(),
        });
        self
    }

    /// Adds a fix.
    #[must_use]
    pub fn with_fix(mut self, fix: Fix) -> Diagnostic {
        self.fixes.push(fix);
        self
    }

    /// Adds a tag.
    #[must_use]
    pub fn with_tag(mut self, tag: Tag) -> Diagnostic {
        self.tags.push(tag);
        self
    }
}
