//! The guest's initramfs: an uncompressed cpio archive in the "newc"
//! format the kernel unpacks into its root filesystem before it runs
//! `/init` (`unpack_to_rootfs()` in init/initramfs.c; every kernel built
//! with BLK_DEV_INITRD reads an uncompressed archive, whatever
//! decompressors it has).
//!
//! Written by hand, not with a crate: the format is one fixed 110-byte
//! ASCII header per entry (see usr/gen_init_cpio.c), and the archive holds
//! a handful of entries.

use std::io::{self, Write};

const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFCHR: u32 = 0o020000;

/// An archive being written.
pub struct Cpio<W: Write> {
    out: W,
    ino: u32,
    written: u64,
}

impl<W: Write> Cpio<W> {
    pub fn new(out: W) -> Self {
        Cpio {
            out,
            ino: 1,
            written: 0,
        }
    }

    /// A directory (its parents must come first).
    pub fn dir(&mut self, name: &str) -> io::Result<()> {
        self.entry(name, S_IFDIR | 0o755, 2, (0, 0), &[])
    }

    /// A regular file with `mode`'s permission bits.
    pub fn file(&mut self, name: &str, mode: u32, data: &[u8]) -> io::Result<()> {
        self.entry(name, S_IFREG | (mode & 0o7777), 1, (0, 0), data)
    }

    /// A character device node (major, minor).
    pub fn char_dev(&mut self, name: &str, mode: u32, dev: (u32, u32)) -> io::Result<()> {
        self.entry(name, S_IFCHR | (mode & 0o7777), 1, dev, &[])
    }

    /// The trailer; returns the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.entry("TRAILER!!!", 0, 1, (0, 0), &[])?;
        self.out.flush()?;
        Ok(self.out)
    }

    fn entry(
        &mut self,
        name: &str,
        mode: u32,
        nlink: u32,
        rdev: (u32, u32),
        data: &[u8],
    ) -> io::Result<()> {
        let size = u32::try_from(data.len()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name}: larger than a cpio entry can hold (4 GiB)"),
            )
        })?;
        let ino = if name == "TRAILER!!!" { 0 } else { self.ino };
        self.ino += 1;
        // magic, then 13 fields of 8 hex digits: ino, mode, uid, gid,
        // nlink, mtime, filesize, devmajor, devminor, rdevmajor, rdevminor,
        // namesize (with its NUL), check.
        let header = format!(
            "070701{ino:08x}{mode:08x}{:08x}{:08x}{nlink:08x}{:08x}{size:08x}{:08x}{:08x}\
             {:08x}{:08x}{:08x}{:08x}",
            0,
            0,
            0,
            0,
            0,
            rdev.0,
            rdev.1,
            name.len() + 1,
            0
        );
        self.put(header.as_bytes())?;
        self.put(name.as_bytes())?;
        self.put(&[0])?;
        self.pad()?;
        self.put(data)?;
        self.pad()
    }

    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.written += b.len() as u64;
        Ok(())
    }

    /// Pad to a multiple of 4 bytes.
    fn pad(&mut self) -> io::Result<()> {
        let n = (4 - (self.written % 4) as usize) % 4;
        self.put(&[0; 3][..n])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One entry read back: name, mode, rdev, data.
    type Entry = (String, u32, (u32, u32), Vec<u8>);

    /// Parse a newc archive back.
    fn entries(mut b: &[u8]) -> Vec<Entry> {
        let mut out = Vec::new();
        let mut off = 0usize;
        loop {
            assert_eq!(&b[..6], b"070701", "magic at {off}");
            let field = |i: usize| {
                u32::from_str_radix(std::str::from_utf8(&b[6 + 8 * i..14 + 8 * i]).unwrap(), 16)
                    .unwrap()
            };
            let (mode, size, rmaj, rmin, nsize) =
                (field(1), field(6), field(9), field(10), field(11));
            let name = std::str::from_utf8(&b[110..110 + nsize as usize - 1])
                .unwrap()
                .to_string();
            let data_at = (110 + nsize as usize).div_ceil(4) * 4;
            let data = b[data_at..data_at + size as usize].to_vec();
            let next = (data_at + size as usize).div_ceil(4) * 4;
            assert_eq!((off + next) % 4, 0);
            off += next;
            b = &b[next..];
            if name == "TRAILER!!!" {
                assert!(b.is_empty());
                return out;
            }
            out.push((name, mode, (rmaj, rmin), data));
        }
    }

    #[test]
    fn entries_read_back_as_written() {
        let mut c = Cpio::new(Vec::new());
        c.dir("dev").unwrap();
        c.char_dev("dev/console", 0o600, (5, 1)).unwrap();
        c.file("init", 0o755, b"\x7fELF...").unwrap();
        c.file("a/odd-length-name", 0o644, b"12345").unwrap();
        let bytes = c.finish().unwrap();
        let e = entries(&bytes);
        assert_eq!(e.len(), 4);
        assert_eq!(e[0].0, "dev");
        assert_eq!(e[0].1, 0o040755);
        assert_eq!((e[1].1, e[1].2), (0o020600, (5, 1)));
        assert_eq!((e[2].1, e[2].3.as_slice()), (0o100755, &b"\x7fELF..."[..]));
        assert_eq!(e[3].3, b"12345");
    }
}
