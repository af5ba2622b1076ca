//! The trace file of a recording (`trace.fsr`): an 8-byte magic, the
//! format version (u32, little-endian), then a gzip stream of records.
//!
//! Every record is a tag byte followed by its fields as LEB128 varints
//! (strings: a length, then UTF-8 bytes). Records apply to the current
//! task, which a [`Event::Task`] record sets. A fault stores the distance
//! from the previous fault of the same process in pages (zig-zag coded,
//! shifted left by one with the write bit below), so a run of ascending
//! first touches costs two bytes a page before compression.

use std::collections::HashMap;
use std::fmt;
use std::io::{Read, Write};

/// The first bytes of every trace file.
pub const MAGIC: &[u8; 8] = b"FSIMREC\n";
/// The format version this build writes; it reads this and every
/// earlier one.
pub const VERSION: u32 = 2;
/// The oldest format version this build reads. Version 1 has no I/O
/// records, no epochs and no cached size of a file.
pub const OLDEST: u32 = 1;

/// What a mapping is, as the recorder saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapKind {
    /// Anonymous memory (private, or shared: `shared` on the map).
    Anon,
    /// The process's brk heap.
    Heap,
    /// The main thread's stack (it grows down on faults below it).
    Stack,
    /// File `file` (an id of a [`Event::File`]) from byte `offset`.
    File { file: u32, offset: u64 },
    /// A mapping the kernel makes that no system call can (vdso, vvar,
    /// vsyscall, ...): its name. Faults in it are not replayed.
    Special(String),
}

/// The system call of an [`Event::Io`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IoCall {
    Read,
    Write,
    Pread,
    Pwrite,
}

impl IoCall {
    const ALL: [IoCall; 4] = [IoCall::Read, IoCall::Write, IoCall::Pread, IoCall::Pwrite];

    /// The scenario language's name of the call (its I/O step's `op`).
    pub fn name(self) -> &'static str {
        match self {
            IoCall::Read => "read",
            IoCall::Write => "write",
            IoCall::Pread => "pread",
            IoCall::Pwrite => "pwrite",
        }
    }

    pub fn is_write(self) -> bool {
        matches!(self, IoCall::Write | IoCall::Pwrite)
    }
}

/// One record of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A file that a mapping or an I/O call refers to: its device and
    /// inode, its size in bytes when first seen, how many of those bytes
    /// were in the page cache then, and its path (no contents are
    /// recorded).
    File {
        id: u32,
        dev: u64,
        ino: u64,
        size: u64,
        cached: u64,
        path: String,
    },
    /// Later records are made by thread `tid` of process `pid`.
    Task { pid: u32, tid: u32 },
    /// The current task started a new process (fork, vfork, clone
    /// without CLONE_THREAD) with its memory a copy of the parent's.
    Fork { child: u32 },
    /// The current task started thread `tid` of its own process.
    Thread { tid: u32 },
    /// The current process called execve(2): its mappings are gone; the
    /// new image's follow as `Map` records.
    Exec,
    /// A new mapping of `len` bytes at `start` (or one that replaces what
    /// was there), with its `PROT_*` and whether it is `MAP_SHARED`.
    Map {
        start: u64,
        len: u64,
        prot: u32,
        shared: bool,
        kind: MapKind,
    },
    /// munmap(2), or a brk(2) that shrank the heap.
    Unmap { start: u64, len: u64 },
    /// mremap(2) that succeeded: the old range moved (or grew) to `new`.
    Remap {
        old: u64,
        old_len: u64,
        new: u64,
        new_len: u64,
    },
    /// mprotect(2) that succeeded.
    Protect { start: u64, len: u64, prot: u32 },
    /// madvise(2) that succeeded, with its `MADV_*` number.
    Advise { start: u64, len: u64, advice: u32 },
    /// A page fault of the current task at page `page` (address >> 12).
    Fault { page: u64, write: bool },
    /// A read(2), write(2), pread64(2) or pwrite64(2) of file `file` that
    /// moved `len` bytes (> 0) at byte `offset` of the file.
    Io {
        file: u32,
        call: IoCall,
        offset: u64,
        len: u64,
    },
    /// The recorder's clock ticked: a new epoch of later accesses begins.
    Epoch,
    /// A later access of the current task to page `page`, present since
    /// an earlier fault: not a fault of the program's own run, seen
    /// because the recorder write-protects written anonymous pages at
    /// every epoch (so the first write in an epoch to each is seen).
    Access { page: u64, write: bool },
    /// The current process exited (all its threads), with its wait
    /// status as waitpid(2) gave it.
    Exit { status: i32 },
}

/// What the recorder knows of the whole recording (the trace's header).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    /// The command line, as given.
    pub command: Vec<String>,
    /// The recording host: its architecture and kernel release.
    pub arch: String,
    pub kernel: String,
    /// fault_around_bytes while recording (4096 where the recorder could
    /// set it; else the host's value).
    pub fault_around_bytes: u64,
    /// Wall time of the recorded run, and of a run without recording
    /// (0: not measured), in nanoseconds.
    pub wall_ns: u64,
    pub plain_wall_ns: u64,
    /// Fault events the kernel dropped (ring buffer full): a recording
    /// with any is incomplete.
    pub lost_faults: u64,
    /// The program's exit status (as waitpid(2) gave it).
    pub status: i32,
    /// The epoch of later accesses in milliseconds (0: not recorded).
    pub epoch_ms: u64,
}

/// A malformed or unreadable trace: what is wrong and where (a byte
/// offset into the decompressed records, or into the file for the
/// header).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError {
    pub offset: u64,
    /// Is `offset` into the file (header, compression) rather than the
    /// decompressed records?
    pub in_file: bool,
    pub what: String,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.in_file {
            write!(f, "byte {} of the file: {}", self.offset, self.what)
        } else {
            write!(
                f,
                "byte {} of the decompressed records: {}",
                self.offset, self.what
            )
        }
    }
}

const T_FILE: u8 = 1;
const T_TASK: u8 = 2;
const T_FORK: u8 = 3;
const T_THREAD: u8 = 4;
const T_EXEC: u8 = 5;
const T_MAP: u8 = 6;
const T_UNMAP: u8 = 7;
const T_REMAP: u8 = 8;
const T_PROTECT: u8 = 9;
const T_ADVISE: u8 = 10;
const T_FAULT: u8 = 11;
const T_EXIT: u8 = 12;
const T_META: u8 = 13;
const T_IO: u8 = 14;
const T_EPOCH: u8 = 15;
const T_ACCESS: u8 = 16;

const K_ANON: u64 = 0;
const K_HEAP: u64 = 1;
const K_STACK: u64 = 2;
const K_FILE: u64 = 3;
const K_SPECIAL: u64 = 4;

fn put(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Encodes records into their uncompressed bytes (see the module
/// documentation); [`encode_file`] wraps them into a trace file.
#[derive(Debug, Default)]
pub struct Encoder {
    out: Vec<u8>,
    pid: u32,
    last_page: HashMap<u32, u64>,
}

impl Encoder {
    pub fn new() -> Encoder {
        Encoder::default()
    }

    pub fn push(&mut self, e: &Event) {
        let o = &mut self.out;
        match e {
            Event::File {
                id,
                dev,
                ino,
                size,
                cached,
                path,
            } => {
                o.push(T_FILE);
                for v in [*id as u64, *dev, *ino, *size, *cached] {
                    put(o, v);
                }
                put_str(o, path);
            }
            Event::Task { pid, tid } => {
                self.pid = *pid;
                o.push(T_TASK);
                put(o, *pid as u64);
                put(o, *tid as u64);
            }
            Event::Fork { child } => {
                o.push(T_FORK);
                put(o, *child as u64);
                // The child's faults continue from the parent's position.
                let last = self.last_page.get(&self.pid).copied().unwrap_or(0);
                self.last_page.insert(*child, last);
            }
            Event::Thread { tid } => {
                o.push(T_THREAD);
                put(o, *tid as u64);
            }
            Event::Exec => o.push(T_EXEC),
            Event::Map {
                start,
                len,
                prot,
                shared,
                kind,
            } => {
                o.push(T_MAP);
                put(o, *start);
                put(o, *len);
                put(o, *prot as u64 | (*shared as u64) << 32);
                match kind {
                    MapKind::Anon => put(o, K_ANON),
                    MapKind::Heap => put(o, K_HEAP),
                    MapKind::Stack => put(o, K_STACK),
                    MapKind::File { file, offset } => {
                        put(o, K_FILE);
                        put(o, *file as u64);
                        put(o, *offset);
                    }
                    MapKind::Special(name) => {
                        put(o, K_SPECIAL);
                        put_str(o, name);
                    }
                }
            }
            Event::Unmap { start, len } => {
                o.push(T_UNMAP);
                put(o, *start);
                put(o, *len);
            }
            Event::Remap {
                old,
                old_len,
                new,
                new_len,
            } => {
                o.push(T_REMAP);
                for v in [*old, *old_len, *new, *new_len] {
                    put(o, v);
                }
            }
            Event::Protect { start, len, prot } => {
                o.push(T_PROTECT);
                put(o, *start);
                put(o, *len);
                put(o, *prot as u64);
            }
            Event::Advise { start, len, advice } => {
                o.push(T_ADVISE);
                put(o, *start);
                put(o, *len);
                put(o, *advice as u64);
            }
            Event::Fault { page, write } | Event::Access { page, write } => {
                let last = self.last_page.entry(self.pid).or_insert(0);
                let delta = page.wrapping_sub(*last) as i64;
                *last = *page;
                o.push(if matches!(e, Event::Fault { .. }) {
                    T_FAULT
                } else {
                    T_ACCESS
                });
                put(o, zigzag(delta) << 1 | *write as u64);
            }
            Event::Exit { status } => {
                o.push(T_EXIT);
                put(o, zigzag(*status as i64));
            }
            Event::Io {
                file,
                call,
                offset,
                len,
            } => {
                o.push(T_IO);
                put(o, *file as u64);
                put(
                    o,
                    IoCall::ALL.iter().position(|c| c == call).unwrap_or(0) as u64,
                );
                put(o, *offset);
                put(o, *len);
            }
            Event::Epoch => o.push(T_EPOCH),
        }
    }

    /// The encoded records.
    pub fn finish(self) -> Vec<u8> {
        self.out
    }
}

fn encode_meta(m: &Meta) -> Vec<u8> {
    let mut o = vec![T_META];
    put(&mut o, m.command.len() as u64);
    for a in &m.command {
        put_str(&mut o, a);
    }
    put_str(&mut o, &m.arch);
    put_str(&mut o, &m.kernel);
    for v in [
        m.fault_around_bytes,
        m.wall_ns,
        m.plain_wall_ns,
        m.lost_faults,
    ] {
        put(&mut o, v);
    }
    put(&mut o, zigzag(m.status as i64));
    put(&mut o, m.epoch_ms);
    o
}

/// A whole trace file: magic, version, then the gzip stream of the
/// header record and `records` (from [`Encoder::finish`]).
pub fn encode_file(meta: &Meta, records: &[u8]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&VERSION.to_le_bytes());
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    // Writing into a Vec cannot fail.
    let _ = gz.write_all(&encode_meta(meta));
    let _ = gz.write_all(records);
    gz.finish().unwrap_or_default()
}

/// Decoded records, with the byte offset (into the decompressed stream)
/// each starts at.
#[derive(Debug)]
pub struct Trace {
    pub meta: Meta,
    pub events: Vec<(u64, Event)>,
}

/// Decode a whole trace file.
pub fn decode_file(bytes: &[u8]) -> Result<Trace, FormatError> {
    let file_err = |offset: u64, what: String| FormatError {
        offset,
        in_file: true,
        what,
    };
    if bytes.len() < 12 || &bytes[..8] != MAGIC {
        let n = bytes.len().min(8);
        let at = (0..n).find(|&i| bytes[i] != MAGIC[i]).unwrap_or(n);
        return Err(file_err(
            at as u64,
            "not a foliosim trace (the file does not start with FSIMREC)".into(),
        ));
    }
    let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    if !(OLDEST..=VERSION).contains(&version) {
        return Err(file_err(
            8,
            format!(
                "format version {version}; this foliosim reads version {VERSION}{}",
                if version > VERSION {
                    " (the recording is from a newer foliosim)"
                } else {
                    ""
                }
            ),
        ));
    }
    let mut raw = Vec::new();
    let mut gz = flate2::read::GzDecoder::new(&bytes[12..]);
    if let Err(e) = gz.read_to_end(&mut raw) {
        // How far the decoder read tells where the damage is.
        let at = 12 + (bytes.len() - 12 - gz.into_inner().len()) as u64;
        return Err(file_err(
            at,
            format!(
                "the compressed records are damaged or cut short ({e}; {} bytes decompressed)",
                raw.len()
            ),
        ));
    }
    decode_records(&raw, version)
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
    start: usize,
}

impl Cursor<'_> {
    fn err(&self, what: impl Into<String>) -> FormatError {
        FormatError {
            offset: self.start as u64,
            in_file: false,
            what: what.into(),
        }
    }

    fn var(&mut self, field: &str) -> Result<u64, FormatError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.b.get(self.at) else {
                return Err(self.err(format!("the records end inside field `{field}`")));
            };
            self.at += 1;
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.err(format!("field `{field}` is longer than 64 bits")))
    }

    fn u32(&mut self, field: &str) -> Result<u32, FormatError> {
        let v = self.var(field)?;
        u32::try_from(v).map_err(|_| self.err(format!("field `{field}` = {v} exceeds 32 bits")))
    }

    fn string(&mut self, field: &str) -> Result<String, FormatError> {
        let n = self.var(field)? as usize;
        let Some(s) = self.b.get(self.at..self.at.saturating_add(n)) else {
            return Err(self.err(format!("the records end inside field `{field}`")));
        };
        self.at += n;
        String::from_utf8(s.to_vec()).map_err(|_| self.err(format!("field `{field}` is not UTF-8")))
    }
}

/// Decode the decompressed records of format `version`: the header
/// record, then events.
pub fn decode_records(b: &[u8], version: u32) -> Result<Trace, FormatError> {
    let mut c = Cursor { b, at: 0, start: 0 };
    if b.first() != Some(&T_META) {
        return Err(c.err("the records do not start with the header record"));
    }
    c.at = 1;
    let n = c.var("command length")?;
    let mut command = Vec::new();
    for _ in 0..n.min(1 << 16) {
        command.push(c.string("command")?);
    }
    let meta = Meta {
        command,
        arch: c.string("arch")?,
        kernel: c.string("kernel")?,
        fault_around_bytes: c.var("fault_around_bytes")?,
        wall_ns: c.var("wall_ns")?,
        plain_wall_ns: c.var("plain_wall_ns")?,
        lost_faults: c.var("lost_faults")?,
        status: unzigzag(c.var("status")?) as i32,
        epoch_ms: if version >= 2 { c.var("epoch_ms")? } else { 0 },
    };
    let mut events = Vec::new();
    let mut pid = 0u32;
    let mut last_page: HashMap<u32, u64> = HashMap::new();
    while c.at < b.len() {
        c.start = c.at;
        let tag = b[c.at];
        c.at += 1;
        let e = match tag {
            T_FILE => {
                let (id, dev, ino) = (c.u32("file id")?, c.var("dev")?, c.var("ino")?);
                let size = c.var("size")?;
                // Version 1 did not look: its replay takes files as cached.
                let cached = if version >= 2 { c.var("cached")? } else { size };
                Event::File {
                    id,
                    dev,
                    ino,
                    size,
                    cached,
                    path: c.string("path")?,
                }
            }
            T_TASK => {
                pid = c.u32("pid")?;
                Event::Task {
                    pid,
                    tid: c.u32("tid")?,
                }
            }
            T_FORK => {
                let child = c.u32("child")?;
                let last = last_page.get(&pid).copied().unwrap_or(0);
                last_page.insert(child, last);
                Event::Fork { child }
            }
            T_THREAD => Event::Thread { tid: c.u32("tid")? },
            T_EXEC => Event::Exec,
            T_MAP => {
                let start = c.var("start")?;
                let len = c.var("len")?;
                let p = c.var("prot")?;
                let kind = match c.var("kind")? {
                    K_ANON => MapKind::Anon,
                    K_HEAP => MapKind::Heap,
                    K_STACK => MapKind::Stack,
                    K_FILE => MapKind::File {
                        file: c.u32("file")?,
                        offset: c.var("offset")?,
                    },
                    K_SPECIAL => MapKind::Special(c.string("name")?),
                    k => return Err(c.err(format!("unknown mapping kind {k}"))),
                };
                Event::Map {
                    start,
                    len,
                    prot: p as u32,
                    shared: p >> 32 & 1 == 1,
                    kind,
                }
            }
            T_UNMAP => Event::Unmap {
                start: c.var("start")?,
                len: c.var("len")?,
            },
            T_REMAP => Event::Remap {
                old: c.var("old")?,
                old_len: c.var("old_len")?,
                new: c.var("new")?,
                new_len: c.var("new_len")?,
            },
            T_PROTECT => Event::Protect {
                start: c.var("start")?,
                len: c.var("len")?,
                prot: c.u32("prot")?,
            },
            T_ADVISE => Event::Advise {
                start: c.var("start")?,
                len: c.var("len")?,
                advice: c.u32("advice")?,
            },
            T_FAULT | T_ACCESS if tag == T_FAULT || version >= 2 => {
                let fault = tag == T_FAULT;
                let v = c.var(if fault { "fault" } else { "access" })?;
                let last = last_page.entry(pid).or_insert(0);
                let page = last.wrapping_add(unzigzag(v >> 1) as u64);
                *last = page;
                let write = v & 1 == 1;
                if fault {
                    Event::Fault { page, write }
                } else {
                    Event::Access { page, write }
                }
            }
            T_EXIT => Event::Exit {
                status: unzigzag(c.var("status")?) as i32,
            },
            T_IO if version >= 2 => Event::Io {
                file: c.u32("file")?,
                call: {
                    let k = c.var("call")?;
                    match IoCall::ALL.get(k as usize) {
                        Some(&call) => call,
                        None => return Err(c.err(format!("unknown I/O call {k}"))),
                    }
                },
                offset: c.var("offset")?,
                len: c.var("len")?,
            },
            T_EPOCH if version >= 2 => Event::Epoch,
            t => return Err(c.err(format!("unknown record tag {t}"))),
        };
        events.push((c.start as u64, e));
    }
    Ok(Trace { meta, events })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Event> {
        vec![
            Event::Task { pid: 7, tid: 7 },
            Event::File {
                id: 0,
                dev: 0x801,
                ino: 1234,
                size: 10_000,
                cached: 8192,
                path: "/usr/bin/true".into(),
            },
            Event::Map {
                start: 0x5555_5555_4000,
                len: 0x3000,
                prot: 5,
                shared: false,
                kind: MapKind::File {
                    file: 0,
                    offset: 0x1000,
                },
            },
            Event::Map {
                start: 0x7fff_fffd_e000,
                len: 0x21000,
                prot: 3,
                shared: false,
                kind: MapKind::Stack,
            },
            Event::Fault {
                page: 0x0007_ffff_fffe,
                write: true,
            },
            Event::Fault {
                page: 0x0007_ffff_fffd,
                write: false,
            },
            Event::Fork { child: 8 },
            Event::Task { pid: 8, tid: 8 },
            Event::Fault {
                page: 0x0007_ffff_fffc,
                write: true,
            },
            Event::Exit { status: -9 },
            Event::Task { pid: 7, tid: 9 },
            Event::Thread { tid: 10 },
            Event::Advise {
                start: 0x1000,
                len: 0x2000,
                advice: 4,
            },
            Event::Remap {
                old: 1,
                old_len: 2,
                new: 3,
                new_len: 4,
            },
            Event::Protect {
                start: 1,
                len: 2,
                prot: 0,
            },
            Event::Unmap { start: 5, len: 6 },
            Event::Io {
                file: 0,
                call: IoCall::Pwrite,
                offset: 12_288,
                len: 4096,
            },
            Event::Epoch,
            Event::Access {
                page: 0x7_ffff_fffe,
                write: true,
            },
            Event::Exec,
            Event::Map {
                start: 0xffff_ffff_ff60_0000,
                len: 0x1000,
                prot: 4,
                shared: false,
                kind: MapKind::Special("[vsyscall]".into()),
            },
        ]
    }

    fn meta() -> Meta {
        Meta {
            command: vec!["true".into(), "--x".into()],
            arch: "x86_64".into(),
            kernel: "6.18.44".into(),
            fault_around_bytes: 65536,
            wall_ns: 12,
            plain_wall_ns: 10,
            lost_faults: 0,
            status: 0,
            epoch_ms: 100,
        }
    }

    fn file() -> Vec<u8> {
        let mut e = Encoder::new();
        for ev in sample() {
            e.push(&ev);
        }
        encode_file(&meta(), &e.finish())
    }

    #[test]
    fn every_record_round_trips() {
        let t = decode_file(&file()).unwrap();
        assert_eq!(t.meta, meta());
        let got: Vec<Event> = t.events.into_iter().map(|(_, e)| e).collect();
        assert_eq!(got, sample());
    }

    /// An ascending run of first touches costs two bytes a page before
    /// compression: the tag and a one-byte delta.
    #[test]
    fn ascending_faults_take_two_bytes_a_page() {
        let mut e = Encoder::new();
        e.push(&Event::Task { pid: 1, tid: 1 });
        let before = 3;
        for p in 0..1000u64 {
            e.push(&Event::Fault {
                page: 0x5_5555 + p,
                write: true,
            });
        }
        // The first delta is from page 0: three bytes of varint.
        assert_eq!(e.finish().len(), before + 1 + 3 + 999 * 2);
    }

    #[test]
    fn a_cut_file_names_the_byte_where_it_breaks() {
        let f = file();
        let err = decode_file(&f[..f.len() - 30]).unwrap_err();
        assert!(err.in_file && err.offset > 12, "{err}");
        assert!(err.to_string().contains("cut short"), "{err}");
    }

    #[test]
    fn a_newer_version_is_refused_by_name() {
        let mut f = file();
        f[8] = VERSION as u8 + 1;
        let err = decode_file(&f).unwrap_err();
        assert_eq!(err.offset, 8);
        assert!(err.to_string().contains("newer foliosim"), "{err}");
    }

    /// A version 1 trace (no cached sizes, epochs or I/O records) still
    /// reads: its files count as cached, its epoch as none, and a record
    /// tag version 2 added is unknown to it.
    #[test]
    fn version_1_traces_still_read() {
        let mut v1 = vec![T_META];
        put(&mut v1, 1);
        put_str(&mut v1, "true");
        put_str(&mut v1, "x86_64");
        put_str(&mut v1, "6.18.44");
        for v in [65536, 12, 10, 0, 0] {
            put(&mut v1, v);
        }
        v1.push(T_FILE);
        for v in [3, 0x801, 99, 10_000] {
            put(&mut v1, v);
        }
        put_str(&mut v1, "/f");
        let t = decode_records(&v1, 1).unwrap();
        assert_eq!(t.meta.epoch_ms, 0);
        assert_eq!(t.meta.command, ["true"]);
        assert!(
            matches!(
                t.events[..],
                [(
                    _,
                    Event::File {
                        size: 10_000,
                        cached: 10_000,
                        ..
                    }
                )]
            ),
            "{:?}",
            t.events
        );
        v1.push(T_EPOCH);
        let err = decode_records(&v1, 1).unwrap_err();
        assert!(err.what.contains("unknown record tag 15"), "{err}");
    }

    #[test]
    fn not_a_trace_is_refused() {
        let err = decode_file(b"# a scenario\n[system]\n").unwrap_err();
        assert!(err.to_string().contains("not a foliosim trace"), "{err}");
    }

    /// Damaged records (an unknown tag) name their decompressed offset.
    #[test]
    fn an_unknown_tag_names_its_offset() {
        let mut e = Encoder::new();
        e.push(&Event::Task { pid: 1, tid: 1 });
        let mut raw = encode_meta(&meta());
        let at = raw.len() as u64;
        raw.extend(e.finish());
        raw.push(99);
        raw.push(T_UNMAP);
        raw.push(0x80); // a varint that never ends
        let err = decode_records(&raw, VERSION).unwrap_err();
        assert_eq!(err.offset, at + 3, "{err}");
        assert!(err.what.contains("unknown record tag 99"), "{err}");
        raw.remove(at as usize + 3);
        let err = decode_records(&raw, VERSION).unwrap_err();
        assert_eq!(err.offset, at + 3, "{err}");
        assert!(err.what.contains("inside field `start`"), "{err}");
    }
}
