//! `-o FILE`: where the results go, without ever damaging what is there.
//!
//! * A regular file (or a path that does not exist yet) is written
//!   atomically: a temporary file created exclusively (`O_CREAT|O_EXCL`,
//!   unpredictable name, never through a symlink) in the same directory,
//!   given the existing file's mode and owner, synced, then renamed over
//!   the target. A failed run leaves no partial file.
//! * Anything else that can be opened for writing (a character device
//!   such as /dev/null or /dev/full, a FIFO) is written in place, never
//!   replaced; its write errors (ENOSPC from /dev/full) are reported.
//! * A directory, and the run's own input files, are refused.
//!
//! Terminal signals are held back while the temporary file exists, so an
//! interrupt never leaves it behind: it takes effect once the file is
//! renamed (or removed).

use std::fs;
use std::io::{self, Write as _};
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

/// Write `text` (text or bytes) to `path`; `inputs` are the files the run
/// read (never overwritten).
pub(crate) fn write_output(
    path: &Path,
    text: &(impl AsRef<[u8]> + ?Sized),
    inputs: &[PathBuf],
) -> io::Result<()> {
    foliosim_native::with_signals_blocked(|| write_unblocked(path, text.as_ref(), inputs))
}

fn write_unblocked(path: &Path, text: &[u8], inputs: &[PathBuf]) -> io::Result<()> {
    let meta = match fs::metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    if let Some(m) = &meta {
        if m.is_dir() {
            return Err(io::Error::other("is a directory; name a file to write"));
        }
        for input in inputs {
            if fs::metadata(input).is_ok_and(|i| i.dev() == m.dev() && i.ino() == m.ino()) {
                return Err(io::Error::other(format!(
                    "is the input {}; choose another output file",
                    input.display()
                )));
            }
        }
        if !m.is_file() {
            let mut f = fs::OpenOptions::new().write(true).open(path)?;
            f.write_all(text)?;
            return f.flush();
        }
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| "out".to_string(), |n| n.to_string_lossy().into_owned());
    // A new file gets the mode any program's new file gets (0666 less the
    // umask, applied by open(2)), not the temporary file's 0600.
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".foliosim-tmp")
        .permissions(fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)?;
    tmp.write_all(text)?;
    if let Some(m) = &meta {
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(m.mode() & 0o7777))?;
        if m.uid() != tmp.as_file().metadata()?.uid() || m.gid() != tmp.as_file().metadata()?.gid()
        {
            std::os::unix::fs::fchown(tmp.as_file(), Some(m.uid()), Some(m.gid()))?;
        }
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("foliosim-output-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn new_files_get_the_umask_mode() {
        let dir = tempfile::tempdir().unwrap();
        // What File::create (open(2) with 0666) gives under this umask.
        let probe = dir.path().join("probe");
        fs::File::create(&probe).unwrap();
        let want = fs::metadata(&probe).unwrap().mode() & 0o777;
        let out = dir.path().join("new.txt");
        write_output(&out, b"x\n", &[]).unwrap();
        assert_eq!(fs::metadata(&out).unwrap().mode() & 0o777, want);
    }

    #[test]
    fn regular_files_are_replaced_keeping_their_mode() {
        let d = scratch("regular");
        let out = d.join("out.json");
        write_output(&out, "one\n", &[]).unwrap();
        assert_eq!(fs::read_to_string(&out).unwrap(), "one\n");
        fs::set_permissions(&out, fs::Permissions::from_mode(0o600)).unwrap();
        write_output(&out, "two\n", &[]).unwrap();
        assert_eq!(fs::read_to_string(&out).unwrap(), "two\n");
        assert_eq!(fs::metadata(&out).unwrap().mode() & 0o777, 0o600);
        // No temporary file is left behind.
        assert_eq!(fs::read_dir(&d).unwrap().count(), 1);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_planted_symlink_is_never_followed() {
        // The temporary name is unpredictable and created exclusively: a
        // symlink at the old predictable name is left alone, and so is its
        // target.
        let d = scratch("symlink");
        let victim = d.join("victim.txt");
        fs::write(&victim, "keep\n").unwrap();
        let planted = d.join(format!(".out.json.foliosim-tmp-{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        write_output(&d.join("out.json"), "data\n", &[]).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep\n");
        assert_eq!(fs::read_to_string(d.join("out.json")).unwrap(), "data\n");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn directories_and_inputs_are_refused() {
        let d = scratch("refused");
        let e = write_output(&d, "x", &[]).unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
        let input = d.join("s.toml");
        fs::write(&input, "name = \"s\"\n").unwrap();
        let e = write_output(&input, "x", std::slice::from_ref(&input)).unwrap_err();
        assert!(e.to_string().contains("input"), "{e}");
        assert_eq!(fs::read_to_string(&input).unwrap(), "name = \"s\"\n");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn character_devices_are_written_not_replaced() {
        use std::os::unix::fs::FileTypeExt as _;
        write_output(Path::new("/dev/null"), "x\n", &[]).unwrap();
        assert!(fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
        if Path::new("/dev/full").exists() {
            let e = write_output(Path::new("/dev/full"), "x\n", &[]).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(28), "{e}"); // ENOSPC
            assert!(fs::metadata("/dev/full")
                .unwrap()
                .file_type()
                .is_char_device());
        }
    }
}
