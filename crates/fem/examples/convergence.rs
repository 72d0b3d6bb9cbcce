//! The pinned lever's frequencies against the exact ones, both elements, a ladder of meshes,
//! with the observed orders between successive meshes: the table of docs/fem.md.
//! Run: cargo run --release -p flexbench-fem --example convergence
use flexbench_fem::element::Section;
use flexbench_fem::modal::{pinned_axial_exact, pinned_bending_exact, pinned_frequencies};
use flexbench_fem::{ElementKind, Lever, Mesh};

fn main() {
    let lever = Lever::new(
        0.45,
        Section {
            young: 210e9,
            density: 7850.0,
            area: 1.5e-4,
            inertia: 4.5e-10,
        },
    )
    .expect("the bench's lever");
    println!("Relative error of the frequency (observed order p against the previous mesh)\n");
    println!("| element | elements | bending 1 | bending 3 | bending 6 | axial 1 | axial 2 |");
    println!("|---|---|---|---|---|---|---|");
    for kind in [ElementKind::Frame, ElementKind::Quintic] {
        let mut last: Option<(usize, Vec<f64>)> = None;
        for ne in [2usize, 4, 8, 16, 32] {
            let Ok((b, a)) = pinned_frequencies(&Mesh::new(lever, kind, ne).expect("a mesh"))
            else {
                continue;
            };
            let errs: Vec<f64> = [
                (b.first(), pinned_bending_exact(&lever, 1)),
                (b.get(2), pinned_bending_exact(&lever, 3)),
                (b.get(5), pinned_bending_exact(&lever, 6)),
                (a.first(), pinned_axial_exact(&lever, 1)),
                (a.get(1), pinned_axial_exact(&lever, 2)),
            ]
            .iter()
            .map(|(f, exact)| f.map_or(f64::NAN, |f| f / exact - 1.0))
            .collect();
            let cells: Vec<String> = errs
                .iter()
                .enumerate()
                .map(|(i, e)| match &last {
                    _ if e.is_nan() => "-".into(),
                    Some((pn, pe)) if pe[i].is_finite() && e.abs() > 1e-13 => format!(
                        "{e:.2e} (p {:.2})",
                        (pe[i].abs() / e.abs()).ln() / (ne as f64 / *pn as f64).ln()
                    ),
                    _ => format!("{e:.2e}"),
                })
                .collect();
            println!("| {} | {ne} | {} |", kind.name(), cells.join(" | "));
            last = Some((ne, errs));
        }
    }
}
