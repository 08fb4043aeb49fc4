//! `naca::naca0012` against the meshes in `shared/data`, which OP2's own
//! generator made: the same sets, the same maps element for element, and
//! the same coordinates to the bit, signs of zeros included (both as
//! `new_grid.dat` rounds them).

use std::path::PathBuf;

use op2_instance::naca::naca0012;

fn shared(name: &str) -> serde_json::Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data")
        .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("the shared mesh {} is missing: {e}", path.display()));
    serde_json::from_str(&text).expect("the shared mesh is JSON")
}

fn same_as_shared(i: usize, j: usize) {
    let mine: serde_json::Value =
        serde_json::from_str(&naca0012(i, j).expect("in range").to_json()).expect("valid JSON");
    let theirs = shared(&format!("airfoil_I{i}_J{j}.json"));
    for part in ["sets", "maps", "dats", "consts"] {
        let (a, b) = (&mine[part], &theirs[part]);
        let keys: Vec<&String> = b.as_object().expect("an object").keys().collect();
        assert_eq!(
            a.as_object().expect("an object").keys().collect::<Vec<_>>(),
            keys
        );
        for key in keys {
            // As text: `-0.0 == 0.0`, but a zero's sign is part of the mesh.
            let (a, b) = (a[key].to_string(), b[key].to_string());
            assert!(a == b, "{i}×{j}: {part}.{key} differs");
        }
    }
}

#[test]
fn the_450_cell_mesh_is_the_shared_one() {
    same_as_shared(10, 15);
}

#[test]
fn the_7200_cell_mesh_is_the_shared_one() {
    same_as_shared(40, 60);
}

#[test]
fn the_45000_cell_mesh_is_the_shared_one() {
    same_as_shared(100, 150);
}

#[test]
fn op2s_file_has_the_sizes_and_then_one_line_per_element() {
    let mesh = naca0012(10, 15).expect("in range");
    let text = mesh.to_op2_dat();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(" 496 450 865 70 "));
    assert_eq!(lines.next(), Some(" 9.000000 -0.000000 "));
    assert_eq!(text.lines().count(), 1 + 496 + 450 + 865 + 70);
    assert_eq!(
        text.lines().last(),
        Some(&*format!(" {} {} {} 2 ", 0, 31, 0))
    );
}
