//! The unit of every column of the tables the stages write, for the files that carry units
//! (the Excel workbook's units row, the MATLAB file's `units` fields): SI in the bench frame
//! unless the column says otherwise, pixels for the image coordinates.

/// The unit of column `column` of the table `table` (its stem: `tracks`, `markers`, `bodies`,
/// `forces`, `fit_residuals`, `modal`, `deflection`, `comparison`, `markers.rigid`, ...): "m",
/// "m/s", "N m", "px", "-" for a plain number, "" for text; None for a column this module does
/// not know (a table of another version).
pub fn unit_of(table: &str, column: &str) -> Option<&'static str> {
    let base = column.strip_suffix("_sigma").unwrap_or(column);
    let text = [
        "marker",
        "body",
        "reason",
        "kind",
        "provenance",
        "quantity",
        "unit",
        "source",
    ];
    if text.contains(&base) {
        return Some("");
    }
    // Columns whose meaning depends on the table.
    match (table, base) {
        ("tracks", "u" | "v") | ("tracks", "sigma_px") => return Some("px"),
        ("tracks", "delay_s") => return Some("s"),
        ("tracks", "x_seen" | "y_seen") => return Some("m"),
        ("deflection", "x_lever" | "u" | "v") => return Some("m"),
        ("deflection", b) if b.starts_with("v_") => return Some("m"),
        ("modal", "crank_angle") => return Some("rad"),
        ("comparison", b) if b.ends_with("_deg") => return Some("deg"),
        // The comparison's errors and peaks are in each row's own unit (its `unit` column).
        (
            "comparison",
            "rms_error" | "rms_error_after_lag" | "simulated_peak" | "measured_peak",
        ) => return Some("(row's unit)"),
        _ => {}
    }
    Some(match base {
        "t" => "s",
        "frame" | "mode" | "score" | "chi2_dof" | "nrmse" | "damping_ratio" => "-",
        "x" | "y" | "rx" | "ry" => "m",
        "vx" | "vy" => "m/s",
        "ax" | "ay" | "a_normal" => "m/s^2",
        "phi" => "rad",
        "omega" => "rad/s",
        "epsilon" => "rad/s^2",
        "freq_hz" | "full_freq_hz" => "Hz",
        "motor_torque" | "slide_moment" => "N m",
        "pump_force" | "slide_normal" => "N",
        b if is_joint_component(b) => "N",
        _ => return None,
    })
}

/// A joint's force component column: `<joint>_x` or `<joint>_y` (the joint's name a letter or
/// two: A, B, C, D, ...).
fn is_joint_component(column: &str) -> bool {
    column
        .strip_suffix("_x")
        .or_else(|| column.strip_suffix("_y"))
        .is_some_and(|j| {
            !j.is_empty() && j.len() <= 3 && j.chars().all(|c| c.is_ascii_alphanumeric())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every column of the contract tables has its unit, the image and lever coordinates
    /// theirs, the sigma columns their base's; an unknown column has none.
    #[test]
    fn units_of_the_contract_tables() {
        for c in crate::MARKER_KEYS
            .iter()
            .chain(&crate::MARKER_COLUMNS)
            .chain(&crate::BODY_KEYS)
            .chain(&crate::BODY_COLUMNS)
        {
            assert!(unit_of("markers", c).is_some(), "{c}");
            assert!(unit_of("bodies", c).is_some(), "{c}");
        }
        assert_eq!(unit_of("tracks", "u"), Some("px"));
        assert_eq!(unit_of("tracks", "delay_s"), Some("s"));
        assert_eq!(unit_of("tracks", "y_seen"), Some("m"));
        assert_eq!(unit_of("deflection", "u"), Some("m"));
        assert_eq!(unit_of("markers", "ax_sigma"), Some("m/s^2"));
        assert_eq!(unit_of("forces", "B_x"), Some("N"));
        assert_eq!(unit_of("forces", "motor_torque_sigma"), Some("N m"));
        assert_eq!(unit_of("markers", "provenance"), Some(""));
        assert_eq!(unit_of("forces", "mystery"), None);
    }
}
