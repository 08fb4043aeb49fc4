//! The data of a running program: set sizes, maps, every dat's values, the
//! globals and the consts, flattened for fast access; built from validated
//! instance data, written out as the final-state JSON.

use std::fmt::Write;

use op2_analysis::model::{ArgKind, InvocationId, Program};
use op2_analysis::value::Value;
use op2_instance::InstanceData;

/// Everything a run reads and writes.
#[derive(Clone, Debug, PartialEq)]
pub struct State {
    /// Elements per set.
    pub set_sizes: Vec<usize>,
    /// Targets per map, element-major (`element × arity + index`).
    pub maps: Vec<Vec<u32>>,
    /// Arity per map.
    pub arities: Vec<usize>,
    /// Values per dat, element-major (`element × dimension + component`).
    pub dats: Vec<Vec<Value>>,
    /// Values per global.
    pub globals: Vec<Vec<Value>>,
    /// Values per const.
    pub consts: Vec<Vec<Value>>,
    /// The status of the `exit` that ended `main`; `None` when `main` ran
    /// to its end or returned.
    pub exit_status: Option<u8>,
    /// The par_loops `main` ran, in order (a `fetch` is not one).
    pub path: Path,
}

/// The par_loops a run of `main` started, in order, kept as their number
/// and a hash of the sequence: two runs that took the same path through
/// `main` have equal paths (and two that did not, almost surely not).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Path {
    /// How many par_loops started.
    pub loops: u64,
    /// FNV-1a over the invocations' ids, in order.
    pub hash: u64,
}

impl Path {
    /// Records that the par_loop `invocation` started.
    pub fn record(&mut self, invocation: InvocationId) {
        if self.loops == 0 {
            self.hash = 0xcbf2_9ce4_8422_2325;
        }
        self.loops += 1;
        for byte in invocation.0.to_le_bytes() {
            self.hash = (self.hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

impl State {
    /// The initial state of `program` on `data`.
    pub fn new(program: &Program, data: &InstanceData) -> State {
        let set_sizes: Vec<usize> = data.set_sizes.iter().map(|&n| n as usize).collect();
        let dats = program
            .dats
            .iter()
            .enumerate()
            .map(|(index, dat)| {
                let id = op2_analysis::model::DatId(u32::try_from(index).unwrap_or(u32::MAX));
                let elements = dat.set.map_or(0, |s| set_sizes[s.index()]);
                let dimension = dat.ty.dimension;
                let mut values = Vec::with_capacity(elements * dimension as usize);
                for element in 0..elements {
                    for component in 0..dimension {
                        let element = u32::try_from(element).unwrap_or(u32::MAX);
                        values.push(
                            data.dat_value(id, dimension, element, component)
                                .convert(dat.ty.scalar),
                        );
                    }
                }
                values
            })
            .collect();
        State {
            set_sizes,
            maps: data
                .maps
                .iter()
                .map(|m| m.clone().unwrap_or_default())
                .collect(),
            arities: program.maps.iter().map(|m| m.arity as usize).collect(),
            dats,
            globals: data.globals.clone(),
            consts: data.consts.clone(),
            exit_status: None,
            path: Path::default(),
        }
    }

    /// Set sizes as C `int`s, for `len(S)`.
    #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
    pub fn lengths(&self) -> Vec<i32> {
        self.set_sizes.iter().map(|&n| n as i32).collect()
    }

    /// The element of the argument's dat that iteration element `element`
    /// reaches.
    pub fn row_of(&self, _program: &Program, kind: ArgKind, element: usize) -> usize {
        match kind {
            ArgKind::IndirectDat { map, index, .. } | ArgKind::Index(Some((map, index))) => {
                self.maps[map.index()][element * self.arities[map.index()] + index as usize]
                    as usize
            }
            _ => element,
        }
    }

    /// The final-state JSON: `{"dats": {NAME: rows}, "globals": {NAME:
    /// value or list}}`, rows as flat values for dimension 1. Numbers read
    /// back exactly; NaN and infinities, which JSON lacks, are written as
    /// the strings "nan", "inf" and "-inf".
    pub fn final_state_json(&self, program: &Program) -> String {
        let mut out = String::from("{\n  \"dats\": {");
        for (index, dat) in program.dats.iter().enumerate() {
            let _ = write!(
                out,
                "{}\n    {}: [",
                if index == 0 { "" } else { "," },
                json_string(&dat.name)
            );
            let dimension = dat.ty.dimension as usize;
            for (row, chunk) in self.dats[index].chunks(dimension.max(1)).enumerate() {
                if row > 0 {
                    out.push_str(", ");
                }
                if dimension == 1 {
                    out.push_str(&json_number(chunk[0]));
                } else {
                    let items: Vec<String> = chunk.iter().map(|v| json_number(*v)).collect();
                    let _ = write!(out, "[{}]", items.join(", "));
                }
            }
            out.push(']');
        }
        out.push_str("\n  },\n  \"globals\": {");
        for (index, global) in program.globals.iter().enumerate() {
            let values = &self.globals[index];
            let value = if values.len() == 1 {
                json_number(values[0])
            } else {
                format!(
                    "[{}]",
                    values
                        .iter()
                        .map(|v| json_number(*v))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            let _ = write!(
                out,
                "{}\n    {}: {value}",
                if index == 0 { "" } else { "," },
                json_string(&global.name)
            );
        }
        out.push_str("\n  }\n}\n");
        out
    }
}

fn json_string(text: &str) -> String {
    // Names are identifiers: no escaping needed beyond the quotes.
    format!("\"{text}\"")
}

/// A value as JSON: integers exactly, floats with the fewest digits that
/// read back to the same value.
pub fn json_number(value: Value) -> String {
    let float = |v: f64| {
        if v.is_nan() {
            "\"nan\"".to_owned()
        } else if v.is_infinite() {
            if v > 0.0 {
                "\"inf\"".to_owned()
            } else {
                "\"-inf\"".to_owned()
            }
        } else {
            let text = format!("{v:?}");
            text
        }
    };
    match value {
        Value::Double(v) => float(v),
        // A float printed through f64 would show its binary expansion:
        // print its own shortest form.
        // (Or, for the one `float` whose shortest text reads back through a
        // `double` as another, its widened `double`'s: `op2_instance::float`.)
        Value::Float(v) if v.is_finite() => op2_instance::float::float_text(v, format!("{v:?}")),
        Value::Float(v) => float(f64::from(v)),
        Value::Int(v) => v.to_string(),
        Value::Uint(v) => v.to_string(),
        Value::Ll(v) => v.to_string(),
        Value::Ull(v) => v.to_string(),
        Value::Bool(v) => v.to_string(),
    }
}
