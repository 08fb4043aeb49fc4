//! Parsing instance JSON straight into typed, flattened vectors with serde
//! visitors: no `serde_json::Value` tree, so a mesh of millions of elements
//! costs little more than its numbers. Shape and type problems are recorded
//! with their JSON paths and parsing goes on, so that one run reports them
//! all; only a JSON syntax error stops it.

use std::fmt;

use op2_analysis::model::{Program, Symbol};
use op2_analysis::value::Value;
use op2_syntax::ast::ScalarType;
use op2_syntax::{Code, Location, Related};
use rustc_hash::FxHashMap;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{Column, InstanceError, MAX_RESERVE, MAX_SET_SIZE, Progress};

/// Problems shown per entry (`maps.pedge`) and code; the rest are counted
/// and summarised, so that a mesh numbered from 1 does not print a million
/// lines.
pub(super) const SHOWN_PER_ENTRY: u64 = 50;

/// Rows between progress reports.
const TICK: u64 = 1 << 16;

/// A section of the instance document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Section {
    /// `sets`
    Sets,
    /// `maps`
    Maps,
    /// `dats`
    Dats,
    /// `consts`
    Consts,
    /// `globals`
    Globals,
}

impl Section {
    /// The section's key in the document: `sets`, `maps`, ...
    pub fn key(self) -> &'static str {
        match self {
            Section::Sets => "sets",
            Section::Maps => "maps",
            Section::Dats => "dats",
            Section::Consts => "consts",
            Section::Globals => "globals",
        }
    }

    /// Where the section's problems are listed: in document order.
    fn rank(self) -> u8 {
        match self {
            Section::Sets => 1,
            Section::Maps => 2,
            Section::Dats => 3,
            Section::Consts => 4,
            Section::Globals => 5,
        }
    }

    /// The kind of declaration the section names.
    fn kind(self) -> &'static str {
        match self {
            Section::Sets => "set",
            Section::Maps => "map",
            Section::Dats => "dat",
            Section::Consts => "const",
            Section::Globals => "global",
        }
    }
}

/// The path of an entry or value in the document: `maps.pedge[5][1]`.
pub fn path(section: Section, name: &str, indices: &[u64]) -> String {
    let mut out = String::with_capacity(section.key().len() + name.len() + 12);
    out.push_str(section.key());
    if !name.is_empty() {
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(name);
    }
    for index in indices {
        out.push('[');
        out.push_str(&index.to_string());
        out.push(']');
    }
    out
}

/// The path of an entry or value in an HDF5 file: the dataset, then the
/// row and component (`/pedge[5][1]`).
pub(super) fn dataset_path(name: &str, indices: &[u64]) -> String {
    let mut out = format!("/{name}");
    for index in indices {
        out.push('[');
        out.push_str(&index.to_string());
        out.push(']');
    }
    out
}

/// How problems name their place: JSON paths or HDF5 datasets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Notation {
    /// `maps.pedge[5][1]`
    Json,
    /// `/pedge[5][1]`
    Hdf5,
}

/// Collects problems, at most [`SHOWN_PER_ENTRY`] per entry and code.
#[derive(Debug)]
pub(super) struct Problems<'p> {
    program: &'p Program,
    notation: Notation,
    list: Vec<InstanceError>,
    /// Per problem: the section's rank and the entry's id, to list them
    /// section by section and entry by entry.
    keys: Vec<(u8, u32)>,
    /// Per entry and code: problems seen, and the entry's path and location
    /// for the summary.
    seen: FxHashMap<(Section, u32, Code), (u64, String, Location)>,
    /// Keys in the order first seen.
    order: Vec<(Section, u32, Code)>,
}

impl<'p> Problems<'p> {
    pub(super) fn new(program: &'p Program, notation: Notation) -> Problems<'p> {
        Problems {
            program,
            notation,
            list: Vec::new(),
            keys: Vec::new(),
            seen: FxHashMap::default(),
            order: Vec::new(),
        }
    }

    /// The place of an entry, or of a value inside it, in the notation of
    /// the format read.
    pub(super) fn path(&self, section: Section, name: &str, indices: &[u64]) -> String {
        match self.notation {
            Notation::Json => path(section, name, indices),
            Notation::Hdf5 => dataset_path(name, indices),
        }
    }

    /// The declaration an entry names, or the start of the root file.
    pub(super) fn location(&self, section: Section, id: u32) -> Location {
        let program = self.program;
        let index = id as usize;
        let found = match section {
            Section::Sets => program.sets.get(index).map(|s| s.location),
            Section::Maps => program.maps.get(index).map(|m| m.location),
            Section::Dats => program.dats.get(index).map(|d| d.location),
            Section::Consts => program.consts.get(index).map(|c| c.location),
            Section::Globals => program.globals.get(index).map(|g| g.location),
        };
        found.unwrap_or_default()
    }

    fn name(&self, section: Section, id: u32) -> &'p str {
        let program = self.program;
        let index = id as usize;
        let found = match section {
            Section::Sets => program.sets.get(index).map(|s| s.name.as_str()),
            Section::Maps => program.maps.get(index).map(|m| m.name.as_str()),
            Section::Dats => program.dats.get(index).map(|d| d.name.as_str()),
            Section::Consts => program.consts.get(index).map(|c| c.name.as_str()),
            Section::Globals => program.globals.get(index).map(|g| g.name.as_str()),
        };
        found.unwrap_or("")
    }

    /// Records a problem with entry `id` of `section` (a program id; any
    /// number for the root), at `indices` inside it. The message is only
    /// built when the problem is shown.
    pub(super) fn report(
        &mut self,
        code: Code,
        section: Section,
        id: u32,
        indices: &[u64],
        message: impl FnOnce() -> String,
    ) {
        self.report_related(
            code,
            section,
            id,
            indices,
            Location::default(),
            Vec::new(),
            message,
        );
    }

    /// Like [`Problems::report`], with the location given (when not the
    /// default) and related places.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn report_related(
        &mut self,
        code: Code,
        section: Section,
        id: u32,
        indices: &[u64],
        location: Location,
        related: Vec<Related>,
        message: impl FnOnce() -> String,
    ) {
        let key = (section, id, code);
        let name = self.name(section, id);
        let location = if location == Location::default() {
            self.location(section, id)
        } else {
            location
        };
        if !self.seen.contains_key(&key) {
            let entry_path = self.path(section, name, &[]);
            self.order.push(key);
            self.seen.insert(key, (0, entry_path, location));
        }
        let entry = self.seen.get_mut(&key).expect("inserted above");
        entry.0 += 1;
        if entry.0 > SHOWN_PER_ENTRY {
            return;
        }
        self.keys.push((section.rank(), id));
        self.list.push(InstanceError {
            code,
            path: self.path(section, name, indices),
            message: message(),
            location,
            related,
        });
    }

    /// Counts `more` problems of entry `id` of `section` with `code` beyond
    /// those reported, never shown (a reader in another process kept only
    /// the shown ones, `h5::Recorded`): they count towards the summary.
    pub(super) fn count_hidden(&mut self, code: Code, section: Section, id: u32, more: u64) {
        if more == 0 {
            return;
        }
        if let Some(entry) = self.seen.get_mut(&(section, id, code)) {
            entry.0 += more;
        }
    }

    /// Records a problem with an entry the program does not know (W705, or
    /// an E701 about a malformed section), never summarised.
    pub(super) fn report_unknown(&mut self, code: Code, path: String, message: String) {
        let head = path.split(['.', '[']).next().unwrap_or("");
        let rank = [
            Section::Sets,
            Section::Maps,
            Section::Dats,
            Section::Consts,
            Section::Globals,
        ]
        .into_iter()
        .find(|s| s.key() == head)
        .map_or(if head.is_empty() { 0 } else { 6 }, Section::rank);
        let id = if path.contains('.') { u32::MAX } else { 0 };
        self.keys.push((rank, id));
        self.list.push(InstanceError {
            code,
            path,
            message,
            location: Location::default(),
            related: Vec::new(),
        });
    }

    /// True when an error has been recorded.
    pub(super) fn has_errors(&self) -> bool {
        self.list.iter().any(InstanceError::is_error)
    }

    /// Every problem, with a summary per entry and code whose problems were
    /// not all shown.
    pub(super) fn finish(mut self) -> Vec<InstanceError> {
        for key in &self.order {
            let (count, entry_path, location) = &self.seen[key];
            if *count > SHOWN_PER_ENTRY {
                let more = count - SHOWN_PER_ENTRY;
                self.keys.push((key.0.rank(), key.1));
                self.list.push(InstanceError {
                    code: key.2,
                    path: entry_path.clone(),
                    message: format!(
                        "{more} more problem{} like the {SHOWN_PER_ENTRY} above (`{}`) not shown",
                        if more == 1 { "" } else { "s" },
                        key.2
                    ),
                    location: *location,
                    related: Vec::new(),
                });
            }
        }
        let mut numbered: Vec<((u8, u32), InstanceError)> =
            self.keys.into_iter().zip(self.list).collect();
        numbered.sort_by_key(|(key, _)| *key);
        numbered.into_iter().map(|(_, error)| error).collect()
    }
}

/// The rows of a map as read: targets flattened, a row per element.
#[derive(Debug, Default)]
pub(super) struct RawMap {
    /// `rows × arity` targets; [`BAD_TARGET`] where the data held no usable
    /// target (already reported, or listed in `bad`).
    pub(super) targets: Vec<u32>,
    /// Rows read.
    pub(super) rows: u64,
    /// Targets that are integers but no element of any set (negative, or
    /// beyond `u32`): row, column and the text; E702 once sizes are known.
    pub(super) bad: Vec<(u64, u64, String)>,
    /// Not a list of rows (reported): nothing more to check.
    pub(super) malformed: bool,
}

/// Stands for a target that is not an element.
pub(super) const BAD_TARGET: u32 = u32::MAX;

/// The rows of a dat as read.
#[derive(Debug)]
pub(super) struct RawDat {
    /// `rows × dimension` values.
    pub(super) column: Column,
    /// Rows read.
    pub(super) rows: u64,
    /// Not a list of rows (reported): nothing more to check.
    pub(super) malformed: bool,
}

/// Everything read, indexed by program ids. An entry given in the data is
/// `Some` even when it was malformed (then it was reported, and only
/// serves to say it was given).
#[derive(Debug)]
pub(super) struct Raw {
    /// Set sizes: `Some(None)` when given but malformed.
    pub(super) sets: Vec<Option<Option<u32>>>,
    pub(super) maps: Vec<Option<RawMap>>,
    pub(super) dats: Vec<Option<RawDat>>,
    pub(super) consts: Vec<Option<Vec<Value>>>,
    pub(super) globals: Vec<Option<Vec<Value>>>,
    /// Sections that are not objects (reported): their entries are not
    /// missing, just unreadable.
    pub(super) malformed: Vec<Section>,
}

impl Raw {
    /// Nothing given yet.
    pub(super) fn empty(program: &Program) -> Raw {
        Raw::of_counts([
            program.sets.len(),
            program.maps.len(),
            program.dats.len(),
            program.consts.len(),
            program.globals.len(),
        ])
    }

    /// Nothing given yet for this many sets, maps, dats, consts and globals.
    pub(super) fn of_counts([sets, maps, dats, consts, globals]: [usize; 5]) -> Raw {
        Raw {
            sets: vec![None; sets],
            maps: (0..maps).map(|_| None).collect(),
            dats: (0..dats).map(|_| None).collect(),
            consts: vec![None; consts],
            globals: vec![None; globals],
            malformed: Vec::new(),
        }
    }
}

/// One JSON item, with compound items summarised.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Json {
    Uint(u64),
    Int(i64),
    Float(f64),
    Bool(bool),
    Str,
    Null,
    List,
    Object,
}

impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Json::Uint(v) => write!(f, "{v}"),
            Json::Int(v) => write!(f, "{v}"),
            Json::Float(v) => write!(f, "{v:?}"),
            Json::Bool(v) => write!(f, "`{v}`"),
            Json::Str => f.write_str("a string"),
            Json::Null => f.write_str("`null`"),
            Json::List => f.write_str("a list"),
            Json::Object => f.write_str("an object"),
        }
    }
}

/// A JSON value as a value of `ty`, or why it is not one.
pub(super) fn to_value(json: Json, ty: ScalarType) -> Result<Value, String> {
    let integer = |expected: &str| match json {
        Json::Uint(v) => Ok(i128::from(v)),
        Json::Int(v) => Ok(i128::from(v)),
        other => Err(format!("expected {expected} (`{ty}`), found {other}")),
    };
    let fits = |v: i128| format!("{v} does not fit `{ty}`");
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    match ty {
        ScalarType::Double => match json {
            Json::Uint(v) => Ok(Value::Double(v as f64)),
            Json::Int(v) => Ok(Value::Double(v as f64)),
            Json::Float(v) => Ok(Value::Double(v)),
            other => Err(format!("expected a number (`{ty}`), found {other}")),
        },
        // An integer is rounded to `float` once, as C's `strtof` rounds
        // its digits; a decimal was rounded to `double` already, which
        // gives the same `float` unless it landed exactly halfway between
        // two (`crate::float`).
        ScalarType::Float => {
            let single = match json {
                Json::Uint(v) => v as f32,
                Json::Int(v) => v as f32,
                Json::Float(v) if crate::float::is_float_midpoint(v) => {
                    return Err(format!(
                        "{v:?} is halfway between two `float` values when read as a `double`, so the digits that decide which one C's `strtof` gives are lost: write the value with more digits (or fewer) so that it is not"
                    ));
                }
                Json::Float(v) => v as f32,
                other => return Err(format!("expected a number (`{ty}`), found {other}")),
            };
            if single.is_finite() {
                Ok(Value::Float(single))
            } else {
                Err(format!("{} does not fit `{ty}`", json))
            }
        }
        ScalarType::Int => {
            let v = integer("an integer")?;
            i32::try_from(v).map(Value::Int).map_err(|_| fits(v))
        }
        ScalarType::Uint => {
            let v = integer("a non-negative integer")?;
            u32::try_from(v).map(Value::Uint).map_err(|_| fits(v))
        }
        ScalarType::Ll => {
            let v = integer("an integer")?;
            i64::try_from(v).map(Value::Ll).map_err(|_| fits(v))
        }
        ScalarType::Ull => {
            let v = integer("a non-negative integer")?;
            u64::try_from(v).map(Value::Ull).map_err(|_| fits(v))
        }
        ScalarType::Bool => match json {
            Json::Bool(v) => Ok(Value::Bool(v)),
            Json::Uint(0) => Ok(Value::Bool(false)),
            Json::Uint(1) => Ok(Value::Bool(true)),
            other => Err(format!(
                "expected `true`, `false`, 0 or 1 (`bool`), found {other}"
            )),
        },
    }
}

/// Defines the scalar `visit_*` methods of a visitor to pass a [`Json`] to
/// `self.other(…)`.
macro_rules! scalars_to_other {
    () => {
        fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Self::Value, E> {
            Ok(self.other(Json::Bool(v)))
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(self.other(if v >= 0 {
                Json::Uint(v.unsigned_abs())
            } else {
                Json::Int(v)
            }))
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(self.other(Json::Uint(v)))
        }
        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok(self.other(Json::Float(v)))
        }
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(self.other(Json::Str))
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(self.other(Json::Null))
        }
    };
}

/// Defines `visit_map` to skip the object and pass [`Json::Object`] on.
macro_rules! object_to_other {
    () => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(self.other(Json::Object))
        }
    };
}

/// Defines `visit_seq` to skip the list and pass [`Json::List`] on.
macro_rules! list_to_other {
    () => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(self.other(Json::List))
        }
    };
}

/// Any item, summarised as [`Json`].
struct AnyItem;

impl AnyItem {
    fn other(self, json: Json) -> Json {
        json
    }
}

impl<'de> DeserializeSeed<'de> for AnyItem {
    type Value = Json;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for AnyItem {
    type Value = Json;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    scalars_to_other!();
    object_to_other!();
    list_to_other!();
}

/// What the seeds share while parsing.
struct State<'p, 'g> {
    program: &'p Program,
    raw: Raw,
    problems: &'g mut Problems<'p>,
    progress: &'g mut dyn Progress,
    ticks: u64,
    /// The document is not an object (reported): nothing to validate.
    unreadable: bool,
}

impl State<'_, '_> {
    fn tick(&mut self) {
        self.ticks += 1;
        if self.ticks == TICK {
            self.progress.advance(TICK);
            self.ticks = 0;
        }
    }
}

/// Parses `json` for `program`; `None` after a JSON syntax error (reported).
pub(super) fn parse<'p>(
    json: &[u8],
    program: &'p Program,
    problems: &mut Problems<'p>,
    progress: &mut dyn Progress,
) -> Option<Raw> {
    let raw = Raw::empty(program);
    let mut state = State {
        program,
        raw,
        problems,
        progress,
        ticks: 0,
        unreadable: false,
    };
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    let result = Document(&mut state)
        .deserialize(&mut deserializer)
        .and_then(|()| deserializer.end());
    state.progress.advance(state.ticks);
    match result {
        Ok(()) if state.unreadable => None,
        Ok(()) => Some(state.raw),
        Err(error) => {
            state.problems.report_unknown(
                Code::E701,
                String::new(),
                format!(
                    "the instance data is not valid JSON: {}",
                    json_error(&error)
                ),
            );
            None
        }
    }
}

/// serde_json's message with its position counted from 1 as every other
/// position op2 gives: serde says column 0 for an error before the first
/// character of a line (`EOF while parsing a value at line 2 column 0`).
fn json_error(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let (line, column) = (error.line(), error.column());
    match text.strip_suffix(&format!(" at line {line} column {column}")) {
        Some(what) if line > 0 => format!("{what} at line {line} column {}", column.max(1)),
        _ => text,
    }
}

/// The whole document: an object of sections.
struct Document<'a, 'p, 'g>(&'a mut State<'p, 'g>);

impl<'de> DeserializeSeed<'de> for Document<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Document<'_, '_, '_> {
    fn other(self, found: Json) {
        self.0.unreadable = true;
        self.0.problems.report_unknown(
            Code::E701,
            String::new(),
            format!(
                "expected an object with `sets`, `maps`, `dats`, `consts` and `globals`, found {found}"
            ),
        );
    }
}

impl<'de> Visitor<'de> for Document<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of instance data")
    }
    scalars_to_other!();
    list_to_other!();

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen: Vec<Section> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let section = match key.as_str() {
                "sets" => Section::Sets,
                "maps" => Section::Maps,
                "dats" => Section::Dats,
                "consts" => Section::Consts,
                "globals" => Section::Globals,
                _ => {
                    self.0.problems.report_unknown(
                        Code::W705,
                        key.clone(),
                        format!(
                            "unknown section `{key}` is ignored (expected `sets`, `maps`, `dats`, `consts` or `globals`)"
                        ),
                    );
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if seen.contains(&section) {
                self.0.problems.report_unknown(
                    Code::E701,
                    key.clone(),
                    format!("section `{key}` is given more than once"),
                );
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            seen.push(section);
            map.next_value_seed(SectionSeed {
                state: &mut *self.0,
                section,
            })?;
        }
        Ok(())
    }
}

/// One section: an object from names to entries.
struct SectionSeed<'a, 'p, 'g> {
    state: &'a mut State<'p, 'g>,
    section: Section,
}

impl<'de> DeserializeSeed<'de> for SectionSeed<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl SectionSeed<'_, '_, '_> {
    fn other(self, found: Json) {
        self.state.raw.malformed.push(self.section);
        let key = self.section.key();
        self.state.problems.report_unknown(
            Code::E701,
            key.to_owned(),
            format!(
                "expected an object from {} names to their data, found {found}",
                self.section.kind()
            ),
        );
    }
}

impl<'de> Visitor<'de> for SectionSeed<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of named entries")
    }
    scalars_to_other!();
    list_to_other!();

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let section = self.section;
        let state = self.state;
        let program = state.program;
        while let Some(name) = map.next_key::<String>()? {
            let symbol = program.lookup(&name);
            let id = match (section, symbol) {
                (Section::Sets, Some(Symbol::Set(id))) => Some(id.0),
                (Section::Maps, Some(Symbol::Map(id))) => Some(id.0),
                (Section::Dats, Some(Symbol::Dat(id))) => Some(id.0),
                (Section::Consts, Some(Symbol::Const(id))) => Some(id.0),
                (Section::Globals, Some(Symbol::Global(id))) => Some(id.0),
                _ => None,
            };
            let Some(id) = id else {
                let also = match symbol {
                    Some(symbol) => format!(" (`{name}` is a {})", symbol.kind_name()),
                    None => String::new(),
                };
                state.problems.report_unknown(
                    Code::W705,
                    path(section, &name, &[]),
                    format!(
                        "the program declares no {} `{name}`{also}; the entry is ignored",
                        section.kind()
                    ),
                );
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            let index = id as usize;
            let given = match section {
                Section::Sets => state.raw.sets[index].is_some(),
                Section::Maps => state.raw.maps[index].is_some(),
                Section::Dats => state.raw.dats[index].is_some(),
                Section::Consts => state.raw.consts[index].is_some(),
                Section::Globals => state.raw.globals[index].is_some(),
            };
            if given {
                state.problems.report(Code::E701, section, id, &[], || {
                    format!("{} `{name}` is given more than once", section.kind())
                });
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            match section {
                Section::Sets => {
                    let json = map.next_value_seed(AnyItem)?;
                    let size = set_size(json);
                    if let Err(message) = &size {
                        state
                            .problems
                            .report(Code::E701, section, id, &[], || message.clone());
                    }
                    state.raw.sets[index] = Some(size.ok());
                }
                Section::Maps => {
                    let m = &program.maps[index];
                    let mut raw = RawMap::default();
                    if let Some(Some(n)) = m.from.and_then(|s| state.raw.sets[s.index()]) {
                        raw.targets
                            .reserve_exact((n as usize * m.arity.max(1) as usize).min(MAX_RESERVE));
                    }
                    map.next_value_seed(MapRows {
                        state: &mut *state,
                        id,
                        raw: &mut raw,
                    })?;
                    raw.targets.shrink_to_fit();
                    state.raw.maps[index] = Some(raw);
                }
                Section::Dats => {
                    let d = &program.dats[index];
                    let mut column = Column::new(d.ty.scalar);
                    if let Some(Some(n)) = d.set.and_then(|s| state.raw.sets[s.index()]) {
                        column.reserve(
                            (n as usize * d.ty.dimension.max(1) as usize).min(MAX_RESERVE),
                        );
                    }
                    let mut raw = RawDat {
                        column,
                        rows: 0,
                        malformed: false,
                    };
                    map.next_value_seed(DatRows {
                        state: &mut *state,
                        id,
                        raw: &mut raw,
                    })?;
                    raw.column.shrink_to_fit();
                    state.raw.dats[index] = Some(raw);
                }
                Section::Consts | Section::Globals => {
                    let ty = if section == Section::Consts {
                        program.consts[index].ty
                    } else {
                        program.globals[index].ty
                    };
                    let mut values = Vec::with_capacity(ty.dimension as usize);
                    map.next_value_seed(Components {
                        state: &mut *state,
                        section,
                        id,
                        ty: ty.scalar,
                        dimension: ty.dimension,
                        values: &mut values,
                    })?;
                    if section == Section::Consts {
                        state.raw.consts[index] = Some(values);
                    } else {
                        state.raw.globals[index] = Some(values);
                    }
                }
            }
        }
        Ok(())
    }
}

/// A set size: a non-negative integer of at most [`MAX_SET_SIZE`].
fn set_size(json: Json) -> Result<u32, String> {
    match json {
        Json::Uint(v) => checked_set_size(v),
        other => Err(format!(
            "expected a set size (a non-negative integer), found {other}"
        )),
    }
}

/// `size` if it is within [`MAX_SET_SIZE`], else why not.
pub(super) fn checked_set_size(size: u64) -> Result<u32, String> {
    match u32::try_from(size) {
        Ok(n) if n <= MAX_SET_SIZE => Ok(n),
        _ => Err(format!(
            "set size {size} is more than the {MAX_SET_SIZE} elements a set may have"
        )),
    }
}

/// A map's rows.
struct MapRows<'a, 'p, 'g> {
    state: &'a mut State<'p, 'g>,
    id: u32,
    raw: &'a mut RawMap,
}

impl<'de> DeserializeSeed<'de> for MapRows<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl MapRows<'_, '_, '_> {
    fn other(self, found: Json) {
        self.raw.malformed = true;
        let arity = self.state.program.maps[self.id as usize].arity;
        self.state
            .problems
            .report(Code::E701, Section::Maps, self.id, &[], || {
                format!(
                    "expected a list of rows of {arity} target{}, found {found}",
                    plural(arity.into())
                )
            });
    }
}

impl<'de> Visitor<'de> for MapRows<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of map rows")
    }
    scalars_to_other!();
    object_to_other!();

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let arity = u64::from(self.state.program.maps[self.id as usize].arity);
        let mut row = 0u64;
        while seq
            .next_element_seed(MapRow {
                state: &mut *self.state,
                id: self.id,
                raw: &mut *self.raw,
                row,
                arity,
            })?
            .is_some()
        {
            row += 1;
            self.state.tick();
        }
        self.raw.rows = row;
        Ok(())
    }
}

/// One row of a map: `arity` targets (a bare target for arity 1).
struct MapRow<'a, 'p, 'g> {
    state: &'a mut State<'p, 'g>,
    id: u32,
    raw: &'a mut RawMap,
    row: u64,
    arity: u64,
}

impl<'de> DeserializeSeed<'de> for MapRow<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl MapRow<'_, '_, '_> {
    /// Stores target `column` of the row.
    fn target(&mut self, column: u64, json: Json) {
        let stored = match json {
            Json::Uint(v) => match u32::try_from(v) {
                Ok(t) if t != BAD_TARGET => t,
                _ => {
                    self.raw.bad.push((self.row, column, v.to_string()));
                    BAD_TARGET
                }
            },
            Json::Int(v) => {
                self.raw.bad.push((self.row, column, v.to_string()));
                BAD_TARGET
            }
            other => {
                let (row, id) = (self.row, self.id);
                self.state
                    .problems
                    .report(Code::E701, Section::Maps, id, &[row, column], || {
                        format!("expected a target (an element number), found {other}")
                    });
                BAD_TARGET
            }
        };
        self.raw.targets.push(stored);
    }

    fn pad(&mut self, from: u64) {
        for _ in from..self.arity {
            self.raw.targets.push(BAD_TARGET);
        }
    }

    fn other(mut self, found: Json) {
        let arity = self.arity;
        if arity == 1 && matches!(found, Json::Uint(_) | Json::Int(_)) {
            // A map of arity 1 may be a flat list, as a dat of dimension 1.
            self.target(0, found);
            return;
        }
        let (row, id) = (self.row, self.id);
        self.state
            .problems
            .report(Code::E701, Section::Maps, id, &[row], || {
                format!(
                    "expected a row of {arity} target{}, found {found}",
                    plural(arity)
                )
            });
        self.pad(0);
    }
}

impl<'de> Visitor<'de> for MapRow<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map row")
    }
    scalars_to_other!();
    object_to_other!();

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        let mut column = 0u64;
        while let Some(json) = seq.next_element_seed(AnyItem)? {
            if column < self.arity {
                self.target(column, json);
            }
            column += 1;
        }
        if column != self.arity {
            let (row, id, arity) = (self.row, self.id, self.arity);
            let name = &self.state.program.maps[id as usize].name;
            self.state
                .problems
                .report(Code::E703, Section::Maps, id, &[row], || {
                    format!(
                        "{column} target{}, but map `{name}` has arity {arity}",
                        plural(column)
                    )
                });
            self.pad(column);
        }
        Ok(())
    }
}

/// A dat's rows.
struct DatRows<'a, 'p, 'g> {
    state: &'a mut State<'p, 'g>,
    id: u32,
    raw: &'a mut RawDat,
}

impl<'de> DeserializeSeed<'de> for DatRows<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl DatRows<'_, '_, '_> {
    fn other(self, found: Json) {
        self.raw.malformed = true;
        let ty = self.state.program.dats[self.id as usize].ty;
        self.state
            .problems
            .report(Code::E701, Section::Dats, self.id, &[], || {
                if ty.dimension == 1 {
                    format!("expected a list of values (`{ty}`), found {found}")
                } else {
                    format!(
                        "expected a list of rows of {} values (`{ty}`), found {found}",
                        ty.dimension
                    )
                }
            });
    }
}

impl<'de> Visitor<'de> for DatRows<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of dat rows")
    }
    scalars_to_other!();
    object_to_other!();

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut row = 0u64;
        while seq
            .next_element_seed(DatRow {
                state: &mut *self.state,
                id: self.id,
                column: &mut self.raw.column,
                row,
            })?
            .is_some()
        {
            row += 1;
            self.state.tick();
        }
        self.raw.rows = row;
        Ok(())
    }
}

/// One row of a dat: `dimension` values (a bare value for dimension 1).
struct DatRow<'a, 'p, 'g> {
    state: &'a mut State<'p, 'g>,
    id: u32,
    column: &'a mut Column,
    row: u64,
}

impl<'de> DeserializeSeed<'de> for DatRow<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl DatRow<'_, '_, '_> {
    fn value(&mut self, indices: &[u64], json: Json) {
        let ty = self.state.program.dats[self.id as usize].ty.scalar;
        match to_value(json, ty) {
            Ok(value) => self.column.push(value),
            Err(message) => {
                self.state
                    .problems
                    .report(Code::E701, Section::Dats, self.id, indices, || message);
                self.column.push(Value::zero(ty));
            }
        }
    }

    fn pad(&mut self, from: u64) {
        let ty = self.state.program.dats[self.id as usize].ty;
        for _ in from..u64::from(ty.dimension) {
            self.column.push(Value::zero(ty.scalar));
        }
    }

    fn other(mut self, found: Json) {
        let ty = self.state.program.dats[self.id as usize].ty;
        let row = self.row;
        if ty.dimension == 1 {
            self.value(&[row], found);
            return;
        }
        let name = &self.state.program.dats[self.id as usize].name;
        let code = if matches!(found, Json::Object | Json::Str | Json::Null | Json::Bool(_)) {
            Code::E701
        } else {
            Code::E703
        };
        self.state
            .problems
            .report(code, Section::Dats, self.id, &[row], || {
                if code == Code::E701 {
                    format!(
                        "expected a row of {} values (`{ty}`), found {found}",
                        ty.dimension
                    )
                } else {
                    format!(
                        "a single value, but dat `{name}` has dimension {}",
                        ty.dimension
                    )
                }
            });
        self.pad(0);
    }
}

impl<'de> Visitor<'de> for DatRow<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a dat row")
    }
    scalars_to_other!();
    object_to_other!();

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        let dimension = u64::from(self.state.program.dats[self.id as usize].ty.dimension);
        let row = self.row;
        let mut column = 0u64;
        while let Some(json) = seq.next_element_seed(AnyItem)? {
            if column < dimension {
                self.value(&[row, column], json);
            }
            column += 1;
        }
        if column != dimension {
            let id = self.id;
            let name = &self.state.program.dats[id as usize].name;
            self.state
                .problems
                .report(Code::E703, Section::Dats, id, &[row], || {
                    format!(
                        "{column} value{}, but dat `{name}` has dimension {dimension}",
                        plural(column)
                    )
                });
            self.pad(column);
        }
        Ok(())
    }
}

/// The value of a const or global: a list of `dimension` values, or a bare
/// value for dimension 1.
struct Components<'a, 'p, 'g> {
    state: &'a mut State<'p, 'g>,
    section: Section,
    id: u32,
    ty: ScalarType,
    dimension: u32,
    values: &'a mut Vec<Value>,
}

impl<'de> DeserializeSeed<'de> for Components<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Components<'_, '_, '_> {
    fn value(&mut self, indices: &[u64], json: Json) {
        match to_value(json, self.ty) {
            Ok(value) => self.values.push(value),
            Err(message) => {
                self.state
                    .problems
                    .report(Code::E701, self.section, self.id, indices, || message);
                self.values.push(Value::zero(self.ty));
            }
        }
    }

    fn name(&self) -> &str {
        let index = self.id as usize;
        if self.section == Section::Consts {
            &self.state.program.consts[index].name
        } else {
            &self.state.program.globals[index].name
        }
    }

    fn other(mut self, found: Json) {
        if self.dimension == 1
            || matches!(found, Json::Object | Json::Str | Json::Null | Json::Bool(_))
        {
            if self.dimension == 1 {
                self.value(&[], found);
            } else {
                let (ty, dimension) = (self.ty, self.dimension);
                self.state
                    .problems
                    .report(Code::E701, self.section, self.id, &[], || {
                        format!("expected a list of {dimension} values (`{ty}[{dimension}]`), found {found}")
                    });
            }
            return;
        }
        let message = format!(
            "a single value, but {} `{}` has dimension {}",
            self.section.kind(),
            self.name(),
            self.dimension
        );
        self.state
            .problems
            .report(Code::E703, self.section, self.id, &[], || message);
    }
}

impl<'de> Visitor<'de> for Components<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value or a list of values")
    }
    scalars_to_other!();
    object_to_other!();

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        let dimension = u64::from(self.dimension);
        let mut column = 0u64;
        while let Some(json) = seq.next_element_seed(AnyItem)? {
            if column < dimension {
                self.value(&[column], json);
            }
            column += 1;
        }
        if column != dimension {
            let message = format!(
                "{column} value{}, but {} `{}` has dimension {dimension}",
                plural(column),
                self.section.kind(),
                self.name()
            );
            self.state
                .problems
                .report(Code::E703, self.section, self.id, &[], || message);
        }
        Ok(())
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_entries_and_indices() {
        assert_eq!(path(Section::Maps, "pedge", &[5, 1]), "maps.pedge[5][1]");
        assert_eq!(path(Section::Sets, "cells", &[]), "sets.cells");
    }

    #[test]
    fn values_convert_only_when_they_fit() {
        assert_eq!(
            to_value(Json::Uint(u64::MAX), ScalarType::Ull),
            Ok(Value::Ull(u64::MAX))
        );
        assert_eq!(to_value(Json::Int(-5), ScalarType::Ll), Ok(Value::Ll(-5)));
        assert_eq!(
            to_value(Json::Uint(3), ScalarType::Double),
            Ok(Value::Double(3.0))
        );
        assert_eq!(
            to_value(Json::Uint(1), ScalarType::Bool),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            to_value(Json::Float(0.1), ScalarType::Float),
            Ok(Value::Float(0.1))
        );
        // An integer is rounded to `float` once, as `strtof` rounds it
        // (through `double` it was 1.1529215e18).
        assert_eq!(
            to_value(Json::Uint(1_152_921_573_326_323_713), ScalarType::Float),
            Ok(Value::Float(f32::from_bits(0x5d80_0001)))
        );
        // A decimal that reads as a `double` exactly halfway between two
        // floats is refused: its rounding to `float` is not known.
        let halfway = 1.0 + f64::powi(2.0, -24);
        assert!(
            to_value(Json::Float(halfway), ScalarType::Float)
                .is_err_and(|e| e.contains("is halfway between two `float` values"))
        );
        assert_eq!(
            to_value(Json::Float(halfway), ScalarType::Double),
            Ok(Value::Double(halfway))
        );
        assert_eq!(
            to_value(Json::Uint(u64::MAX), ScalarType::Ll),
            Err("18446744073709551615 does not fit `ll`".into())
        );
        assert_eq!(
            to_value(Json::Float(1.0), ScalarType::Uint),
            Err("expected a non-negative integer (`uint`), found 1.0".into())
        );
        assert_eq!(
            to_value(Json::List, ScalarType::Int),
            Err("expected an integer (`int`), found a list".into())
        );
    }

    #[test]
    fn set_sizes_are_within_the_limit() {
        assert_eq!(set_size(Json::Uint(0)), Ok(0));
        assert_eq!(
            set_size(Json::Uint(u64::from(MAX_SET_SIZE))),
            Ok(MAX_SET_SIZE)
        );
        assert_eq!(
            set_size(Json::Uint(2_000_000_000)),
            Err("set size 2000000000 is more than the 16777216 elements a set may have".into())
        );
        assert!(set_size(Json::Uint(u64::MAX)).is_err());
    }
}
