//! Instance data for an analysed program: small sets, maps with targets in
//! range, dats, consts and globals of the right shape, and sometimes the
//! hostile versions (huge or negative sizes, targets out of range, wrong
//! shapes, a value of the wrong type).

use op2_analysis::model::Program;
use op2_syntax::ast::ScalarType;
use serde_json::{Map, Value, json};

use crate::rng::Rng;

/// More values than this in one instance and the dats are left out (their
/// initialisers apply), so that a big dimension does not make a big file.
const MAX_VALUES: u64 = 20_000;

/// Instance JSON for `program`.
pub fn generate(program: &Program, rng: &mut Rng) -> Vec<u8> {
    let hostile = rng.one_in(25) && !crate::tame();
    // One instance in twenty has sets of several blocks of `op2 run
    // --threads` (256 elements each), so that loops run in coloured
    // blocks on the pool, not only as one block on one thread.
    let blocks = rng.one_in(20);
    let mut sets = Map::new();
    let mut sizes = Vec::new();
    for set in &program.sets {
        let size: u64 = if hostile && rng.one_in(3) {
            *rng.pick(&[2_000_000_000, 4_294_967_295, 1 << 40, 100_000_000])
        } else if rng.one_in(10) {
            0
        } else if blocks && rng.one_in(2) {
            rng.range(257, 1500) as u64
        } else {
            rng.range(1, 8) as u64
        };
        sizes.push(size);
        let value = if hostile && rng.one_in(4) {
            (*rng.pick(&[json!(-1), json!(1.5), json!("3"), json!(null), json!(1e300)])).clone()
        } else {
            json!(size)
        };
        sets.insert(set.name.clone(), value);
    }
    let small = |size: u64| size <= 64;
    let mut maps = Map::new();
    for map in &program.maps {
        let (Some(from), Some(to)) = (map.from, map.to) else {
            continue;
        };
        let (rows, targets) = (sizes[from.index()], sizes[to.index()]);
        if !small(rows) || map.arity > 16 {
            continue;
        }
        let mut table = Vec::new();
        for _ in 0..rows {
            let row: Vec<Value> = (0..map.arity)
                .map(|_| {
                    if rng.one_in(200) {
                        (*rng.pick(&[json!(-1), json!(targets), json!(1u64 << 33), json!(0.5)]))
                            .clone()
                    } else {
                        json!(rng.below(targets.max(1) as usize))
                    }
                })
                .collect();
            table.push(Value::Array(row));
        }
        if rng.one_in(100) {
            table.pop();
        }
        maps.insert(map.name.clone(), Value::Array(table));
    }
    let mut dats = Map::new();
    for dat in &program.dats {
        let Some(set) = dat.set else { continue };
        let rows = sizes[set.index()];
        let dim = u64::from(dat.ty.dimension);
        if !small(rows) || rows * dim > MAX_VALUES || rng.chance(40) {
            continue;
        }
        let column: Vec<Value> = (0..rows)
            .map(|_| {
                if dim == 1 && rng.chance(80) {
                    value(dat.ty.scalar, rng)
                } else {
                    Value::Array((0..dim).map(|_| value(dat.ty.scalar, rng)).collect())
                }
            })
            .collect();
        dats.insert(dat.name.clone(), Value::Array(column));
    }
    let mut consts = Map::new();
    for c in &program.consts {
        if c.value.is_some() && rng.chance(70) {
            continue;
        }
        let dim = u64::from(c.ty.dimension);
        if dim > 64 {
            continue;
        }
        let entry = if dim == 1 {
            value(c.ty.scalar, rng)
        } else {
            Value::Array((0..dim).map(|_| value(c.ty.scalar, rng)).collect())
        };
        consts.insert(c.name.clone(), entry);
    }
    let mut globals = Map::new();
    for g in &program.globals {
        let dim = u64::from(g.ty.dimension);
        if dim > 64 || rng.chance(70) {
            continue;
        }
        let entry = if dim == 1 {
            value(g.ty.scalar, rng)
        } else {
            Value::Array((0..dim).map(|_| value(g.ty.scalar, rng)).collect())
        };
        globals.insert(g.name.clone(), entry);
    }
    let mut document = Map::new();
    document.insert("sets".into(), Value::Object(sets));
    for (name, section) in [
        ("maps", maps),
        ("dats", dats),
        ("consts", consts),
        ("globals", globals),
    ] {
        if !section.is_empty() || rng.one_in(4) {
            document.insert(name.into(), Value::Object(section));
        }
    }
    if rng.one_in(50) {
        document.insert("unknown".into(), json!({"x": [1, 2, 3]}));
    }
    serde_json::to_vec(&Value::Object(document)).unwrap_or_default()
}

fn value(scalar: ScalarType, rng: &mut Rng) -> Value {
    if rng.one_in(500) {
        return (*rng.pick(&[json!(null), json!("1"), json!(1e300), json!(-1), json!([1])]))
            .clone();
    }
    match scalar {
        ScalarType::Double | ScalarType::Float => {
            json!((rng.below(2000) as f64 - 1000.0) / 64.0)
        }
        ScalarType::Int | ScalarType::Ll => json!(rng.below(200) as i64 - 100),
        ScalarType::Uint | ScalarType::Ull => json!(rng.below(200)),
        ScalarType::Bool => json!(rng.chance(50)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// One instance in twenty or so has a set of more than one block of
    /// `op2 run --threads` (256 elements), so that the campaign's `run
    /// threads` stage runs loops in coloured blocks.
    #[test]
    fn some_instances_have_sets_of_several_blocks() {
        let analysis = op2_analysis::analyse_text(
            Path::new("p.op2"),
            "set a;\nset b;\nmap m: a -> b[2];\ndat x: double on a;\nmain { }\n",
            &op2_analysis::Options::default(),
        );
        let mut several = 0;
        for seed in 0..400 {
            let json = generate(&analysis.program, &mut Rng::new(seed));
            let value: Value = serde_json::from_slice(&json).expect("JSON");
            if value["sets"]
                .as_object()
                .expect("sets")
                .values()
                .any(|size| size.as_u64().is_some_and(|n| (257..=1500).contains(&n)))
            {
                several += 1;
            }
        }
        assert!((5..=40).contains(&several), "{several} of 400");
    }
}
