//! The scenario's `[[file]]`s on the host: created in the work directory,
//! their page cache filled as `fill` says, and checked with mincore
//! (a DAMON thread evicts cold unmapped page cache: docs/fidelity.md, "Host
//! behaviours").

use std::fs::{File, OpenOptions};
use std::io::{self, Read as _};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use foliosim_scenario::{CacheFill, FileSpec};

use crate::sys::{self, Mapping};

/// One scenario file on the host.
pub(crate) struct HostFile {
    pub spec: FileSpec,
    pub path: PathBuf,
}

/// The contents written (any non-zero pattern: the data does not matter,
/// only that every block is really written).
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 | 1).collect()
}

impl HostFile {
    pub(crate) fn new(spec: &FileSpec, index: usize, dir: &std::path::Path) -> HostFile {
        let clean: String = spec
            .name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(40)
            .collect();
        HostFile {
            spec: spec.clone(),
            path: dir.join(format!("{index}-{clean}")),
        }
    }

    /// A file whose page cache must be resident when measured.
    pub(crate) fn warm(&self) -> bool {
        !matches!(self.spec.fill, CacheFill::Cold)
    }

    fn open_rw(&self) -> io::Result<File> {
        OpenOptions::new().read(true).write(true).open(&self.path)
    }

    /// Write the whole file with write(2) calls of `chunk` bytes, then fsync.
    fn write_all(&self, chunk: u64) -> io::Result<File> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&self.path)?;
        let buf = pattern(chunk as usize);
        let mut off = 0;
        while off < self.spec.size {
            let n = chunk.min(self.spec.size - off) as usize;
            f.write_all_at(&buf[..n], off)?;
            off += n as u64;
        }
        f.sync_all()?;
        Ok(f)
    }

    fn evict(&self, f: &File) -> io::Result<()> {
        for _ in 0..5 {
            match sys::fadvise_dontneed(f) {
                // A kernel without ADVISE_SYSCALLS (a small guest kernel,
                // the only user of the machine): drop every clean page of
                // the page cache instead, as `echo 1 > drop_caches` does.
                Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                    std::fs::write("/proc/sys/vm/drop_caches", "1")?
                }
                r => r?,
            }
            if self.resident()?.0 == 0 {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Ok(())
    }

    /// Create the file and fill its page cache as `fill` says.
    pub(crate) fn create(&self) -> io::Result<()> {
        match self.spec.fill {
            CacheFill::Write { write_size } => {
                self.write_all(write_size)?;
            }
            CacheFill::Cold => {
                let f = self.write_all(1 << 20)?;
                self.evict(&f)?;
            }
            CacheFill::Read { read_size } => {
                let f = self.write_all(1 << 20)?;
                self.evict(&f)?;
                self.read_whole(read_size)?;
            }
        }
        Ok(())
    }

    /// read(2) the file from start to end in calls of `chunk` bytes.
    fn read_whole(&self, chunk: u64) -> io::Result<()> {
        let mut f = File::open(&self.path)?;
        let mut buf = vec![0u8; chunk as usize];
        loop {
            if f.read(&mut buf)? == 0 {
                return Ok(());
            }
        }
    }

    /// (resident pages, total pages, per-page residency).
    pub(crate) fn resident(&self) -> io::Result<(u64, u64, Vec<u8>)> {
        let f = File::open(&self.path)?;
        let m = Mapping::file_ro(&f, self.spec.size as usize)?;
        let v = m.mincore()?;
        let n = v.iter().filter(|&&b| b & 1 != 0).count() as u64;
        Ok((n, v.len() as u64, v))
    }

    /// Bring the page cache of a warm file back to its filled state when
    /// pages were evicted (the host's proactive reclaim takes cold page
    /// cache). A fault that met an evicted page read it back through
    /// readahead, in larger folios than the fill made, so redoing only the
    /// missing pages would keep those: the whole cache is dropped and the
    /// file filled again as `create` fills it. Returns whether anything
    /// was missing.
    pub(crate) fn repopulate(&self) -> io::Result<bool> {
        let (n, total, _) = self.resident()?;
        if n == total || !self.warm() {
            return Ok(false);
        }
        self.evict(&self.open_rw()?)?;
        self.create()?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    fn spec(fill: CacheFill) -> FileSpec {
        let sc = foliosim_scenario::parse_str(
            "t.toml",
            "[[file]]\nname = \"data\"\nsize = \"1M\"\n",
            &[],
        )
        .unwrap();
        FileSpec {
            fill,
            ..sc.files[0].clone()
        }
    }

    /// Evict pages [first, first + n) of the file.
    fn evict(f: &HostFile, first: i64, n: i64) {
        let file = File::open(&f.path).unwrap();
        // SAFETY: posix_fadvise has no memory-safety preconditions.
        let r = unsafe {
            libc::posix_fadvise(
                file.as_raw_fd(),
                first * 4096,
                n * 4096,
                libc::POSIX_FADV_DONTNEED,
            )
        };
        assert_eq!(r, 0);
    }

    #[test]
    fn fills_and_repopulates_evicted_page_cache() {
        let dir = std::path::PathBuf::from(format!(
            "/var/tmp/foliosim-files-test-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        for (i, fill) in [
            CacheFill::Write { write_size: 8192 },
            CacheFill::Read { read_size: 65536 },
            CacheFill::Cold,
        ]
        .into_iter()
        .enumerate()
        {
            let f = HostFile::new(&spec(fill.clone()), i, &dir);
            f.create().unwrap();
            let (n, total, _) = f.resident().unwrap();
            assert_eq!(total, 256);
            if !f.warm() {
                assert_eq!(n, 0, "{fill:?}");
                assert!(!f.repopulate().unwrap());
                continue;
            }
            assert_eq!(n, 256, "{fill:?}");
            assert!(!f.repopulate().unwrap());
            evict(&f, 10, 20);
            assert!(f.resident().unwrap().0 < 256);
            assert!(f.repopulate().unwrap());
            assert_eq!(f.resident().unwrap().0, 256, "{fill:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
