//! Markers of several kinds in one video (a bench's printed fiducials beside bright discs, two
//! colours of stickers): the markers split into groups of one look each (`MarkerKind::same_look`),
//! each group followed by its own tracker on the same decoded frames (its response, its lock,
//! its windows), and the groups' samples put back in the markers' order before the samples'
//! tests (`flags`), so that a body's rigid pattern is tested across kinds.

use flexbench_contracts::MarkerKind;

use crate::corrections::{Correction, Fix};
use crate::pattern::{BodyPattern, MarkerLayout};
use crate::track_config::TrackConfig;

/// One group of markers of one look: its tracker's settings (markers, layout, codes, clicks,
/// depths and corrections of the group only, indices into the group) and each of its markers'
/// index into the whole list.
#[derive(Debug, Clone)]
pub struct Group {
    /// The group's tracker's settings.
    pub cfg: TrackConfig,
    /// Index into `TrackConfig::markers` of the whole of each of the group's markers.
    pub index: Vec<usize>,
}

/// Each marker's kind: `cfg.kinds` when given (one per marker), else `cfg.kind` for all.
fn kinds(cfg: &TrackConfig) -> Result<Vec<MarkerKind>, String> {
    let nm = cfg.markers.len();
    match cfg.kinds.len() {
        0 => Ok(vec![cfg.kind; nm]),
        n if n == nm => Ok(cfg.kinds.clone()),
        n => Err(format!(
            "{n} marker kinds for {nm} markers: give one per marker"
        )),
    }
}

/// The markers split into groups of one look, in the order of each look's first marker; one
/// group (the settings as given) when every marker looks alike. An error names a group of disc
/// markers (bright, dark, coloured) with a single marker (a disc alone has no pattern to lock
/// on), and a swap between markers of two groups.
pub fn split(cfg: &TrackConfig) -> Result<Vec<Group>, String> {
    let kinds = kinds(cfg)?;
    let mut looks: Vec<(MarkerKind, Vec<usize>)> = Vec::new();
    for (m, k) in kinds.iter().enumerate() {
        match looks.iter_mut().find(|(l, _)| l.same_look(*k)) {
            Some((_, members)) => members.push(m),
            None => looks.push((*k, vec![m])),
        }
    }
    if looks.len() <= 1 {
        let mut one = cfg.clone();
        one.kind = kinds.first().copied().unwrap_or(cfg.kind);
        one.kinds.clear();
        let index = (0..cfg.markers.len()).collect();
        return Ok(vec![Group { cfg: one, index }]);
    }
    for c in &cfg.corrections {
        let groups: Vec<usize> = c
            .markers()
            .iter()
            .filter_map(|m| looks.iter().position(|(_, g)| g.contains(m)))
            .collect();
        if groups.windows(2).any(|w| w[0] != w[1]) {
            return Err(format!(
                "the corrections: {} swaps markers of two kinds ({}): a tracker of one kind never takes the other's markers; drop or move the samples instead",
                c.label,
                c.markers().iter().map(|m| cfg.markers[*m].as_str()).collect::<Vec<_>>().join(" and ")
            ));
        }
    }
    looks
        .into_iter()
        .map(|(kind, index)| group(cfg, kind, index))
        .collect()
}

/// The settings of the group of `kind` whose markers are `index` into the whole.
fn group(cfg: &TrackConfig, kind: MarkerKind, index: Vec<usize>) -> Result<Group, String> {
    // Long: one group's settings, each of the whole's settings (codes, templates, corrections,
    // layout) restricted to the group's markers in turn.
    let disc = matches!(
        kind,
        MarkerKind::Bright | MarkerKind::Dark | MarkerKind::Colour { .. }
    );
    if disc && index.len() < 2 {
        return Err(format!(
            "the marker '{}' is the only one of its kind ({}): discs are found as a pattern of two markers or more; give it the kind of others, or make it a printed fiducial",
            cfg.markers[index[0]],
            kind.name()
        ));
    }
    let local = |m: usize| index.iter().position(|i| *i == m);
    let pick = |v: &[f64]| -> Vec<f64> {
        if v.is_empty() {
            Vec::new()
        } else {
            index.iter().map(|i| v[*i]).collect()
        }
    };
    let codes = match kind {
        MarkerKind::Fiducial { .. } if !cfg.codes.is_empty() => {
            index.iter().map(|i| cfg.codes[*i]).collect()
        }
        _ => Vec::new(),
    };
    let templates = cfg
        .templates
        .iter()
        .filter_map(|t| {
            local(t.marker).map(|marker| crate::template::TemplateClick { marker, ..*t })
        })
        .collect();
    let corrections = cfg
        .corrections
        .iter()
        .filter_map(|c| {
            let marker = local(c.marker)?;
            let fix = match c.fix {
                Fix::Swap { other } => Fix::Swap {
                    other: local(other)?,
                },
                f => f,
            };
            Some(Correction {
                marker,
                fix,
                ..c.clone()
            })
        })
        .collect();
    let layout = cfg.layout.as_ref().map(|l| MarkerLayout {
        bodies: l
            .bodies
            .iter()
            .filter_map(|b| {
                let markers: Vec<(usize, [f64; 2])> = b
                    .markers
                    .iter()
                    .filter_map(|(m, at)| local(*m).map(|i| (i, *at)))
                    .collect();
                (!markers.is_empty()).then(|| BodyPattern {
                    markers,
                    ..b.clone()
                })
            })
            .collect(),
    });
    let sub = TrackConfig {
        markers: index.iter().map(|i| cfg.markers[*i].clone()).collect(),
        layout,
        corrections,
        kind,
        kinds: Vec::new(),
        codes,
        templates,
        depths: pick(&cfg.depths),
        ..cfg.clone()
    };
    Ok(Group { cfg: sub, index })
}

#[cfg(test)]
mod tests {
    use super::*;
    fn mixed() -> TrackConfig {
        let fid = |id| MarkerKind::Fiducial { dictionary: 0, id };
        TrackConfig {
            markers: ["K1", "K2", "K3", "R1", "R2"].map(String::from).to_vec(),
            kinds: vec![
                fid(3),
                MarkerKind::Bright,
                fid(11),
                MarkerKind::Bright,
                fid(23),
            ],
            codes: vec![3, 0, 11, 0, 23],
            depths: vec![0.01, 0.02, 0.03, 0.04, 0.05],
            layout: Some(MarkerLayout {
                bodies: vec![
                    BodyPattern {
                        body: "coupler".into(),
                        markers: vec![(0, [0.0, 0.0]), (1, [0.1, 0.0]), (2, [0.2, 0.0])],
                        anchors: Vec::new(),
                    },
                    BodyPattern {
                        body: "rocker".into(),
                        markers: vec![(3, [0.0, 0.0]), (4, [0.1, 0.0])],
                        anchors: Vec::new(),
                    },
                ],
            }),
            ..TrackConfig::default()
        }
    }

    /// Fiducials of one dictionary (whatever their ids) make one group, the bright discs
    /// another; each group's settings hold its own markers, codes, depths and bodies.
    #[test]
    fn markers_of_two_looks_make_two_groups() {
        let groups = split(&mixed()).unwrap();
        assert_eq!(groups.len(), 2);
        let (f, b) = (&groups[0], &groups[1]);
        assert_eq!(f.index, vec![0, 2, 4]);
        assert_eq!(f.cfg.markers, ["K1", "K3", "R2"]);
        assert_eq!(f.cfg.codes, vec![3, 11, 23]);
        assert_eq!(f.cfg.depths, vec![0.01, 0.03, 0.05]);
        let bodies = &f.cfg.layout.as_ref().unwrap().bodies;
        assert_eq!(bodies[0].markers, vec![(0, [0.0, 0.0]), (1, [0.2, 0.0])]);
        assert_eq!(bodies[1].markers, vec![(2, [0.1, 0.0])]);
        assert_eq!(b.index, vec![1, 3]);
        assert_eq!(b.cfg.kind, MarkerKind::Bright);
        assert!(b.cfg.codes.is_empty());
        assert_eq!(b.cfg.layout.as_ref().unwrap().bodies.len(), 2);
    }

    /// One look: the settings as they are. A bright disc alone, or a swap across the looks:
    /// refused, naming the marker.
    #[test]
    fn one_group_or_a_clear_refusal() {
        let mut one = mixed();
        one.kinds = vec![MarkerKind::Dark; 5];
        let g = split(&one).unwrap();
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].cfg.kind, MarkerKind::Dark);
        assert_eq!(g[0].cfg.markers.len(), 5);
        let mut alone = mixed();
        alone.kinds = vec![MarkerKind::Bright; 5];
        alone.kinds[3] = MarkerKind::Dark;
        let e = split(&alone).unwrap_err();
        assert!(e.contains("'R1' is the only one of its kind (dark)"), "{e}");
        let mut swap = mixed();
        swap.corrections = vec![Correction {
            label: "[[swap]] 1".into(),
            marker: 0,
            frames: [3, 9],
            fix: Fix::Swap { other: 1 },
        }];
        let e = split(&swap).unwrap_err();
        assert!(e.contains("swaps markers of two kinds (K1 and K2)"), "{e}");
    }
}
