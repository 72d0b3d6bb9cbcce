//! What a video file says of its camera's lens: the focal length some phones write into the
//! container's metadata as its 35 mm equivalent (Apple's
//! `com.apple.quicktime.camera.focal_length.35mm_equivalent`; any tag whose name holds
//! `focal_length` and `35mm`), read with `ffprobe`. A 35 mm equivalent focal length f35 is the
//! focal length that gives a 36 x 24 mm frame (diagonal 43.27 mm) the same field of view along
//! the diagonal, so in pixels f = f35 sqrt(W^2 + H^2) / 43.27 for a W x H frame (square pixels,
//! the whole sensor filmed: a cropped or stabilised video has a narrower field than its tag
//! says).

use std::path::Path;

use crate::VisionError;

/// The diagonal of the 35 mm film frame (36 x 24 mm), mm.
pub const DIAGONAL_35MM: f64 = 43.266_615_305_567_87;

/// A focal length tag found in a video's metadata: the tag's name and its value (mm, 35 mm
/// equivalent).
#[derive(Debug, Clone, PartialEq)]
pub struct FocalTag {
    /// The tag's name.
    pub key: String,
    /// The focal length, mm in 35 mm equivalent.
    pub mm_35: f64,
}

impl FocalTag {
    /// The focal length in pixels for frames of `width` x `height` px.
    pub fn focal_px(&self, width: i32, height: i32) -> f64 {
        self.mm_35 * (width as f64).hypot(height as f64) / DIAGONAL_35MM
    }
}

/// The 35 mm equivalent focal length tag of the video at `path`; None when it has none or
/// ffprobe is not installed.
pub fn focal_tag(path: &Path) -> Result<Option<FocalTag>, VisionError> {
    let args = ["-show_entries", "format_tags:stream_tags"];
    let out = crate::timebase::ffprobe(path, &args, "its metadata")?;
    Ok(out.and_then(|o| tag_in(&String::from_utf8_lossy(&o))))
}

/// The first 35 mm equivalent focal length tag in ffprobe's JSON answer.
fn tag_in(json: &str) -> Option<FocalTag> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let mut tags = Vec::new();
    if let Some(t) = v.pointer("/format/tags").and_then(|t| t.as_object()) {
        tags.extend(t.iter());
    }
    for s in v
        .get("streams")
        .and_then(|s| s.as_array())
        .into_iter()
        .flatten()
    {
        if let Some(t) = s.get("tags").and_then(|t| t.as_object()) {
            tags.extend(t.iter());
        }
    }
    tags.into_iter().find_map(|(k, val)| {
        let key = k.to_ascii_lowercase();
        if !(key.contains("focal_length") && key.contains("35mm")) {
            return None;
        }
        let mm: f64 = val.as_str()?.trim().parse().ok()?;
        (mm.is_finite() && mm > 0.0).then(|| FocalTag {
            key: k.clone(),
            mm_35: mm,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phones_focal_length_tag_in_pixels() {
        let json = r#"{"streams": [{"tags": {"language": "und"}}],
            "format": {"tags": {"com.apple.quicktime.camera.focal_length.35mm_equivalent": "26"}}}"#;
        let t = tag_in(json).unwrap();
        assert_eq!(t.mm_35, 26.0);
        // 26 mm on a 1920 x 1080 frame: 2202.9 px along the diagonal over 43.27 mm.
        assert!((t.focal_px(1920, 1080) - 26.0 * 2202.907170 / DIAGONAL_35MM).abs() < 1e-3);
        assert!(
            (t.focal_px(1920, 1080) - 1323.78).abs() < 0.01,
            "{}",
            t.focal_px(1920, 1080)
        );
        assert!(tag_in(r#"{"format": {"tags": {"encoder": "Lavf"}}}"#).is_none());
        assert!(tag_in(r#"{"format": {"tags": {"x.focal_length.35mm": "-3"}}}"#).is_none());
    }
}
