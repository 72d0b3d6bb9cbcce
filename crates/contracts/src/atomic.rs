//! Writing files so that an earlier result is never lost: the content goes to a temporary file
//! beside the target, which is renamed over the target only once it is complete (a rename within
//! one directory is atomic on POSIX file systems). A failed or killed write leaves the earlier
//! file intact and at most a hidden temporary file, which is removed on error.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The temporary path used while writing `target`: hidden, in the same directory, keeping the
/// extension last (some writers, like image encoders, choose the format from it).
pub fn temporary_path(target: &Path) -> PathBuf {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let ext = target.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
    let tmp = format!(".{name}.partial-{}{ext}", std::process::id());
    target.with_file_name(tmp)
}

/// Write `target` through `fill`, atomically: the target is replaced only if `fill` succeeds.
pub fn write_with<E>(
    target: &Path,
    fill: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(), AtomicError<E>> {
    let tmp = temporary_path(target);
    if let Err(e) = fill(&tmp) {
        let _ = fs::remove_file(&tmp);
        return Err(AtomicError::Fill(e));
    }
    // Flush the data to disk before the rename makes it visible.
    if let Ok(f) = fs::File::open(&tmp) {
        let _ = f.sync_all();
    }
    fs::rename(&tmp, target).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        AtomicError::Io(target.to_path_buf(), e)
    })
}

/// Write bytes to `target` atomically.
pub fn write_bytes(target: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with(target, |tmp| -> io::Result<()> {
        let mut f = fs::File::create(tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
    })
    .map_err(|e| match e {
        AtomicError::Fill(e) => io::Error::new(e.kind(), format!("{}: {e}", target.display())),
        AtomicError::Io(_, e) => io::Error::new(e.kind(), format!("{}: {e}", target.display())),
    })
}

/// A failed atomic write: the filling step's error, or the final rename's.
#[derive(Debug)]
pub enum AtomicError<E> {
    /// The content could not be produced or written.
    Fill(E),
    /// The finished file could not be moved into place.
    Io(PathBuf, io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_keeps_the_old_file() {
        let dir = std::env::temp_dir().join(format!("flexbench-atomic-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let target = dir.join("forces.csv");
        write_bytes(&target, b"old").unwrap();
        let r: Result<(), AtomicError<&str>> = write_with(&target, |tmp| {
            fs::write(tmp, b"half").unwrap();
            Err("failed half way")
        });
        assert!(matches!(r, Err(AtomicError::Fill("failed half way"))));
        assert_eq!(fs::read(&target).unwrap(), b"old");
        let left: Vec<_> = fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left behind");
        fs::remove_dir_all(&dir).unwrap();
    }
}
