//! `flexbench identify`: the mechanism file's uncertain numbers from a processed recording
//! ([`flexbench_pipeline::job::IdentifyJob`]).

use std::path::PathBuf;

use anyhow::{Context, Result};
use flexbench_pipeline::identify::IdentifySpec;
use flexbench_pipeline::job::{IdentifyInputs, IdentifyJob, Job};

/// Arguments of `flexbench identify`.
#[derive(clap::Args)]
pub struct IdentifyArgs {
    /// Directory written by `process` (its bodies table is read).
    #[arg(long)]
    processed: PathBuf,
    /// The mechanism file the recording was processed with (never changed: the identified
    /// file is written into --out).
    #[arg(long)]
    mechanism: PathBuf,
    /// The file's numbers to identify, by key, comma-separated (k,mw,Fr;
    /// bodies.pendulum.inertia; joints.axle.friction.viscous).
    #[arg(long, value_delimiter = ',', required = true)]
    free: Vec<String>,
    /// The rig's measured torques or forces, held against the solved ones.
    #[command(flatten)]
    measured: crate::measured::MeasuredArgs,
    /// Low-pass both sides of every equation at this frequency before the fit (zero-lag
    /// Butterworth, fourth order), Hz [default: 20, or a quarter of the sampling rate if lower].
    #[arg(long, conflicts_with = "unfiltered")]
    cutoff: Option<f64>,
    /// Fit the equations as they are, not low-passed.
    #[arg(long)]
    unfiltered: bool,
    /// Hold each measured column's offset at zero instead of identifying it.
    #[arg(long)]
    no_offset: bool,
    /// Replicates of the parametric bootstrap: the bench simulated with the identified values
    /// at the recording's speed, its markers given the process stage's noise, processed (with
    /// the pipeline file's [process] defaults) and identified again; the estimates corrected by
    /// the processing's bias, their standard deviations its spread as well [default: 10 where
    /// the mechanism has a motor-driven crank and no measured table is given; 0: none].
    #[arg(long)]
    bootstrap: Option<usize>,
    /// The bootstrap's first noise seed.
    #[arg(long, default_value_t = flexbench_pipeline::identify::DEFAULT_SEED)]
    seed: u64,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
}

/// What to identify, from the flags: the same type the Python function reads its keywords
/// into.
pub(crate) fn spec(args: &IdentifyArgs) -> Result<IdentifySpec> {
    let m = &args.measured;
    Ok(IdentifySpec {
        free: args.free.clone(),
        free_offset: !args.no_offset,
        measured_columns: m.columns()?,
        measured_time: m.measured_time.clone(),
        measured_offset_s: m.measured_offset,
        measured_cutoff_hz: m.measured_cutoff,
        cutoff_hz: args.cutoff,
        unfiltered: args.unfiltered,
        bootstrap: args.bootstrap,
        seed: args.seed,
    })
}

/// `flexbench identify`: the estimates, what the recording does not determine, the fits.
pub fn identify_command(args: IdentifyArgs) -> Result<()> {
    let spec = spec(&args)?;
    // The recording processed again, and the bootstrap's replicates, with the pipeline file's
    // [process] defaults.
    let process = flexbench_pipeline::pipeline_file::ProcessSection::default();
    let inputs = IdentifyInputs {
        processed: &args.processed,
        mechanism: &args.mechanism,
        measured: args.measured.measured.as_deref(),
        process: &process,
    };
    let pb = crate::bar();
    let made = IdentifyJob::run(&spec, &inputs, &args.out, &mut crate::on_bar(&pb)).with_context(
        || {
            format!(
                "identifying {} from {}",
                args.mechanism.display(),
                args.processed.display()
            )
        },
    )?;
    pb.finish_and_clear();
    let (record, files) = (made.record, made.files);
    print_identification(&record);
    if let Some(b) = &record.bootstrap {
        print_bootstrap(b);
    }
    if let Some(f) = &record.frame {
        println!(
            "the bench frame's uncertainty (the calibration's, {} directions) is in the standard deviations above:",
            f.directions
        );
        for e in &f.estimates {
            println!("{:32} its share {:.3e}", e.key, e.sigma);
        }
    }
    if let Some(h) = &record.held {
        print_held(h);
    }
    crate::print_written(&files);
    Ok(())
}

/// The held numbers' share of the standard deviations: the numbers, and each estimate's share
/// with the number that moves it most.
fn print_held(h: &flexbench_pipeline::identify_held::HeldShare) {
    let numbers: Vec<String> = h
        .numbers
        .iter()
        .map(|n| format!("{} {:.4e} +- {:.3e}", n.key, n.value, n.sigma))
        .collect();
    println!(
        "the file's tolerances on the numbers held ({}) are in the standard deviations above:",
        numbers.join(", ")
    );
    for e in &h.estimates {
        let most = flexbench_pipeline::identify_held::largest(h, &e.key)
            .map_or(String::new(), |(k, d)| format!(" (most: {k}, {d:+.3e})"));
        println!("{:32} its share {:.3e}{most}", e.key, e.sigma);
    }
}

/// Each estimate with its standard deviation and change from the file, or why it was held.
fn print_estimates(estimates: &[flexbench_pipeline::identify::Estimate]) {
    for e in estimates {
        let change = match e.file_value {
            0.0 => String::new(),
            v => format!(", {:+.2} %", 100.0 * (e.value - v) / v.abs()),
        };
        match e.sigma {
            Some(s) => println!(
                "{:32} {:>14.6e} +- {:.3e}   (file {:.6e}{change})",
                e.key, e.value, s, e.file_value
            ),
            None => println!(
                "{:32} held at {:.6e}: {}",
                e.key,
                e.value,
                e.why_not.as_deref().unwrap_or("not determined")
            ),
        }
    }
}

/// The bootstrap's replicates and each number's bias and spread.
fn print_bootstrap(b: &flexbench_pipeline::identify_bootstrap::BootstrapRecord) {
    println!(
        "bootstrap: {} replicates of the bench at {:.4} rad/s ({:.4} recorded), the markers' errors {}; the values above are corrected by it:",
        b.replicates, b.simulated_speed_rad_s, b.crank_speed_rad_s, b.noise
    );
    for e in &b.estimates {
        let refused = match &e.refused {
            Some(_) => " (not corrected: the file refuses the corrected value)",
            None => "",
        };
        println!(
            "{:32} identified {:.6e}, bias {:+.3e}, replicates' sigma {:.3e}, residuals' {:.3e}{refused}",
            e.key, e.identified, e.bias, e.replicates_sigma, e.residuals_sigma
        );
    }
}

/// The identification on the terminal (its warnings are told as the job goes): its rank and
/// condition, the estimates, the
/// bodies' inertial parameters that moved, each equation's fit.
fn print_identification(record: &flexbench_pipeline::identify::IdentifyRecord) {
    let id = &record.identification;
    println!(
        "identified from {} samples ({}): rank {} of {} unknowns, condition {:.3e}, {} iterations",
        record.samples,
        match record.cutoff_hz {
            Some(hz) => format!("the equations low-passed at {hz} Hz"),
            None => "the equations unfiltered".into(),
        },
        id.rank,
        id.unknowns,
        id.condition,
        id.iterations
    );
    print_estimates(&id.estimates);
    for b in id.bodies.iter().filter(|b| b.file != b.identified) {
        let names = ["m (kg)", "m c_x (kg m)", "m c_y (kg m)", "I_O (kg m^2)"];
        let parts: Vec<String> = (0..4)
            .filter(|&k| b.file[k] != b.identified[k])
            .map(|k| {
                format!(
                    "{} {:.5} +- {:.5} (file {:.5})",
                    names[k], b.identified[k], b.sigma[k], b.file[k]
                )
            })
            .collect();
        println!("{:10} about its origin: {}", b.body, parts.join(", "));
    }
    for f in &id.equations {
        println!(
            "{:32} RMS residual {:.4e} -> {:.4e} over {} samples",
            f.name, f.rms_before, f.rms_after, f.samples
        );
    }
}
