//! The measured table's flags, shared by `flexbench compare` and `flexbench identify`: the
//! same names, the same checks.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Result};

/// A table the rig measured on its own clock and how to read it.
#[derive(clap::Args)]
pub struct MeasuredArgs {
    /// A table the rig measured on its own clock (CSV or Parquet: a time column and columns
    /// named after the forces table's, e.g. motor_torque).
    #[arg(long)]
    pub measured: Option<PathBuf>,
    /// A measured column and the forces table's column it measures, COLUMN=FORCES_COLUMN
    /// (repeat for more); then only the mapped columns are read.
    #[arg(long = "measured-column", value_name = "COLUMN=FORCES_COLUMN")]
    pub measured_column: Vec<String>,
    /// The measured table's time column, s (default t, else time).
    #[arg(long)]
    pub measured_time: Option<String>,
    /// Added to the measured times to put them on the recording's clock, s.
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    pub measured_offset: f64,
    /// Low-pass the measured series at this frequency (zero-lag Butterworth, fourth order), Hz.
    #[arg(long)]
    pub measured_cutoff: Option<f64>,
}

impl MeasuredArgs {
    /// The measured columns mapped onto the forces table's (`--measured-column`); an error
    /// when a pair is malformed, or when a reading flag is given without `--measured`.
    pub fn columns(&self) -> Result<BTreeMap<String, String>> {
        let mut columns = BTreeMap::new();
        for pair in &self.measured_column {
            let Some((from, to)) = pair.split_once('=') else {
                bail!(
                    "--measured-column {pair}: give COLUMN=FORCES_COLUMN, e.g. torque=motor_torque"
                );
            };
            columns.insert(from.trim().to_string(), to.trim().to_string());
        }
        if self.measured.is_none()
            && (!columns.is_empty()
                || self.measured_cutoff.is_some()
                || self.measured_time.is_some())
        {
            bail!("--measured-column, --measured-time and --measured-cutoff read a measured table: give it with --measured");
        }
        Ok(columns)
    }
}
