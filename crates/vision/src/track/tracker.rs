//! The tracker: frame by frame, each marker predicted, found in its window, given its identity and
//! tested, with the rigid patterns' lock.

use super::*;

/// The tracker's state over the frames: each frame's assigned blobs, the lock, the running
/// mean square of each marker's prediction error (px^2 per axis), the blob counts per frame,
/// the counts of frames with extra discs on the lever's line, why the layout found no lock, and
/// the summary so far.
pub(super) struct Tracker<'a> {
    pub(super) nm: usize,
    pub(super) cfg: &'a TrackConfig,
    pub(super) view: View<'a>,
    pub(super) per_frame: Vec<Vec<Option<Blob>>>,
    pub(super) lock: Option<Lock>,
    pub(super) scale2: Vec<f64>,
    pub(super) counts: std::collections::BTreeMap<usize, usize>,
    pub(super) extra_frames: usize,
    pub(super) searched_frames: usize,
    pub(super) not_found: std::collections::BTreeMap<(String, String), usize>,
    pub(super) corrected: std::collections::BTreeMap<(usize, usize), Option<Blob>>,
    pub(super) summary: TrackSummary,
    pub(super) window_buf: WindowBuffers,
    pub(super) grey: Mat,
    /// The fiducials sought, for fiducial markers (found by their codes: no lock, no search).
    pub(super) fiducials: Option<crate::fiducial::Fiducials>,
    /// The first frame where no fiducial was found, to name the dictionary it shows.
    pub(super) unfound: Option<Mat>,
    /// The features followed by their templates, for template markers.
    pub(super) templates: Option<crate::template::Templates>,
}

impl<'a> Tracker<'a> {
    pub(super) fn new(cfg: &'a TrackConfig, view: View<'a>) -> Tracker<'a> {
        Tracker {
            nm: cfg.markers.len(),
            cfg,
            view,
            per_frame: Vec::new(),
            lock: None,
            scale2: Vec::new(),
            counts: Default::default(),
            extra_frames: 0,
            searched_frames: 0,
            not_found: Default::default(),
            corrected: Default::default(),
            summary: TrackSummary::default(),
            window_buf: WindowBuffers::default(),
            grey: Mat::default(),
            fiducials: None,
            unfound: None,
            templates: None,
        }
    }

    /// A tracker of the markers of `cfg` (of one look): fiducials sought by their codes,
    /// features by their templates.
    pub(super) fn for_kind(
        cfg: &'a TrackConfig,
        view: View<'a>,
    ) -> Result<Tracker<'a>, VisionError> {
        let mut t = Tracker::new(cfg, view);
        if cfg.kind == MarkerKind::Template {
            t.templates = Some(crate::template::Templates::new(cfg.templates.clone()));
        }
        if let MarkerKind::Fiducial { dictionary, .. } = cfg.kind {
            t.fiducials = Some(crate::fiducial::Fiducials::new(
                dictionary,
                cfg.codes.clone(),
            )?);
        }
        Ok(t)
    }

    /// A frame of template markers: each feature followed from its click.
    pub(super) fn template_frame(&mut self, frame: &Mat) -> Result<Option<()>, VisionError> {
        let k = self.per_frame.len();
        let nm = self.nm;
        let Some(t) = &mut self.templates else {
            return Ok(None);
        };
        let found = t.frame(k, frame, nm)?;
        let n = found.iter().filter(|b| b.is_some()).count();
        *self.counts.entry(n).or_default() += 1;
        self.lock_when_all(k, &found);
        self.correct(frame, k, &found)?;
        if self.lock.is_some() {
            self.summary.gaps += nm - n;
        }
        self.per_frame.push(found);
        Ok(Some(()))
    }

    /// The lock (for markers found by their identity: fiducials, templates) in the first frame
    /// where every marker is found.
    pub(super) fn lock_when_all(&mut self, k: usize, found: &[Option<Blob>]) {
        if self.lock.is_some() || found.iter().any(Option::is_none) {
            return;
        }
        // The gate of a marker sought again (the user's corrections): the markers' spacing.
        let at: Vec<(f64, f64)> = found.iter().flatten().map(|b| (b.u, b.v)).collect();
        let spacing = at
            .iter()
            .enumerate()
            .flat_map(|(i, a)| {
                at[i + 1..]
                    .iter()
                    .map(move |b| (a.0 - b.0).hypot(a.1 - b.1))
            })
            .fold(f64::INFINITY, f64::min);
        self.lock = Some(Lock {
            spacing,
            line: None,
        });
        self.summary.lock_frame = k;
    }

    /// A frame of fiducial markers: each found by its code.
    pub(super) fn fiducial_frame(&mut self, frame: &Mat) -> Result<Option<()>, VisionError> {
        let Some(f) = &self.fiducials else {
            return Ok(None);
        };
        let k = self.per_frame.len();
        let (found, others) = f.detect(frame)?;
        self.summary.rejected_blobs += others;
        let n = found.iter().filter(|b| b.is_some()).count();
        *self.counts.entry(n).or_default() += 1;
        if n == 0 && self.unfound.is_none() {
            self.unfound = Some(cv("clone", frame.try_clone())?);
        }
        self.lock_when_all(k, &found);
        self.correct(frame, k, &found)?;
        if self.lock.is_some() {
            self.summary.gaps += self.nm - n;
        }
        self.per_frame.push(found);
        Ok(Some(()))
    }

    /// The markers' predictions in the next frame (`assign::predict`); None before the lock.
    pub(super) fn predictions(&self) -> Option<Vec<Option<Prediction>>> {
        let lock = self.lock.as_ref()?;
        let prev1 = self.per_frame.last()?;
        let k = self.per_frame.len();
        let prev2 = k.checked_sub(2).and_then(|i| self.per_frame.get(i));
        let layout = self.cfg.layout.as_ref();
        Some(predict(lock, layout, self.view, prev1, prev2, &self.scale2))
    }

    /// One frame: once locked, every marker in a small window about its prediction, except
    /// one frame in WINDOW_CHECK_EVERY, which goes through the lever-neighbourhood search so
    /// that extra discs on the lever's line are still counted; else a search for blobs, then
    /// the lock or the assignment to the markers.
    pub(super) fn frame(&mut self, frame: &Mat) -> Result<(), VisionError> {
        if self.fiducial_frame(frame)?.is_some() || self.template_frame(frame)?.is_some() {
            return Ok(());
        }
        let k = self.per_frame.len();
        let preds = self.predictions();
        let assigned = match self.in_windows(frame, preds.as_deref())? {
            Some(a) => a,
            None => {
                let (blobs, rejected) = self.search(frame)?;
                self.summary.rejected_blobs += rejected;
                *self.counts.entry(blobs.len()).or_default() += 1;
                let a = self.assign(&blobs, preds.as_deref());
                if let (Some(lock), true) = (&self.lock, preds.is_some()) {
                    if let Some(params) = &lock.line {
                        if extra_on_line(&blobs, &a, params) > 0 {
                            self.extra_frames += 1;
                        }
                    }
                    self.searched_frames += 1;
                }
                a
            }
        };
        let mut assigned = assigned;
        if let Some(preds) = &preds {
            self.outline_gaps(frame, preds, &mut assigned)?;
        }
        if matches!(self.cfg.kind, MarkerKind::Colour { .. }) {
            self.summary.luma_refined +=
                crate::luma::refine_on_luma(frame, &mut assigned, &mut self.window_buf.grey)?;
        }
        self.correct(frame, k, &assigned)?;
        if let Some(preds) = &preds {
            self.summary.gaps += assigned.iter().filter(|a| a.is_none()).count();
            self.learn(preds, &assigned);
        }
        self.per_frame.push(assigned);
        Ok(())
    }

    /// The fast path of a locked frame (`follow_in_windows`), except one frame in
    /// [`WINDOW_CHECK_EVERY`]; None when the frame needs a search.
    pub(super) fn in_windows(
        &mut self,
        frame: &Mat,
        preds: Option<&[Option<Prediction>]>,
    ) -> Result<Option<Vec<Option<Blob>>>, VisionError> {
        let k = self.per_frame.len();
        let (Some(preds), Some(prev1)) = (preds, self.per_frame.last()) else {
            return Ok(None);
        };
        if k.is_multiple_of(WINDOW_CHECK_EVERY) {
            return Ok(None);
        }
        let prev2 = k.checked_sub(2).and_then(|i| self.per_frame.get(i));
        let found = follow_in_windows(frame, prev1, prev2, preds, self.cfg, &mut self.window_buf)?;
        Ok(found.map(|(assigned, rejected)| {
            self.summary.rejected_blobs += rejected;
            *self.counts.entry(self.nm).or_default() += 1;
            self.summary.window_frames += 1;
            assigned
        }))
    }

    /// Frame `k`'s samples as the user's corrections set them (`corrections::apply`; a marker
    /// sought again by the one disc-like blob in its window), kept aside: the tracker follows
    /// its own samples, and the corrected ones replace them once the video is tracked
    /// ([`Tracker::corrected_frames`]), so that an entry means the same whatever the tracker did
    /// in the frames before.
    pub(super) fn correct(
        &mut self,
        frame: &Mat,
        k: usize,
        assigned: &[Option<Blob>],
    ) -> Result<(), VisionError> {
        let entries = &self.cfg.corrections;
        if !entries.iter().any(|c| c.covers(k)) {
            return Ok(());
        }
        let mut failure = None;
        let mut fixed = assigned.to_vec();
        let touched = crate::corrections::apply(entries, k, &mut fixed, |w| {
            match seek_in(frame, w, self.cfg) {
                Ok(b) => b,
                Err(e) => {
                    failure = Some(e);
                    None
                }
            }
        });
        if let Some(e) = failure {
            return Err(e);
        }
        for m in touched {
            self.corrected.insert((k, m), fixed[m]);
        }
        Ok(())
    }

    /// The frames' samples with the user's corrections in place; the samples corrected.
    pub(super) fn corrected_frames(&mut self) -> std::collections::BTreeSet<(usize, usize)> {
        for (&(k, m), b) in &self.corrected {
            self.per_frame[k][m] = *b;
        }
        self.corrected.keys().copied().collect()
    }

    /// The running mean square of the constant-velocity predictions' errors updated by a
    /// frame's assignment (weight 0.1; per axis: half the squared distance).
    pub(super) fn learn(&mut self, preds: &[Option<Prediction>], assigned: &[Option<Blob>]) {
        let k = self.per_frame.len();
        let Some(prev2) = k.checked_sub(2).and_then(|i| self.per_frame.get(i)) else {
            return;
        };
        let prev1 = &self.per_frame[k - 1];
        for m in 0..self.nm {
            if let (Some(p), Some(b), Some(_), Some(_)) =
                (preds[m], assigned[m], prev1[m], prev2[m])
            {
                let d2 = (b.u - p.u).powi(2) + (b.v - p.v).powi(2);
                self.scale2[m] = 0.9 * self.scale2[m] + 0.1 * 0.5 * d2;
            }
        }
    }

    /// The blobs of a frame (and those rejected by shape). Once locked, only the lever's
    /// neighbourhood is searched: the box of the markers' predicted places widened by the gate
    /// and one marker spacing (the whole frame again when the markers were lost).
    pub(super) fn search(&mut self, frame: &Mat) -> Result<(Vec<Blob>, usize), VisionError> {
        let cfg = self.cfg;
        let region = match (&self.lock, self.per_frame.last()) {
            (Some(lock), Some(last)) => search_box(
                last,
                self.per_frame
                    .len()
                    .checked_sub(2)
                    .and_then(|i| self.per_frame.get(i)),
                lock.spacing,
                frame.cols(),
                frame.rows(),
            ),
            _ => None,
        };
        let (mut blobs, rejected) = match region {
            Some(rect) => {
                let view = cv("roi", Mat::roi(frame, rect))?;
                let sub = if frame.channels() == 1 {
                    cv("roi", view.try_clone())?
                } else {
                    self.grey_of(&view)?
                };
                find_blobs(&sub, cfg)?
            }
            None => {
                let full = if frame.channels() == 1 {
                    cv("clone", frame.try_clone())?
                } else {
                    self.grey_of(frame)?
                };
                return find_blobs(&full, cfg);
            }
        };
        if let Some(rect) = region {
            for x in &mut blobs {
                x.u += rect.x as f64;
                x.v += rect.y as f64;
            }
        }
        Ok((blobs, rejected))
    }

    /// A colour image (or a view of one) in grey, through the tracker's buffer; coloured
    /// markers keep the colour (`find_blobs` takes their response).
    pub(super) fn grey_of(
        &mut self,
        src: &(impl opencv::core::ToInputArray + MatTraitConst),
    ) -> Result<Mat, VisionError> {
        if matches!(self.cfg.kind, MarkerKind::Colour { .. }) {
            return cv("clone", src.try_clone());
        }
        cv(
            "cvtColor",
            opencv::imgproc::cvt_color(src, &mut self.grey, opencv::imgproc::COLOR_BGR2GRAY, 0),
        )?;
        Ok(std::mem::take(&mut self.grey))
    }

    /// The searched blobs assigned to the markers: the lock when not yet locked (or nothing),
    /// else by the markers' predictions, a body of the layout lost sought again.
    pub(super) fn assign(
        &mut self,
        blobs: &[Blob],
        preds: Option<&[Option<Prediction>]>,
    ) -> Vec<Option<Blob>> {
        let nm = self.nm;
        match (&self.lock, preds) {
            (Some(lock), Some(preds)) => {
                let (mut a, mut extra) = follow(blobs, lock, preds);
                if let Some(layout) = &self.cfg.layout {
                    extra -= research(layout, blobs, &mut a, self.view);
                }
                self.summary.rejected_blobs += extra;
                a
            }
            _ => match self.lock_on(blobs) {
                Some((order, lock)) => {
                    self.scale2 = vec![(lock.spacing / 8.0).powi(2); nm];
                    self.lock = Some(lock);
                    self.summary.lock_frame = self.per_frame.len();
                    self.summary.rejected_blobs += blobs.len() - nm;
                    order.into_iter().map(|i| Some(blobs[i])).collect()
                }
                None => vec![None; nm],
            },
        }
    }

    /// The lock in this frame: by the layout when there is one (why not, counted), else in a
    /// line.
    pub(super) fn lock_on(&mut self, blobs: &[Blob]) -> Option<(Vec<usize>, Lock)> {
        let Some(layout) = &self.cfg.layout else {
            return lock_in_line(blobs, self.nm, self.view);
        };
        match lock_by_layout(blobs, layout, self.nm, self.view) {
            Ok(found) => Some(found),
            Err((body, why)) => {
                let why = match why {
                    NotFound::NoPose => "not found",
                    NotFound::Ambiguous => "ambiguous",
                };
                *self.not_found.entry((body, why.into())).or_default() += 1;
                None
            }
        }
    }

    /// Every tracked sample tested (`flags`), the counts written into `summary`.
    pub(super) fn flags(&mut self, summary: &mut TrackSummary) -> Flags {
        let cfg = self.cfg;
        let corrected = self.corrected_frames();
        let layout = cfg.layout.as_ref();
        let flags = crate::flags::test_samples(
            &self.per_frame,
            &cfg.markers,
            layout,
            self.view,
            cfg.alpha,
            &corrected,
        );
        summary.flagged = flags.samples().len();
        summary.corrected = corrected.len();
        summary.flags_by_reason = flags.counts().into_iter().filter(|c| c.1 > 0).collect();
        flags
    }

    /// Why fiducial markers were never all found in one frame (None when they were, or the
    /// markers are no fiducials): the dictionary the video's codes are of, when another.
    pub(super) fn fiducials_missing(&self) -> Result<Option<String>, VisionError> {
        let (Some(_), MarkerKind::Fiducial { dictionary, .. }) = (&self.fiducials, self.cfg.kind)
        else {
            return Ok(None);
        };
        if self.lock.is_some() {
            return Ok(None);
        }
        let name = flexbench_contracts::FIDUCIAL_DICTIONARIES
            .iter()
            .find(|(_, d)| *d == dictionary)
            .map_or("?", |(n, _)| n);
        let ids: Vec<String> = self.cfg.codes.iter().map(u32::to_string).collect();
        let shown = match &self.unfound {
            Some(f) => crate::fiducial::dictionary_in(f)?,
            None => None,
        };
        let hint = match shown {
            Some((other, n)) if other != name => format!(
                "; the video's codes are of dictionary {other} ({n} in the first frame without a marker): give dictionary = \"{other}\" in the mechanism file"
            ),
            _ => "; check each marker's dictionary and id in the mechanism file, and that the squares are sharp and whole in the frames".into(),
        };
        Ok(Some(format!(
            "the fiducials of dictionary {name} with ids {} were never all found in one frame{hint}",
            ids.join(", ")
        )))
    }

    /// An error when the markers were never found, or (a lock in a line) when more
    /// marker-like blobs lie on the lever's line than markers named (the count is wrong: a
    /// lock taken while a marker was hidden would otherwise name the markers wrongly).
    pub(super) fn check_lock(&self, p: &str) -> Result<(), VisionError> {
        if let (Some(t), None) = (&self.templates, &self.lock) {
            let lost: Vec<String> = self
                .cfg
                .templates
                .iter()
                .zip(&t.lost)
                .map(|(c, n)| format!("{} lost in {n} frame(s)", self.cfg.markers[c.marker]))
                .collect();
            return Err(VisionError::Tracking {
                path: p.into(),
                reason: format!(
                    "the clicked features were never all followed in one frame ({}): click each feature where it is seen, in a frame the video has, with a half-size that holds the feature and a little of what surrounds it",
                    lost.join(", ")
                ),
            });
        }
        if let Some(missing) = self.fiducials_missing()? {
            return Err(VisionError::Tracking {
                path: p.into(),
                reason: missing,
            });
        }
        let nm = self.nm;
        let Some(lock) = &self.lock else {
            let seen: Vec<String> = self
                .counts
                .iter()
                .map(|(n, f)| format!("{n} blob(s) in {f} frame(s)"))
                .collect();
            let reason = if self.cfg.layout.is_some() {
                let why: Vec<String> = self
                    .not_found
                    .iter()
                    .map(|((body, why), f)| format!("the {body}'s markers {why} in {f} frame(s)"))
                    .collect();
                format!(
                    "the markers were never all found where the mechanism places them: {}; {}; check the mechanism's markers (their places on their bodies), the calibration's bench plane, and the threshold",
                    why.join(", "),
                    seen.join(", ")
                )
            } else {
                format!(
                    "the {nm} markers were never found in a line: {}; check the marker count (--markers), the threshold, and that the markers are bright on a darker lever",
                    seen.join(", ")
                )
            };
            return Err(VisionError::Tracking {
                path: p.into(),
                reason,
            });
        };
        let (extra, searched) = (self.extra_frames, self.searched_frames);
        if lock.line.is_some() && extra * 10 > searched {
            return Err(VisionError::Tracking {
                path: p.into(),
                reason: format!(
                    "more bright discs lie on the lever's line than the {nm} markers named, in {extra} of {searched} frames searched; name every marker with --markers (e.g. M1,M2,M3,M4,M5)"
                ),
            });
        }
        Ok(())
    }
}

/// The tracks' rows (each detection undistorted and taken to the bench plane, m) and the
/// detections' centre sigmas (px). Consumed frame by frame: a long recording's detections are
/// not held twice.
pub(super) fn bench_rows(
    per_frame: Vec<Vec<Option<Blob>>>,
    times: &[f64],
    cal: &Calibration,
    plane: &crate::camera::BenchPlane,
    cfg: &TrackConfig,
) -> (Vec<TrackRow>, Vec<f64>) {
    let mut rows = Vec::with_capacity(per_frame.len() * cfg.markers.len());
    let mut sigmas = Vec::new();
    // The camera's centre, for markers off the plane (checked by `check_depths`).
    let centre = plane.camera_centre();
    let depth = |m: usize| cfg.depths.get(m).copied().unwrap_or(0.0);
    for (k, assigned) in per_frame.into_iter().enumerate() {
        for (m, a) in assigned.into_iter().enumerate() {
            if let Some(b) = a {
                let mut xy = plane.pixel_to_bench(&cal.intrinsics, b.u, b.v);
                if let (d, Some(c)) = (depth(m), centre) {
                    if d != 0.0 {
                        xy = crate::camera::toward_camera(&c, xy, d).unwrap_or(xy);
                    }
                }
                let (x, y) = xy;
                sigmas.push(b.sigma);
                rows.push(TrackRow {
                    frame: k as i64,
                    t: times[k],
                    marker: cfg.markers[m].clone(),
                    u: Some(b.u),
                    v: Some(b.v),
                    x: Some(x),
                    y: Some(y),
                    sigma_px: Some(b.sigma),
                    late: None,
                });
            }
        }
    }
    (rows, sigmas)
}
