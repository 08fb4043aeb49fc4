//! For benchmarks and tests: generated meshes of any size in the shape of
//! the bundled examples' data, the airfoil example they are for, and the
//! peak memory of the process.

use std::fmt::Write as _;
use std::path::Path;

use op2_analysis::{Analysis, Options, analyse_text};

/// `docs/examples/airfoil.op2` of this repository, analysed (it has no
/// errors; a test says so).
pub fn airfoil_example() -> Analysis {
    let path = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/examples/airfoil.op2"
    ));
    let text = std::fs::read_to_string(path).unwrap_or_default();
    analyse_text(path, &text, &Options { require_main: true })
}

/// Peak resident memory of this process so far (`VmHWM` of
/// `/proc/self/status`), as it says it (`123456 kB`), or `unknown`.
pub fn peak_memory() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l["VmHWM:".len()..].trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// An airfoil-like instance for `docs/examples/airfoil.op2`, as JSON: a
/// structured `side × side` quad mesh (`side²` cells, `(side + 1)²` nodes)
/// with interior edges, boundary edges on all four sides (wall below, far
/// field elsewhere), node coordinates at full precision and the free stream.
/// One string, so that a benchmark's peak memory is mostly what it measures.
pub fn airfoil_like(side: usize) -> String {
    let (ni, nj) = (side, side);
    let node = |i: usize, j: usize| j * (ni + 1) + i;
    let cell = |i: usize, j: usize| j * ni + i;
    let nodes = (ni + 1) * (nj + 1);
    let cells = ni * nj;
    let edges = (ni - 1) * nj + ni * (nj - 1);
    let bedges = 2 * (ni + nj);
    let mut out = String::with_capacity(cells * 140);
    let _ = write!(
        out,
        "{{\"sets\":{{\"nodes\":{nodes},\"edges\":{edges},\"bedges\":{bedges},\"cells\":{cells}}},\"maps\":{{"
    );
    // Interior edges: the side shared with the cell to the right, and with
    // the cell above; first their nodes, then their cells.
    for (key, of_cells) in [("pedge", false), ("pecell", true)] {
        let _ = write!(out, "\"{key}\":[");
        let mut sep = "";
        for j in 0..nj {
            for i in 0..ni {
                if i + 1 < ni {
                    let (a, b) = if of_cells {
                        (cell(i, j), cell(i + 1, j))
                    } else {
                        (node(i + 1, j), node(i + 1, j + 1))
                    };
                    let _ = write!(out, "{sep}[{a},{b}]");
                    sep = ",";
                }
                if j + 1 < nj {
                    let (a, b) = if of_cells {
                        (cell(i, j), cell(i, j + 1))
                    } else {
                        (node(i + 1, j + 1), node(i, j + 1))
                    };
                    let _ = write!(out, "{sep}[{a},{b}]");
                    sep = ",";
                }
            }
        }
        out.push_str("],");
    }
    // Boundary edges: nodes, cell inside, kind (1 wall, 2 far field).
    let mut boundary = Vec::with_capacity(bedges);
    for i in 0..ni {
        boundary.push((node(i, 0), node(i + 1, 0), cell(i, 0), 1));
        boundary.push((node(i + 1, nj), node(i, nj), cell(i, nj - 1), 2));
    }
    for j in 0..nj {
        boundary.push((node(0, j + 1), node(0, j), cell(0, j), 2));
        boundary.push((node(ni, j), node(ni, j + 1), cell(ni - 1, j), 2));
    }
    type Render<'a> = &'a dyn Fn(&(usize, usize, usize, u8)) -> String;
    let list = |out: &mut String, key: &str, item: Render<'_>| {
        let items: Vec<String> = boundary.iter().map(item).collect();
        let _ = write!(out, "\"{key}\":[{}]", items.join(","));
    };
    list(&mut out, "pbedge", &|(a, b, _, _)| format!("[{a},{b}]"));
    out.push(',');
    list(&mut out, "pbecell", &|(_, _, c, _)| format!("[{c}]"));
    out.push_str(",\"pcell\":[");
    for j in 0..nj {
        for i in 0..ni {
            let sep = if i == 0 && j == 0 { "" } else { "," };
            let _ = write!(
                out,
                "{sep}[{},{},{},{}]",
                node(i, j),
                node(i + 1, j),
                node(i + 1, j + 1),
                node(i, j + 1)
            );
        }
    }
    out.push_str("]},\"dats\":{\"p_x\":[");
    for j in 0..=nj {
        for i in 0..=ni {
            let sep = if i == 0 && j == 0 { "" } else { "," };
            // Full-precision coordinates, as a real mesh has.
            let (px, py) = (
                -2.0 + 4.0 * i as f64 / ni as f64 + 1e-3 * (j as f64).sin(),
                2.0 * j as f64 / nj as f64 + 1e-3 * (i as f64).cos(),
            );
            let _ = write!(out, "{sep}[{px:?},{py:?}]");
        }
    }
    out.push_str("],");
    list(&mut out, "p_bound", &|(_, _, _, kind)| kind.to_string());
    out.push_str("},\"consts\":{\"qinf\":[1.0,0.4732863856704763,0.0,2.612000150442132]}}");
    out
}
