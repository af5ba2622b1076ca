//! The messages the workload processes send the engine: one typed enum,
//! encoded in fixed-size records of [`MSG_BYTES`] bytes (below PIPE_BUF,
//! so writes from several processes never interleave). Encoding allocates
//! nothing, so a signal handler and a freshly forked child may send.

/// Bytes of one encoded message.
pub(crate) const MSG_BYTES: usize = 48;
const WORDS: usize = MSG_BYTES / 8;

/// What a phase marker says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mark {
    /// A phase starts (the engine opens it, then says go).
    Phase,
    /// The current phase ends.
    PhaseEnd,
    /// The workload is done.
    End,
}

/// Why a workload process stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    Open = 1,
    Mmap,
    Madvise,
    Munmap,
    Fork,
    Pipe,
    /// A forked child died (its pid in `err`).
    ChildDied,
    /// A signal (number in `err`) at `addr`.
    Signal,
    /// Writing cgroup.procs of the step's memory cgroup failed.
    MemcgMove,
    /// Reading the memory usage of the cgroup failed.
    MemcgUsage,
    /// Writing the cgroup's memory limit failed.
    MemcgLimit,
    /// Writing memory.reclaim failed.
    MemcgReclaim,
    /// Writing memory.force_empty failed.
    ForceEmpty,
    /// pthread_create of a scenario thread failed.
    Thread,
    /// sched_setaffinity of a scenario thread failed.
    Affinity,
    /// Unregistering glibc's rseq area failed (set-up).
    Rseq,
    /// A read, write, lseek or fsync of an I/O step failed (or read less
    /// than the file holds).
    Io,
    /// A step's range is not inside its region, or a word touch's offset
    /// is not a multiple of 8 (the offset of the range's end in `err`).
    BadOffset,
    /// Driving khugepaged failed: its sysfs files could not be read or
    /// written, or it did not complete the full scans in time
    /// (ETIMEDOUT).
    Khugepaged,
    /// mremap(2) of an mremap step failed.
    Mremap,
    /// An mremap step's `at` range is mapped in the workload process on
    /// this host (checked at set-up; the address in `err`).
    MremapTaken,
    /// A madvise step that expects an error (`errno`, its number in
    /// `err`) succeeded.
    MadviseSucceeded,
    /// Writing memory.high failed.
    MemcgHigh,
}

impl Failure {
    const ALL: [Failure; 23] = [
        Failure::Open,
        Failure::Mmap,
        Failure::Madvise,
        Failure::Munmap,
        Failure::Fork,
        Failure::Pipe,
        Failure::ChildDied,
        Failure::Signal,
        Failure::MemcgMove,
        Failure::MemcgUsage,
        Failure::MemcgLimit,
        Failure::MemcgReclaim,
        Failure::ForceEmpty,
        Failure::Thread,
        Failure::Affinity,
        Failure::Rseq,
        Failure::Io,
        Failure::BadOffset,
        Failure::Khugepaged,
        Failure::Mremap,
        Failure::MremapTaken,
        Failure::MadviseSucceeded,
        Failure::MemcgHigh,
    ];

    fn from_code(c: u64) -> Option<Failure> {
        Failure::ALL.into_iter().find(|f| *f as u64 == c)
    }
}

/// Something the engine says on stderr while the run goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Notice {
    /// A memcg reclaim step reclaimed less than asked (errno: EAGAIN from
    /// memory.reclaim, EBUSY from the v1 limit or force_empty).
    ReclaimShort = 1,
    /// A memcg_limit step's write failed with EBUSY (errno): the usage
    /// stayed above the new limit.
    LimitBusy = 2,
}

/// No step yet (set-up).
pub(crate) const NO_STEP: u64 = u64::MAX;

/// One message from a workload process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Msg {
    /// The root process is set up (its pid).
    Ready { pid: u64 },
    /// Region `region` is mapped at `addr`.
    Mapped { region: u32, addr: u64, len: u64 },
    /// Faults a fork step cost the workload itself (getrusage).
    Overhead { minflt: u64, majflt: u64 },
    /// Tracepoint hits of that overhead, for event `event`.
    OverheadEvent { event: u32, count: u64 },
    /// A phase marker with the phase's clocks, from process `pid` (the
    /// workload, or a fork's child marking its own phase).
    Mark {
        mark: Mark,
        phase: u32,
        wall_ns: u64,
        cpu_ns: u64,
        pid: u64,
    },
    /// A process stopped at step `step` (an index into the workload's
    /// locations, or [`NO_STEP`]).
    Error {
        step: u64,
        why: Failure,
        err: u64,
        addr: u64,
        pid: u64,
    },
    Note {
        step: u64,
        what: Notice,
        err: u64,
        pid: u64,
    },
    /// Pagemap step `idx`: the engine reads this process's pagemap, then
    /// says go.
    Pagemap { idx: u32 },
    /// Scenario thread `index` exists (set-up).
    Thread { index: u32, tid: u64 },
}

impl Msg {
    /// The fixed-size record.
    pub(crate) fn encode(&self) -> [u8; MSG_BYTES] {
        let w: [u64; WORDS] = match *self {
            Msg::Ready { pid } => [1, pid, 0, 0, 0, 0],
            Msg::Mapped { region, addr, len } => [2, region as u64, addr, len, 0, 0],
            Msg::Overhead { minflt, majflt } => [3, minflt, majflt, 0, 0, 0],
            Msg::Mark {
                mark,
                phase,
                wall_ns,
                cpu_ns,
                pid,
            } => [4, mark as u64, phase as u64, wall_ns, cpu_ns, pid],
            Msg::Error {
                step,
                why,
                err,
                addr,
                pid,
            } => [5, step, why as u64, err, addr, pid],
            Msg::OverheadEvent { event, count } => [6, event as u64, count, 0, 0, 0],
            Msg::Note {
                step,
                what,
                err,
                pid,
            } => [7, step, what as u64, err, 0, pid],
            Msg::Pagemap { idx } => [8, idx as u64, 0, 0, 0, 0],
            Msg::Thread { index, tid } => [9, index as u64, tid, 0, 0, 0],
        };
        let mut out = [0u8; MSG_BYTES];
        for (c, v) in out.chunks_exact_mut(8).zip(w) {
            c.copy_from_slice(&v.to_ne_bytes());
        }
        out
    }

    /// Decode a record; an error names what is wrong with it.
    pub(crate) fn decode(b: &[u8; MSG_BYTES]) -> Result<Msg, String> {
        let mut w = [0u64; WORDS];
        for (v, c) in w.iter_mut().zip(b.chunks_exact(8)) {
            *v = u64::from_ne_bytes(c.try_into().expect("8 bytes"));
        }
        let u32_at = |i: usize| u32::try_from(w[i]).map_err(|_| format!("bad message {w:?}"));
        Ok(match w[0] {
            1 => Msg::Ready { pid: w[1] },
            2 => Msg::Mapped {
                region: u32_at(1)?,
                addr: w[2],
                len: w[3],
            },
            3 => Msg::Overhead {
                minflt: w[1],
                majflt: w[2],
            },
            4 => Msg::Mark {
                mark: match w[1] {
                    0 => Mark::Phase,
                    1 => Mark::PhaseEnd,
                    2 => Mark::End,
                    _ => return Err(format!("bad phase marker {w:?}")),
                },
                phase: u32_at(2)?,
                wall_ns: w[3],
                cpu_ns: w[4],
                pid: w[5],
            },
            5 => Msg::Error {
                step: w[1],
                why: Failure::from_code(w[2]).ok_or_else(|| format!("bad error {w:?}"))?,
                err: w[3],
                addr: w[4],
                pid: w[5],
            },
            6 => Msg::OverheadEvent {
                event: u32_at(1)?,
                count: w[2],
            },
            7 => Msg::Note {
                step: w[1],
                what: match w[2] {
                    1 => Notice::ReclaimShort,
                    2 => Notice::LimitBusy,
                    _ => return Err(format!("bad note {w:?}")),
                },
                err: w[3],
                pid: w[5],
            },
            8 => Msg::Pagemap { idx: u32_at(1)? },
            9 => Msg::Thread {
                index: u32_at(1)?,
                tid: w[2],
            },
            k => return Err(format!("unknown message kind {k}")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_survives_its_record() {
        let mut msgs = vec![
            Msg::Ready { pid: 42 },
            Msg::Mapped {
                region: 3,
                addr: 0x5fff_ffe0_0000,
                len: 1 << 20,
            },
            Msg::Overhead {
                minflt: 7,
                majflt: 1,
            },
            Msg::OverheadEvent { event: 2, count: 9 },
            Msg::Note {
                step: 4,
                what: Notice::ReclaimShort,
                err: 11,
                pid: 5,
            },
            Msg::Pagemap { idx: 1 },
            Msg::Thread { index: 0, tid: 77 },
        ];
        for mark in [Mark::Phase, Mark::PhaseEnd, Mark::End] {
            msgs.push(Msg::Mark {
                mark,
                phase: 2,
                wall_ns: 10,
                cpu_ns: 9,
                pid: 41,
            });
        }
        for why in Failure::ALL {
            msgs.push(Msg::Error {
                step: NO_STEP,
                why,
                err: 12,
                addr: 0x1000,
                pid: 8,
            });
        }
        for m in msgs {
            assert_eq!(Msg::decode(&m.encode()), Ok(m));
        }
        let mut junk = [0u8; MSG_BYTES];
        junk[0] = 99;
        assert!(Msg::decode(&junk).is_err());
    }
}
