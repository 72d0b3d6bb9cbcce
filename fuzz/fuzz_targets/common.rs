//! Shared by the fuzz targets: the input bytes written to a scratch file of this process with
//! the extension the reader dispatches on (the readers take paths, as the command line does).

use std::path::PathBuf;

/// Write `data` to `/tmp/flexbench-fuzz-<pid>-<k>.<ext>` (k counts the inputs) and return the path.
pub fn scratch(data: &[u8], ext: &str) -> PathBuf {
    // A fresh name per input: a reader must not see an earlier input at the same path.
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let k = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = std::env::temp_dir().join(format!("flexbench-fuzz-{}-{k}.{ext}", std::process::id()));
    let _ = std::fs::remove_file(std::env::temp_dir().join(format!(
        "flexbench-fuzz-{}-{}.{ext}",
        std::process::id(),
        k.wrapping_sub(1)
    )));
    std::fs::write(&p, data).expect("the scratch file can be written");
    p
}
