//! The review pages in headless Chromium, with real clicks through the DevTools protocol
//! (`common::cdp`): the clicks page of the shipped plane view gives back the shipped clicks.toml
//! when A and the horizontal are clicked where the rendering put them; the review page of the
//! nuisance recording's flagged samples turns a drop, a click on a marker's true centre and an
//! acceptance into the corrections.toml expected, which `track --corrections` then applies; and
//! with every flagged sample clicked at its true centre, the forces stay within 3 % of their peaks.
//! Screenshots of both pages are taken (into docs/ when FLEXBENCH_DOCS_SCREENSHOTS is set).

use crate::common;

use std::path::Path;

use common::cdp::{crop_click, downloaded, Browser};
use common::{num, ok, read_csv, root};

/// Keep a screenshot in docs/ when asked (`FLEXBENCH_DOCS_SCREENSHOTS=1`).
fn keep(shot: &Path, name: &str) {
    if std::env::var_os("FLEXBENCH_DOCS_SCREENSHOTS").is_some() {
        std::fs::copy(shot, root().join("docs").join(name)).unwrap();
    }
}

/// The zoom's offset (CSS px) of pixel coordinate `x` when the zoom is centred on the whole
/// pixel `c`: 10 CSS px per image pixel, 20 pixels each side, pixel centres at integers.
fn zoom_offset(x: f64, c: f64) -> f64 {
    (x + 0.5 - (c - 20.0)) * 10.0
}

#[test]
fn clicks_page_gives_the_clicked_pixels() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("clicks.html");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let image = root().join("recordings/default/plane-view.png");
    ok(&["clicks-page", "--image", &s(&image), "--out", &s(&page)]);
    let downloads = dir.path().join("downloads");
    std::fs::create_dir_all(&downloads).unwrap();
    let url = format!("file://{}", page.display());
    let mut b = Browser::open(&url, &dir.path().join("profile"), &downloads);
    // The rendering's clicks: A at (184, 197), the horizontal at (394.7, 203).
    for (button, (u, v)) in [
        ("#set-origin", (184.0, 197.0)),
        ("#set-horizontal", (394.7, 203.0)),
    ] {
        b.click(button);
        let (cu, cv) = (f64::floor(u), f64::floor(v));
        // Near it on the view (the pixel under the click centres the zoom), then exactly.
        b.click_in("#view", cu + 0.5, cv + 0.5);
        b.click_in(
            "#zoom",
            zoom_offset(u, cu).round(),
            zoom_offset(v, cv).round(),
        );
    }
    let shot = dir.path().join("clicks.png");
    b.screenshot(&shot);
    keep(&shot, "review-clicks.png");
    b.click("#download");
    let text = downloaded(&downloads.join("clicks.toml"));
    assert!(
        text.ends_with("origin = [184, 197]\nhorizontal = [394.7, 203]\n"),
        "{text}"
    );
    // Read back as calibrate reads the shipped file: the same pixels.
    // Read back as calibrate reads the shipped file: the same pixels (the shipped file also
    // states its clicks' sigma, the renderer's rounding; the page's clicks take the default).
    let page = flexbench_pipeline::calibrate::read_clicks(&downloads.join("clicks.toml")).unwrap();
    let shipped =
        flexbench_pipeline::calibrate::read_clicks(&root().join("recordings/default/clicks.toml"))
            .unwrap();
    assert_eq!(
        (page.origin, page.horizontal),
        (shipped.origin, shipped.horizontal)
    );
    assert_eq!(
        page.click_sigma_px,
        flexbench_pipeline::calibrate::CLICK_SIGMA_PX
    );
}

/// The nuisance recording tracked with the wind pump's layout and the rendering's camera into
/// `dir/track`, its overlay and review page drawn into `dir/overlay`, and the page open in
/// Chromium (downloads into `dir/downloads`); the arguments `track` needs again (video,
/// calibration, mechanism).
fn review_of_nuisances(dir: &Path) -> (Browser, [String; 3]) {
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let rec = root().join("recordings/nuisances");
    let (video, cal) = (s(&rec.join("video.mp4")), s(&rec.join("truth/camera.yaml")));
    let mech = s(&root().join("mechanisms/wind-pump.toml"));
    let tracks = dir.join("track/tracks.csv");
    #[rustfmt::skip]
    ok(&["track", "--video", &video, "--calibration", &cal, "--mechanism", &mech, "--out", &s(&tracks)]);
    let (flags, out) = (dir.join("track/flags.csv"), dir.join("overlay"));
    #[rustfmt::skip]
    ok(&["overlay", "--video", &video, "--calibration", &cal, "--tracks", &s(&tracks), "--flags", &s(&flags), "--mechanism", &mech, "--out", &s(&out)]);
    let downloads = dir.join("downloads");
    std::fs::create_dir_all(&downloads).unwrap();
    let url = format!("file://{}", out.join("review.html").display());
    let b = Browser::open(&url, &dir.join("profile"), &downloads);
    (b, [video, cal, mech])
}

#[test]
fn review_page_makes_the_corrections_clicked() {
    let dir = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let rec = root().join("recordings/nuisances");
    let (mut b, [video, cal, mech]) = review_of_nuisances(dir.path());
    let downloads = dir.path().join("downloads");
    let n = b.eval("S.length").as_u64().unwrap();
    assert!(n >= 3, "{n} flagged samples to review");
    let sample = |b: &mut Browser, k: usize| {
        let v = b.eval(&format!(
            "[S[{k}].frame, S[{k}].marker, S[{k}].x0, S[{k}].y0]"
        ));
        (
            v[0].as_u64().unwrap() as i64,
            v[1].as_str().unwrap().to_string(),
            v[2].as_f64().unwrap(),
            v[3].as_f64().unwrap(),
        )
    };
    let (f0, m0, ..) = sample(&mut b, 0);
    let (f1, m1, x1, y1) = sample(&mut b, 1);
    let (f2, m2, ..) = sample(&mut b, 2);
    // Sample 1 dropped; sample 2 clicked at its true centre (the rendering's truth); sample 3
    // accepted.
    b.click("#drop");
    b.wait_for("cv.getAttribute('data-index') === '1'");
    let truth = read_csv(&rec.join("truth/tracks.csv"));
    let (tu, tv) = (num(&truth, "u"), num(&truth, "v"));
    let j = (0..tu.len())
        .find(|&j| truth["frame"][j] == f1.to_string() && truth["marker"][j] == m1)
        .unwrap();
    let ((dx, dy), (mu, mv)) = crop_click(x1, y1, tu[j], tv[j]);
    b.click_in("#crop", dx, dy);
    b.wait_for("cv.getAttribute('data-index') === '2'");
    b.click("#accept");
    let shot = dir.path().join("review.png");
    b.screenshot(&shot);
    keep(&shot, "review-flags.png");
    b.click("#download");
    let text = downloaded(&downloads.join("corrections.toml"));
    let expected = format!(
        "\n[[drop]]\nmarker = \"{m0}\"\nframes = [{f0}, {f0}]\n\n[[move]]\nmarker = \"{m1}\"\nframes = [{f1}, {f1}]\nto = [{mu}, {mv}]\n"
    );
    assert!(
        text.ends_with(&expected),
        "{text}\nexpected the end:\n{expected}"
    );
    let accepted = format!("marker = \"{m2}\"\nframes = [{f2}, {f2}]");
    assert!(
        !text.contains(&accepted),
        "the accepted sample is not in the file:\n{text}"
    );
    assert!(
        (mu - tu[j]).abs() <= 0.11 && (mv - tv[j]).abs() <= 0.11,
        "clicked within a tenth of a pixel of the truth"
    );

    // The downloaded file, applied by track: the drop and the move where the page put them.
    let fixed = dir.path().join("fixed/tracks.csv");
    let file = downloads.join("corrections.toml");
    #[rustfmt::skip]
    ok(&["track", "--video", &video, "--calibration", &cal, "--mechanism", &mech, "--corrections", &s(&file), "--out", &s(&fixed)]);
    let t = read_csv(&fixed);
    let (u, v) = (num(&t, "u"), num(&t, "v"));
    let row = |f: i64, m: &str| {
        (0..u.len()).find(|&i| t["frame"][i] == f.to_string() && t["marker"][i] == m)
    };
    assert!(row(f0, &m0).is_none(), "dropped");
    let i = row(f1, &m1).expect("moved");
    assert_eq!((u[i], v[i]), (mu, mv));
}

/// Every flagged sample of the nuisance recording clicked at its true centre on the review page
/// (a user who sees the marker), the downloaded file applied by `track`, then `process`: the
/// forces at B and C' within the 3 % RMS of their peaks (2.4 % measured).
#[test]
fn forces_after_the_review_pages_corrections() {
    let dir = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let rec = root().join("recordings/nuisances");
    let (mut b, [video, cal, mech]) = review_of_nuisances(dir.path());
    let downloads = dir.path().join("downloads");
    let truth = read_csv(&rec.join("truth/tracks.csv"));
    let (tu, tv) = (num(&truth, "u"), num(&truth, "v"));
    let n = b.eval("S.length").as_u64().unwrap() as usize;
    for k in 0..n {
        let v = b.eval(&format!(
            "[S[{k}].frame, S[{k}].marker, S[{k}].x0, S[{k}].y0]"
        ));
        let (f, m) = (
            v[0].as_u64().unwrap().to_string(),
            v[1].as_str().unwrap().to_string(),
        );
        let (x0, y0) = (v[2].as_f64().unwrap(), v[3].as_f64().unwrap());
        let j = (0..tu.len())
            .find(|&j| truth["frame"][j] == f && truth["marker"][j] == m)
            .unwrap();
        let ((dx, dy), _) = crop_click(x0, y0, tu[j], tv[j]);
        b.click_in("#crop", dx, dy);
        if k + 1 < n {
            b.wait_for(&format!("cv.getAttribute('data-index') === '{}'", k + 1));
        }
    }
    b.click("#download");
    let file = downloads.join("corrections.toml");
    let text = downloaded(&file);
    assert_eq!(text.matches("[[move]]").count(), n, "every sample moved");
    let fixed = dir.path().join("fixed/tracks.csv");
    #[rustfmt::skip]
    ok(&["track", "--video", &video, "--calibration", &cal, "--mechanism", &mech, "--corrections", &s(&file), "--out", &s(&fixed)]);
    let processed = dir.path().join("process");
    #[rustfmt::skip]
    ok(&["process", "--tracks", &s(&fixed), "--flags", &s(&dir.path().join("fixed/flags.csv")), "--mechanism", &mech, "--out", &s(&processed), "--periodic", "--refine-horizontal"]);
    let (tf, pf) = (
        read_csv(&rec.join("truth/forces.csv")),
        read_csv(&processed.join("forces.csv")),
    );
    for joint in ["B", "C"] {
        let (rel, _) = common::force_error(&tf, &pf, joint);
        eprintln!(
            "after the review page's {n} corrections: {joint} {:.2} % RMS of its peak",
            100.0 * rel
        );
        assert!(rel < 0.03, "{joint}: {:.2} %", 100.0 * rel);
    }
}
