//! Rendering diagnostics: rustc-style text (codespan-reporting) and one JSON
//! object per line.
//!
//! The JSON shape is a stable interface for scripts and CI:
//! `{"code","severity","message","file","line","column","end_line","end_column",
//! "related":[{"message","file","line","column"}]}`, lines and columns from 1,
//! columns counted in Unicode scalar values.

use std::borrow::Cow;
use std::io::{self, Write};

use codespan_reporting::diagnostic::{Diagnostic as Report, Label, Severity as ReportSeverity};
use codespan_reporting::term::{self, Config, termcolor};
use op2_syntax::{Diagnostic, Encoding, FileId, Location, Severity};
use serde::Serialize;

use crate::excerpt::Excerpts;
use crate::source::{FileError, SourceFile};
use op2_codegen::files::ReadError;

/// The files diagnostics may point into, indexed by [`FileId`].
#[derive(Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    /// Adds a file and returns its id.
    pub fn add(&mut self, file: SourceFile) -> FileId {
        let id = FileId(u32::try_from(self.files.len()).unwrap_or(u32::MAX));
        self.files.push(file);
        id
    }

    /// The file with `id`.
    pub fn get(&self, id: FileId) -> Option<&SourceFile> {
        self.files.get(id.0 as usize)
    }

    /// The name of the file with `id`, as the user gave it.
    pub fn name(&self, id: FileId) -> Option<String> {
        self.get(id).map(|file| visible_path(&file.path))
    }

    fn position(&self, location: Location, at_end: bool) -> (String, u32, u32) {
        match self.get(location.file) {
            Some(file) => {
                let offset = if at_end {
                    location.range.end
                } else {
                    location.range.start
                };
                let position = file.index.line_col(offset, Encoding::Utf32);
                (
                    file.path.display().to_string(),
                    position.line + 1,
                    position.col + 1,
                )
            }
            None => (String::from("<unknown>"), 1, 1),
        }
    }
}

/// Writes diagnostics the way rustc does, with source snippets: of a long
/// line only a window around each label (see [`Excerpts`]), so each
/// diagnostic costs the same whatever the length of its lines.
pub fn write_human(
    out: &mut dyn termcolor::WriteColor,
    sources: &SourceMap,
    diagnostics: &[Diagnostic],
) -> io::Result<()> {
    let config = Config::default();
    for diagnostic in diagnostics {
        let excerpts = Excerpts::new(sources, diagnostic);
        let report = to_report(diagnostic, |location| excerpts.range(location));
        term::emit_to_write_style(out, &config, &excerpts, &report)
            .map_err(|error| io::Error::other(error.to_string()))?;
    }
    Ok(())
}

/// Whether `c` would act on a terminal rather than show: the C0 controls
/// but tab and line feed, DEL, the C1 controls, and the bidirectional
/// overrides and isolates (which reorder what follows them on screen).
fn acts(c: char) -> bool {
    (c.is_control() && c != '\t' && c != '\n')
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every character that would act on a terminal ([`acts`])
/// shown instead: a C0 control or DEL as its Unicode control picture
/// (`␛` for ESC), the others as U+FFFD. Messages quote instance keys,
/// HDF5 names and other text from files, which may hold an escape sequence
/// that would recolour, move or clear the user's terminal.
pub(crate) fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| match c {
                c if !acts(c) => c,
                '\u{0}'..='\u{1f}' => char::from_u32(0x2400 + c as u32).unwrap_or('\u{FFFD}'),
                '\u{7f}' => '\u{2421}',
                _ => '\u{FFFD}',
            })
            .collect(),
    )
}

/// `path` as the user gave it, shown with [`visible`]: a file name may hold
/// an escape sequence too (`e\x1b]0;T\x07.op2` is a valid name).
pub(crate) fn visible_path(path: &std::path::Path) -> String {
    visible(&path.to_string_lossy()).into_owned()
}

/// Appends `text` to `out` with every character that would act on a
/// terminal replaced by one of the same length in UTF-8 (`?` for a C0
/// control or DEL, `¿` for a C1 control, U+FFFD for a bidirectional
/// control), so that offsets into the text stay right. A carriage return
/// before a line feed is kept.
pub(crate) fn push_visible(out: &mut String, text: &str) {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let shown = match c {
            '\r' if chars.peek() == Some(&'\n') => c,
            c if !acts(c) => c,
            '\u{0}'..='\u{1f}' | '\u{7f}' => '?',
            '\u{80}'..='\u{9f}' => '\u{BF}',
            _ => '\u{FFFD}',
        };
        debug_assert_eq!(shown.len_utf8(), c.len_utf8());
        out.push(shown);
    }
}

/// The codespan report of `diagnostic`, its labels placed by `range`.
pub(crate) fn to_report(
    diagnostic: &Diagnostic,
    range: impl Fn(Location) -> std::ops::Range<usize>,
) -> Report<FileId> {
    let severity = match diagnostic.severity {
        Severity::Error => ReportSeverity::Error,
        Severity::Warning => ReportSeverity::Warning,
        Severity::Hint => ReportSeverity::Help,
    };
    let location = diagnostic.location;
    let mut labels = vec![
        Label::primary(location.file, range(location)).with_message(visible(&diagnostic.label)),
    ];
    for related in &diagnostic.related {
        labels.push(
            Label::secondary(related.location.file, range(related.location))
                .with_message(visible(&related.message)),
        );
    }
    let notes = diagnostic
        .fixes
        .iter()
        .map(|fix| format!("help: {}", visible(&fix.title)))
        .collect();
    Report::new(severity)
        .with_code(diagnostic.code.as_str())
        .with_message(visible(&diagnostic.message))
        .with_labels(labels)
        .with_notes(notes)
}

#[derive(Serialize)]
struct JsonRelated {
    message: String,
    file: String,
    line: u32,
    column: u32,
}

/// One replacement of a fix: the range it replaces (1-based lines and
/// columns in characters, and UTF-8 byte offsets) and the new text.
#[derive(Serialize)]
struct JsonEdit {
    file: String,
    line: u32,
    column: u32,
    end_line: u32,
    end_column: u32,
    byte_start: u32,
    byte_end: u32,
    replacement: String,
}

/// A machine-applicable fix: its title (the `help:` line) and its edits.
#[derive(Serialize)]
struct JsonFix {
    title: String,
    edits: Vec<JsonEdit>,
}

#[derive(Serialize)]
struct JsonDiagnostic<'a> {
    code: &'static str,
    severity: &'static str,
    message: &'a str,
    file: String,
    line: u32,
    column: u32,
    end_line: u32,
    end_column: u32,
    /// The short label under the primary range (empty when the message
    /// says it all).
    label: &'a str,
    related: Vec<JsonRelated>,
    fixes: Vec<JsonFix>,
}

/// Writes one JSON object per diagnostic, one per line.
pub fn write_json(
    out: &mut dyn Write,
    sources: &SourceMap,
    diagnostics: &[Diagnostic],
) -> io::Result<()> {
    for diagnostic in diagnostics {
        let (file, line, column) = sources.position(diagnostic.location, false);
        let (_, end_line, end_column) = sources.position(diagnostic.location, true);
        let related = diagnostic
            .related
            .iter()
            .map(|related| {
                let (file, line, column) = sources.position(related.location, false);
                JsonRelated {
                    message: related.message.clone(),
                    file,
                    line,
                    column,
                }
            })
            .collect();
        let fixes = diagnostic
            .fixes
            .iter()
            .map(|fix| JsonFix {
                title: fix.title.clone(),
                edits: fix
                    .edits
                    .iter()
                    .map(|edit| {
                        let location = Location {
                            file: edit.file,
                            range: edit.range,
                        };
                        let (file, line, column) = sources.position(location, false);
                        let (_, end_line, end_column) = sources.position(location, true);
                        JsonEdit {
                            file,
                            line,
                            column,
                            end_line,
                            end_column,
                            byte_start: edit.range.start,
                            byte_end: edit.range.end,
                            replacement: edit.replacement.clone(),
                        }
                    })
                    .collect(),
            })
            .collect();
        let record = JsonDiagnostic {
            code: diagnostic.code.as_str(),
            severity: diagnostic.severity.as_str(),
            message: &diagnostic.message,
            file,
            line,
            column,
            end_line,
            end_column,
            label: &diagnostic.label,
            related,
            fixes,
        };
        serde_json::to_writer(&mut *out, &record)?;
        writeln!(out)?;
    }
    Ok(())
}

#[derive(Serialize)]
struct JsonFileError {
    code: Option<&'static str>,
    severity: &'static str,
    message: String,
    file: String,
    line: Option<u32>,
    column: Option<u32>,
    end_line: Option<u32>,
    end_column: Option<u32>,
    /// Empty, as a diagnostic's label when the message says it all.
    label: &'static str,
    related: [JsonRelated; 0],
    fixes: [JsonFix; 0],
}

/// Writes a file that could not be read as one JSON object with the fields
/// of a diagnostic: no code, and a position only for text that is not
/// UTF-8 (where the first bad byte is).
pub fn write_json_file_error(out: &mut dyn Write, error: &FileError) -> io::Result<()> {
    let (line, column) = match error.error {
        ReadError::NotUtf8 { line, column, .. } => (Some(line), Some(column)),
        _ => (None, None),
    };
    let record = JsonFileError {
        code: None,
        severity: Severity::Error.as_str(),
        message: error.to_string(),
        file: error.path.display().to_string(),
        line,
        column,
        end_line: line,
        end_column: column,
        label: "",
        related: [],
        fixes: [],
    };
    serde_json::to_writer(&mut *out, &record)?;
    writeln!(out)
}
