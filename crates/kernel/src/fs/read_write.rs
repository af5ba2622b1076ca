//! The read and write system calls of a regular file (fs/read_write.c:
//! ksys_read(), ksys_write(), ksys_pread64(), ksys_pwrite64(),
//! ksys_lseek(); fs/sync.c: do_fsync()), Linux 6.18, for buffered I/O on
//! ext4-like files.
//!
//! Each call runs in the calling task's context: the page cache it adds is
//! charged to that task's memory cgroup (`filemap_add_folio()` charges
//! `current`'s), and reclaim a charge needs runs there too. Reads go
//! through `filemap_read()` (readahead, `folio_mark_accessed()`), writes
//! through `generic_perform_write()` (folios dirtied), both in
//! mm/filemap.rs. `read`/`write` use and advance the file position;
//! `pread64`/`pwrite64` neither use nor move it. Files keep their size: a
//! write that would extend one is refused as unsupported; O_DIRECT,
//! O_APPEND, vectored and asynchronous I/O are not modelled.

use crate::arch::Arch;
use crate::KResult;
use crate::{Kernel, KernelError, MmId};

impl<A: Arch> Kernel<A> {
    /// Run `f` as task `mm` in the kernel: `current` is its cgroup.
    fn as_task<T>(&mut self, mm: MmId, f: impl FnOnce(&mut Self) -> T) -> T {
        let memcg = self.mm_memcg(mm);
        self.with_current_memcg(memcg, f)
    }

    /// `ksys_lseek(fd, offset, SEEK_SET)`
    pub fn sys_lseek(&mut self, file: u32, offset: u64) -> u64 {
        self.open_files[file as usize].f_pos = offset;
        offset
    }

    /// `ksys_read()`: read up to `count` bytes at the file position and
    /// advance it. Returns the bytes read (0 at EOF).
    pub fn sys_read(&mut self, mm: MmId, file: u32, count: u64) -> KResult<u64> {
        self.at_f_pos(file, |k, pos| k.sys_pread64(mm, file, count, pos))
    }

    /// An I/O call at the file position (`file_ppos()`), stored back
    /// advanced by the bytes moved, as `ksys_read()` / `ksys_write()` do.
    fn at_f_pos(
        &mut self,
        file: u32,
        io: impl FnOnce(&mut Self, u64) -> KResult<u64>,
    ) -> KResult<u64> {
        let pos = self.open_files[file as usize].f_pos;
        let n = io(self, pos)?;
        self.open_files[file as usize].f_pos = pos + n;
        Ok(n)
    }

    /// `ksys_pread64()`: read up to `count` bytes at `pos`.
    pub fn sys_pread64(&mut self, mm: MmId, file: u32, count: u64, pos: u64) -> KResult<u64> {
        self.as_task(mm, |k| k.filemap_read(file, pos, count))
    }

    /// `ksys_write()`: write `count` bytes at the file position and advance
    /// it.
    pub fn sys_write(&mut self, mm: MmId, file: u32, count: u64) -> KResult<u64> {
        self.at_f_pos(file, |k, pos| k.sys_pwrite64(mm, file, count, pos))
    }

    /// `ksys_pwrite64()`: write `count` bytes at `pos` (inside the file).
    pub fn sys_pwrite64(&mut self, mm: MmId, file: u32, count: u64, pos: u64) -> KResult<u64> {
        let f = self.open_files[file as usize].mapping;
        let size = self.files[f.0 as usize].i_size;
        if pos.checked_add(count).is_none_or(|end| end > size) {
            return Err(KernelError::Unsupported(format!(
                "a write of {count} bytes at {pos} would extend the file ({size} bytes); \
                 files keep their size in the model"
            )));
        }
        self.as_task(mm, |k| k.generic_perform_write(file, pos, count))
    }

    /// `do_fsync()`: write back every dirty folio of the file and wait.
    pub fn sys_fsync(&mut self, mm: MmId, file: u32) {
        let f = self.open_files[file as usize].mapping;
        self.as_task(mm, |k| k.file_write_and_wait(f));
    }
}
