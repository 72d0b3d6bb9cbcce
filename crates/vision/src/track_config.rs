//! The tracker's settings (`track`), apart so that the per-look split (`kinds`) and the
//! tracker both read them without an import circle.

use flexbench_contracts::flags::FALSE_ALARM;
use flexbench_contracts::MarkerKind;

use crate::corrections::Correction;
use crate::pattern::MarkerLayout;
use crate::timebase::TimeBaseConfig;

/// Tracking settings.
#[derive(Debug, Clone, PartialEq)]
pub struct TrackConfig {
    /// Marker names in order along the lever from B (M1..M5 on the bench).
    pub markers: Vec<String>,
    /// Segmentation threshold, grey level: bright markers above it, dark markers below it; None:
    /// halfway between the median and the extreme level of the region searched.
    pub threshold: Option<f64>,
    /// Smallest blob area kept, px.
    pub min_area: f64,
    /// Largest blob area kept, px.
    pub max_area: f64,
    /// The markers as the mechanism places them (each body's markers a rigid pattern, index
    /// into `markers`); None: the markers lie in a line on the lever, named from the end
    /// nearest the bench origin.
    pub layout: Option<MarkerLayout>,
    /// False-alarm level of each test of the tracked samples (`flags`).
    pub alpha: f64,
    /// The user's corrections, applied frame by frame (`corrections`).
    pub corrections: Vec<Correction>,
    /// What the user states about the video's time base (frame rate, capture rate).
    pub timing: TimeBaseConfig,
    /// How the markers look: bright or dark discs, coloured stickers (each sought in its
    /// response image), printed fiducials (by their code) or features clicked once (by their
    /// template).
    pub kind: MarkerKind,
    /// Each marker's kind when they differ (in the order of `markers`; empty: all `kind`): each
    /// look followed by its own tracker on the same frames (`kinds`).
    pub kinds: Vec<MarkerKind>,
    /// Each fiducial marker's identity in its dictionary (in the order of `markers`, any value
    /// for markers of other kinds; empty when no marker is a fiducial).
    pub codes: Vec<u32>,
    /// The features clicked once and followed by their template (`template`), for markers of
    /// the template kind.
    pub templates: Vec<crate::template::TemplateClick>,
    /// Each marker's distance in front of the bench plane, towards the camera, m (in the order
    /// of `markers`; empty: all in the plane). A marker's bench position is where its ray meets
    /// the plane at its depth, not the bench plane itself (`camera::toward_camera`).
    pub depths: Vec<f64>,
    /// The depth of the markers of each rigid pattern estimated from their spacings and used
    /// instead of `depths` (`depth`).
    pub estimate_depth: bool,
    /// A rolling shutter's readout, s (0: a global shutter): each sample timed by its row and
    /// carried back to its frame's time (`shutter`).
    pub readout: f64,
    /// The readout estimated from the rigid patterns' deformation with the motion and used
    /// instead of `readout` (`readout`).
    pub estimate_readout: bool,
}

impl Default for TrackConfig {
    fn default() -> Self {
        TrackConfig {
            markers: (1..=5).map(|i| format!("M{i}")).collect(),
            threshold: None,
            min_area: 6.0,
            max_area: 5000.0,
            layout: None,
            alpha: FALSE_ALARM,
            corrections: Vec::new(),
            timing: TimeBaseConfig::default(),
            kind: MarkerKind::Bright,
            kinds: Vec::new(),
            codes: Vec::new(),
            templates: Vec::new(),
            depths: Vec::new(),
            estimate_depth: false,
            readout: 0.0,
            estimate_readout: false,
        }
    }
}
