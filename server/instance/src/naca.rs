//! The airfoil meshes OP2's applications run on, generated: a structured
//! C-grid around a NACA0012 aerofoil, as OP2-Common's mesh generator
//! (`apps/mesh_generators/naca0012.m`) builds it and its `new_grid.dat`
//! writes it. `I` sets the resolution along the aerofoil (the grid has
//! `3I × J` cells), `J` across; OP2's standard mesh is `I = 400`, `J = 600`
//! (720,000 cells), and the meshes in `shared/data` are `I × J` = 10 × 15,
//! 40 × 60 and 100 × 150.
//!
//! The construction: the aerofoil's upper surface from the NACA0012
//! thickness formula at 100 points clustered towards both ends, mapped by
//! `z ↦ √(z − x₀)` (which opens the aerofoil and its wake into a line), both
//! halves joined; a rectangular grid in that plane whose bottom row follows
//! the aerofoil's image (a not-a-knot cubic spline through it) and whose
//! columns run straight up to height 3; the grid mapped back by `z ↦ z²`.
//! Coordinates are kept as `new_grid.dat` prints them (`%f`, six decimals),
//! which is what an application reading that file computes with. Numbering
//! is 0-based, in the generator's order.

use std::fmt::Write as _;

/// A generated mesh: the four sets and maps of OP2's airfoil, the node
/// coordinates and the boundary kinds.
#[derive(Debug, Clone, PartialEq)]
pub struct Mesh {
    /// `[x, y]` of every node.
    pub nodes: Vec<[f64; 2]>,
    /// The four nodes of every cell, anticlockwise.
    pub cells: Vec<[u32; 4]>,
    /// The two nodes of every interior edge.
    pub edge_nodes: Vec<[u32; 2]>,
    /// The two cells either side of every interior edge.
    pub edge_cells: Vec<[u32; 2]>,
    /// The two nodes of every boundary edge.
    pub bedge_nodes: Vec<[u32; 2]>,
    /// The cell inside every boundary edge.
    pub bedge_cells: Vec<u32>,
    /// 1 on the aerofoil's wall, 2 on the far field.
    pub bounds: Vec<u8>,
}

/// The largest `I` and `J` [`naca0012`] accepts: node numbers stay well
/// inside `u32`, and the mesh inside memory (4,000 × 6,000 is 72 million
/// cells).
pub const MAX_SIDE: usize = 6_000;

/// The mesh of OP2's generator for `i` and `j` (each from 1 to
/// [`MAX_SIDE`]); `None` outside that range.
pub fn naca0012(i: usize, j: usize) -> Option<Mesh> {
    if !(1..=MAX_SIDE).contains(&i) || !(1..=MAX_SIDE).contains(&j) {
        return None;
    }
    let (ni, nj) = (3 * i, j);
    let nodes = grid(i, j);
    let node = |a: usize, b: usize| (b * (ni + 1) + a) as u32;
    let cell = |a: usize, b: usize| (b * ni + a) as u32;
    let mut cells = Vec::with_capacity(ni * nj);
    for b in 0..nj {
        for a in 0..ni {
            cells.push([
                node(a, b),
                node(a + 1, b),
                node(a + 1, b + 1),
                node(a, b + 1),
            ]);
        }
    }
    let edges = (ni - 1) * nj + ni * (nj - 1) + i;
    let (mut edge_nodes, mut edge_cells) = (Vec::with_capacity(edges), Vec::with_capacity(edges));
    for b in 0..nj {
        for a in 0..ni {
            // The wake's cut: the bottom row's first third meets its last.
            if b == 0 && a < i {
                edge_nodes.push([node(a, b), node(a + 1, b)]);
                edge_cells.push([cell(ni - 1 - a, b), cell(a, b)]);
            }
            if b + 1 < nj {
                edge_nodes.push([node(a, b + 1), node(a + 1, b + 1)]);
                edge_cells.push([cell(a, b), cell(a, b + 1)]);
            }
            if a + 1 < ni {
                edge_nodes.push([node(a + 1, b), node(a + 1, b + 1)]);
                edge_cells.push([cell(a + 1, b), cell(a, b)]);
            }
        }
    }
    let bedges = i + ni + 2 * nj;
    let mut bedge_nodes = Vec::with_capacity(bedges);
    let mut bedge_cells = Vec::with_capacity(bedges);
    let mut bounds = Vec::with_capacity(bedges);
    let mut boundary = |nodes: [u32; 2], cell: u32, bound: u8| {
        bedge_nodes.push(nodes);
        bedge_cells.push(cell);
        bounds.push(bound);
    };
    // The aerofoil, then the far field: right, top (leftwards), left (down).
    for a in i..2 * i {
        boundary([node(a + 1, 0), node(a, 0)], cell(a, 0), 1);
    }
    for b in 0..nj {
        boundary([node(ni, b + 1), node(ni, b)], cell(ni - 1, b), 2);
    }
    for a in (0..ni).rev() {
        boundary([node(a, nj), node(a + 1, nj)], cell(a, nj - 1), 2);
    }
    for b in (0..nj).rev() {
        boundary([node(0, b), node(0, b + 1)], cell(0, b), 2);
    }
    Some(Mesh {
        nodes,
        cells,
        edge_nodes,
        edge_cells,
        bedge_nodes,
        bedge_cells,
        bounds,
    })
}

/// `n` points from `start` to `stop`, evenly spaced, the last exactly `stop`,
/// rounded as the generator's `linspace` rounds them (`start + (k · (stop −
/// start)) / (n − 1)`: which side of zero a coordinate near zero falls, and
/// so the sign `%f` gives it, depends on it).
fn linspace(start: f64, stop: f64, n: usize) -> impl Iterator<Item = f64> {
    let steps = (n - 1).max(1) as f64;
    (0..n).map(move |k| {
        if k + 1 == n {
            stop
        } else {
            start + (k as f64 * (stop - start)) / steps
        }
    })
}

/// The principal square root of `re + i·im`.
fn csqrt(re: f64, im: f64) -> (f64, f64) {
    if re == 0.0 && im == 0.0 {
        return (0.0, im);
    }
    let t = ((re.abs() + re.hypot(im)) / 2.0).sqrt();
    if re >= 0.0 {
        (t, im / (2.0 * t))
    } else {
        (im.abs() / (2.0 * t), t.copysign(im))
    }
}

/// The node coordinates, row by row from the aerofoil outwards, rounded as
/// `%f` prints them.
fn grid(i: usize, j: usize) -> Vec<[f64; 2]> {
    // The upper surface, clustered at both ends, and its image under the
    // square root, joined to its mirror image (the lower surface).
    let xs: Vec<f64> = linspace(0.0, std::f64::consts::FRAC_PI_2, 100)
        .map(|t| t.sin() * t.sin())
        .collect();
    let mut ys: Vec<f64> = xs
        .iter()
        .map(|&x| {
            0.594689181
                * (0.298222773 * x.sqrt() - 0.127125232 * x - 0.357907906 * x * x
                    + 0.291984971 * x.powf(3.0)
                    - 0.105174696 * x.powf(4.0))
        })
        .collect();
    ys[99] = 0.0;
    let half: Vec<(f64, f64)> = xs
        .iter()
        .zip(&ys)
        .map(|(&x, &y)| csqrt(x - 0.0077, y))
        .collect();
    let mut curve: Vec<(f64, f64)> = half.iter().rev().map(|&(re, im)| (-re, im)).collect();
    curve.extend_from_slice(&half[1..]);
    let (cx, cy): (Vec<f64>, Vec<f64>) = curve.into_iter().unzip();
    let spline = Spline::not_a_knot(&cx, &cy);

    let ni = 3 * i;
    let xb: Vec<f64> = linspace(-3.0, 3.0, ni + 1).collect();
    let yb: Vec<f64> = xb
        .iter()
        .enumerate()
        .map(|(a, &x)| {
            if a > i && a < 2 * i {
                spline.at(x)
            } else {
                0.0
            }
        })
        .collect();
    let columns: Vec<Vec<f64>> = yb
        .iter()
        .map(|&y0| linspace(y0, 3.0, j + 1).collect())
        .collect();
    let round = |v: f64| format!("{v:.6}").parse::<f64>().unwrap_or(v);
    let mut nodes = Vec::with_capacity((ni + 1) * (j + 1));
    for b in 0..=j {
        for (&x, column) in xb.iter().zip(&columns) {
            let y = column[b];
            nodes.push([round(x * x - y * y), round(x * y + y * x)]);
        }
    }
    nodes
}

/// A cubic spline through points with increasing abscissae, its third
/// derivative continuous at the second and the second-last point.
struct Spline {
    x: Vec<f64>,
    y: Vec<f64>,
    /// The second derivative at every point.
    m: Vec<f64>,
}

impl Spline {
    fn not_a_knot(x: &[f64], y: &[f64]) -> Self {
        let n = x.len();
        let h: Vec<f64> = x.windows(2).map(|w| w[1] - w[0]).collect();
        let mut a = vec![vec![0.0; n]; n];
        let mut r = vec![0.0; n];
        for k in 1..n - 1 {
            a[k][k - 1] = h[k - 1];
            a[k][k] = 2.0 * (h[k - 1] + h[k]);
            a[k][k + 1] = h[k];
            r[k] = 6.0 * ((y[k + 1] - y[k]) / h[k] - (y[k] - y[k - 1]) / h[k - 1]);
        }
        a[0][0] = h[1];
        a[0][1] = -(h[0] + h[1]);
        a[0][2] = h[0];
        a[n - 1][n - 3] = h[n - 2];
        a[n - 1][n - 2] = -(h[n - 3] + h[n - 2]);
        a[n - 1][n - 1] = h[n - 3];
        Spline {
            x: x.to_vec(),
            y: y.to_vec(),
            m: solve(a, r),
        }
    }

    fn at(&self, t: f64) -> f64 {
        let n = self.x.len();
        let k = self.x.partition_point(|&x| x < t).clamp(1, n - 1) - 1;
        let (x0, x1, hk) = (self.x[k], self.x[k + 1], self.x[k + 1] - self.x[k]);
        let (m0, m1) = (self.m[k], self.m[k + 1]);
        let (t0, t1) = (x1 - t, t - x0);
        m0 * t0.powi(3) / (6.0 * hk)
            + m1 * t1.powi(3) / (6.0 * hk)
            + (self.y[k] - m0 * hk * hk / 6.0) * t0 / hk
            + (self.y[k + 1] - m1 * hk * hk / 6.0) * t1 / hk
    }
}

/// `a · x = r` by Gaussian elimination with partial pivoting (the system is
/// small: one row per point of the aerofoil's outline).
fn solve(mut a: Vec<Vec<f64>>, mut r: Vec<f64>) -> Vec<f64> {
    let n = r.len();
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&p, &q| a[p][col].abs().total_cmp(&a[q][col].abs()))
            .unwrap_or(col);
        a.swap(col, pivot);
        r.swap(col, pivot);
        let (done, below) = a.split_at_mut(col + 1);
        let pivot_row = &done[col];
        for (k, row) in below.iter_mut().enumerate() {
            let f = row[col] / pivot_row[col];
            if f != 0.0 {
                for (x, p) in row[col..].iter_mut().zip(&pivot_row[col..]) {
                    *x -= f * p;
                }
                r[col + 1 + k] -= f * r[col];
            }
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        let s: f64 = (row + 1..n).map(|c| a[row][c] * x[c]).sum();
        x[row] = (r[row] - s) / a[row][row];
    }
    x
}

impl Mesh {
    /// The instance JSON of `docs/examples/airfoil.op2` (and of the shared
    /// meshes): sets, maps `pedge`, `pecell`, `pbedge`, `pbecell`, `pcell`,
    /// dats `p_x` and `p_bound`, const `qinf` (the free stream of OP2's
    /// airfoil: Mach 0.4, angle of attack 3°).
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(self.cells.len() * 150);
        let _ = write!(
            out,
            "{{\"sets\":{{\"nodes\":{},\"edges\":{},\"bedges\":{},\"cells\":{}}},\"maps\":{{",
            self.nodes.len(),
            self.edge_nodes.len(),
            self.bedge_nodes.len(),
            self.cells.len()
        );
        list(&mut out, "\"pedge\":[", &self.edge_nodes, pair);
        list(&mut out, "],\"pecell\":[", &self.edge_cells, |o, e| {
            pair(o, e)
        });
        list(&mut out, "],\"pbedge\":[", &self.bedge_nodes, |o, e| {
            pair(o, e)
        });
        list(&mut out, "],\"pbecell\":[", &self.bedge_cells, |o, c| {
            let _ = write!(o, "[{c}]");
        });
        list(&mut out, "],\"pcell\":[", &self.cells, |o, c| {
            let _ = write!(o, "[{},{},{},{}]", c[0], c[1], c[2], c[3]);
        });
        list(&mut out, "]},\"dats\":{\"p_x\":[", &self.nodes, |o, p| {
            let _ = write!(o, "[{:?},{:?}]", p[0], p[1]);
        });
        list(&mut out, "],\"p_bound\":[", &self.bounds, |o, b| {
            let _ = write!(o, "{b}");
        });
        out.push_str("]},\"consts\":{\"qinf\":[1.0,0.4732863856704763,0.0,2.612000150442132]}}");
        out
    }

    /// The mesh as OP2's airfoil applications read it (`new_grid.dat`): the
    /// four sizes, then node coordinates, cells, edges (nodes and cells) and
    /// boundary edges (nodes, cell and kind), 0-based.
    pub fn to_op2_dat(&self) -> String {
        let mut out = String::with_capacity(self.cells.len() * 90);
        let _ = writeln!(
            out,
            " {} {} {} {} ",
            self.nodes.len(),
            self.cells.len(),
            self.edge_nodes.len(),
            self.bedge_nodes.len()
        );
        for [x, y] in &self.nodes {
            let _ = writeln!(out, " {x:.6} {y:.6} ");
        }
        for [a, b, c, d] in &self.cells {
            let _ = writeln!(out, " {a} {b} {c} {d} ");
        }
        for ([a, b], [c, d]) in self.edge_nodes.iter().zip(&self.edge_cells) {
            let _ = writeln!(out, " {a} {b} {c} {d} ");
        }
        for (([a, b], c), k) in self
            .bedge_nodes
            .iter()
            .zip(&self.bedge_cells)
            .zip(&self.bounds)
        {
            let _ = writeln!(out, " {a} {b} {c} {k} ");
        }
        out
    }
}

fn pair(out: &mut String, [a, b]: &[u32; 2]) {
    let _ = write!(out, "[{a},{b}]");
}

/// `head`, then each item rendered, separated by commas.
fn list<T>(out: &mut String, head: &str, items: &[T], mut item: impl FnMut(&mut String, &T)) {
    out.push_str(head);
    for (k, t) in items.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        item(out, t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_those_of_the_generator() {
        let mesh = naca0012(10, 15).expect("in range");
        assert_eq!(mesh.nodes.len(), 31 * 16);
        assert_eq!(mesh.cells.len(), 450);
        assert_eq!(mesh.edge_nodes.len(), 865);
        assert_eq!(mesh.bedge_nodes.len(), 70);
        assert!(naca0012(0, 15).is_none());
        assert!(naca0012(10, MAX_SIDE + 1).is_none());
    }

    #[test]
    fn the_spline_reproduces_a_cubic() {
        let x: Vec<f64> = (0..9)
            .map(|k| f64::from(k) * 0.5 + 0.1 * f64::from(k % 2))
            .collect();
        let y: Vec<f64> = x.iter().map(|t| t * t * t - 2.0 * t + 1.0).collect();
        let s = Spline::not_a_knot(&x, &y);
        for t in [0.3, 1.7, 2.2, 3.9] {
            let want = t * t * t - 2.0 * t + 1.0;
            assert!(
                (s.at(t) - want).abs() < 1e-9,
                "{t}: {} against {want}",
                s.at(t)
            );
        }
    }
}
