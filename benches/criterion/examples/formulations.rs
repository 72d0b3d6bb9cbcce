//! The cost of the four formalisms of one element's equations (flexbench_fem::formulations):
//! per evaluation of the whole lever's equations (1 to 30 frame elements of the bench's lever),
//! and the derivation of the lever's matrices by each path (3n + 1 evaluations an element: the
//! mass, gyroscopic and stiffness-like columns and the load vector) against the FEM stage's
//! analysis along the cycle they feed (the same 30 elements, 1000 samples, the lowest 12 modes),
//! which is the same
//! whichever path built the matrices: seed 001's "Kane about 7 % cheaper at 30 elements" is
//! about the whole program.
//!
//! Run: cargo run --release -p flexbench-benches --example formulations  (prints markdown)

use std::time::Instant;

use flexbench_benches::{fem_cycle_with, pinned_cycle_modes};
use flexbench_fem::element::{ElementKind, Section};
use flexbench_fem::formulations::{ElementPoints, ElementState, Formalism};
use nalgebra::{DVector, Vector2};

/// Median seconds of `f` over `reps` timed runs of `inner` calls each.
fn time(reps: usize, inner: usize, f: &mut dyn FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let s = Instant::now();
            for _ in 0..inner {
                f();
            }
            s.elapsed().as_secs_f64() / inner as f64
        })
        .collect();
    t.sort_by(|a, b| a.total_cmp(b));
    t[reps / 2]
}

fn state(n: usize, k: usize) -> ElementState {
    let v = |s: f64| DVector::from_fn(n, |i, _| s * ((i + 3 * k) as f64 * 0.7).sin());
    ElementState {
        phi: 0.3,
        omega: 14.7,
        epsilon: 30.0,
        v_o: Vector2::new(0.5, -0.8),
        a_o: Vector2::new(9.0, -4.0),
        delta: v(1e-4),
        delta_d: v(1e-2),
        delta_dd: v(5.0),
    }
}

/// Derive one element's matrices by `f`: Q at zero, then one evaluation per unit delta'',
/// delta' and delta.
fn derive(el: &ElementPoints, f: Formalism, n: usize) -> f64 {
    let mut st = state(n, 0);
    st.delta.fill(0.0);
    st.delta_d.fill(0.0);
    st.delta_dd.fill(0.0);
    let q0 = el.inertia_forces(f, &st);
    let mut sum = q0.sum();
    for j in 0..n {
        for which in 0..3 {
            let mut s = st.clone();
            match which {
                0 => s.delta_dd[j] = 1.0,
                1 => s.delta_d[j] = 1.0,
                _ => s.delta[j] = 1.0,
            }
            sum += (el.inertia_forces(f, &s) - &q0).sum();
        }
    }
    sum
}

fn main() {
    let section = Section {
        young: 210e9,
        density: 7850.0,
        area: 1.5e-4,
        inertia: 4.5e-10,
    };
    let kind = ElementKind::Frame;
    let n = kind.dofs();
    println!("| elements | Lagrange (us) | Gibbs-Appell (us) | Maggi (us) | Kane (us) | Lagrange / Kane |");
    println!("|---:|---:|---:|---:|---:|---:|");
    let mut derive_30 = Vec::new();
    for elements in [1usize, 2, 5, 10, 15, 20, 25, 30] {
        let le = 0.45 / elements as f64;
        let els: Vec<ElementPoints> = (0..elements)
            .map(|e| ElementPoints::new(kind, &section, le, e as f64 * le))
            .collect();
        let states: Vec<ElementState> = (0..elements).map(|e| state(n, e)).collect();
        let mut row = Vec::new();
        for f in Formalism::ALL {
            let mut sink = 0.0;
            let t = time(9, (200 / elements).max(3), &mut || {
                for (el, st) in els.iter().zip(&states) {
                    sink += el.inertia_forces(f, st).sum();
                }
            });
            std::hint::black_box(sink);
            row.push(t * 1e6);
            if elements == 30 {
                let mut sink = 0.0;
                let td = time(5, 1, &mut || {
                    for el in &els {
                        sink += derive(el, f, n);
                    }
                });
                std::hint::black_box(sink);
                derive_30.push((f, td));
            }
        }
        println!(
            "| {elements} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            row[0],
            row[1],
            row[2],
            row[3],
            row[0] / row[3]
        );
    }
    let cycle = fem_cycle_with(1000, kind, 30);
    let tc = time(3, 1, &mut || {
        std::hint::black_box(pinned_cycle_modes(&cycle, 0, 12));
    });
    println!();
    println!("The lever's matrices derived at 30 elements, and the analysis along the cycle they feed ({tc:.3} s):");
    println!();
    println!(
        "| formalism | derivation (ms) | derivation + cycle analysis (s) | against Lagrange |"
    );
    println!("|---|---:|---:|---:|");
    let lag = derive_30[0].1 + tc;
    for (f, td) in &derive_30 {
        let total = td + tc;
        println!(
            "| {} | {:.2} | {:.4} | {:+.2} % |",
            f.name(),
            td * 1e3,
            total,
            (total / lag - 1.0) * 100.0
        );
    }
    println!();
    println!("Differentiations an element (frame, n = {n}): Lagrange {}, Gibbs-Appell {}, Maggi {}, Kane {}.",
        Formalism::Lagrange.differentiations(n), Formalism::GibbsAppell.differentiations(n),
        Formalism::Maggi.differentiations(n), Formalism::Kane.differentiations(n));
}
