//! The step interpreter, generic over the simulated architecture.

use std::collections::{BTreeMap, HashMap};

use foliosim_hw::{Cpu, TaskFaults};
use foliosim_kernel::include::linux::pgtable::{align_down, PAGE_SIZE, PMD_SIZE};
use foliosim_kernel::mm::madvise::Madv;
use foliosim_kernel::mm::mmap::{MmapArgs, VmaKind};
use foliosim_kernel::{Arch, Config, FileId, Kernel, KernelError, MmId};
use foliosim_report::{Phase, Report};
use foliosim_scenario::{
    Access, Advice, Backing, CacheFill, Pattern, Range, Scenario, Step, StepKind, TouchUnit,
};

use crate::{at, SimError};
use foliosim_kernel::kernel::sched::CpuRun;

mod pagemap;

/// A phase being measured.
struct OpenPhase {
    name: String,
    start: BTreeMap<String, u64>,
    /// Results of the phase's pagemap steps (`pagemap/<name>/...`).
    pagemap: BTreeMap<String, i64>,
    /// Raw entries of its pagemap steps with `raw = true`.
    pagemap_raw: BTreeMap<String, Vec<u64>>,
}

pub(crate) struct Engine<A: Arch> {
    k: Kernel<A>,
    cpu: Cpu,
    files: HashMap<String, FileId>,
    /// Named regions: (address, length), the same in every process.
    regions: BTreeMap<String, (u64, u64)>,
    root: MmId,
    faults: TaskFaults,
    phase: Option<OpenPhase>,
    phases: Vec<Phase>,
    check: bool,
    /// The CPUs of running threads (`cpu` is CPU 0's, the main thread's).
    thread_cpus: Vec<Cpu>,
    /// The threads' CPUs and whether they sleep (`after = "sleep"`).
    threads: Option<(u32, foliosim_scenario::ThreadAfter)>,
}

fn kerr(loc: &foliosim_scenario::Loc, e: KernelError) -> SimError {
    match e {
        KernelError::Unsupported(what) => SimError::Unsupported { at: at(loc), what },
        KernelError::Errno(errno, what) => SimError::Syscall {
            at: at(loc),
            what: format!("{errno}: {what}"),
        },
    }
}

impl<A: Arch> Engine<A> {
    pub(crate) fn run(sc: &Scenario, cfg: Config) -> Result<Report, SimError> {
        let check = cfg.check_invariants;
        let file_loc = |i: usize| sc.files.get(i).map(|f| at(&f.loc)).unwrap_or_default();
        let mut k = Kernel::<A>::new(cfg).map_err(|e| SimError::Unsupported {
            at: "[system]".into(),
            what: e.to_string(),
        })?;
        let root = k.mm_alloc();
        k.set_nr_cpus(sc.system.cpus as usize);
        k.sched_switch(0, foliosim_kernel::kernel::sched::CpuRun::User(root));
        let mut e = Engine {
            k,
            cpu: Cpu::default(),
            files: HashMap::new(),
            regions: BTreeMap::new(),
            root,
            faults: TaskFaults::default(),
            phase: None,
            phases: Vec::new(),
            check,
            thread_cpus: Vec::new(),
            threads: None,
        };
        for (i, f) in sc.files.iter().enumerate() {
            e.create_file(f).map_err(|err| match err {
                KernelError::Unsupported(what) => SimError::Unsupported {
                    at: file_loc(i),
                    what,
                },
                KernelError::Errno(n, what) => SimError::Syscall {
                    at: file_loc(i),
                    what: format!("{n}: {what}"),
                },
            })?;
            e.check_now(&file_loc(i))?;
        }
        for step in &sc.steps {
            let res = e.exec(root, step);
            e.unsupported(&step.loc, res)?;
        }
        e.end_phase();
        Ok(Report {
            scenario: sc.name.clone(),
            arch: A::NAME.to_string(),
            engine: "sim".into(),
            system: sc.system.knobs.clone(),
            phases: e.phases,
            expectations: Vec::new(),
        })
    }

    fn create_file(&mut self, f: &foliosim_scenario::FileSpec) -> Result<(), KernelError> {
        let id = self.k.create_file(&f.name, f.size);
        match f.fill {
            CacheFill::Cold => {}
            CacheFill::Write { write_size } => self.k.fill_by_write(id, write_size)?,
            CacheFill::Read { read_size } => self.k.fill_by_read(id, read_size)?,
        }
        self.files.insert(f.name.clone(), id);
        Ok(())
    }

    fn check_now(&self, where_: &str) -> Result<(), SimError> {
        if self.check {
            self.k
                .check_invariants()
                .map_err(|what| SimError::Invariant {
                    at: where_.to_string(),
                    what,
                })?;
        }
        Ok(())
    }

    fn counters(&self) -> BTreeMap<String, u64> {
        let mut c = self.k.vmstat.snapshot();
        c.insert("minor-faults".into(), self.faults.min_flt);
        c.insert("major-faults".into(), self.faults.maj_flt);
        c
    }

    fn start_phase(&mut self, name: &str) {
        self.end_phase();
        self.phase = Some(OpenPhase {
            name: name.to_string(),
            start: self.counters(),
            pagemap: BTreeMap::new(),
            pagemap_raw: BTreeMap::new(),
        });
    }

    fn end_phase(&mut self) {
        let Some(open) = self.phase.take() else {
            return;
        };
        let end = self.counters();
        let mut counters: BTreeMap<String, i64> = end
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    *v as i64 - *open.start.get(k).unwrap_or(&0) as i64,
                )
            })
            .collect();
        counters.extend(open.pagemap);
        let mut folios = BTreeMap::new();
        if self.k.mms[self.root.0 as usize].is_some() {
            for (name, &(addr, len)) in &self.regions {
                folios.insert(
                    name.clone(),
                    self.k.folio_histogram(self.root, addr, addr + len),
                );
            }
        }
        self.phases.push(Phase {
            name: open.name,
            counters,
            folios,
            time: None,
            pagemap: open.pagemap_raw,
        });
    }

    fn region(&self, name: &str, r: &Range) -> (u64, u64) {
        let (addr, len) = self.regions[name];
        let start = addr + r.offset;
        let l = r.len.unwrap_or(len.saturating_sub(r.offset));
        (start, l)
    }

    fn exec(&mut self, mm: MmId, step: &Step) -> Result<(), SimError> {
        let loc = &step.loc;
        self.k.set_current_cpu(self.cpu.id);
        match &step.kind {
            StepKind::Mmap {
                region,
                backing,
                shared,
                size,
                file_offset,
                prot,
                advise,
            } => {
                let (kind, file) = match backing {
                    Backing::Anon => (VmaKind::Anon, None),
                    Backing::File { file } => (VmaKind::File, Some(self.files[file])),
                    Backing::Shmem => (VmaKind::Shmem, None),
                };
                let args = MmapArgs {
                    len: *size,
                    prot_read: prot.read,
                    prot_write: prot.write,
                    prot_exec: prot.exec,
                    shared: *shared,
                    kind,
                    file,
                    offset: *file_offset,
                };
                let addr = self.k.do_mmap(mm, args).map_err(|e| kerr(loc, e))?;
                self.regions.insert(region.clone(), (addr, *size));
                for &a in advise {
                    self.k
                        .do_madvise(mm, addr, *size, madv(a, loc)?)
                        .map_err(|e| kerr(loc, e))?;
                }
            }
            StepKind::Touch {
                region,
                access,
                pattern,
                range,
                unit,
            } => {
                let (start, len) = self.region(region, range);
                self.cpu.store_nonzero = *access != Access::WriteZero;
                let write = *access != Access::Read;
                self.touch(mm, start..start + len, write, *pattern, *unit, loc)?;
            }
            StepKind::Madvise {
                region,
                advice,
                range,
                per_call,
            } => {
                let (start, len) = self.region(region, range);
                let behavior = madv(*advice, loc)?;
                // `per_call`: one madvise(2) per chunk, ascending, the last
                // one shorter; without it one call for the whole range.
                let chunk = per_call.unwrap_or(len).max(1);
                let mut done = 0;
                loop {
                    let n = chunk.min(len - done);
                    self.k.vmstat.sim.syscall_mm += 1;
                    self.k
                        .do_madvise(mm, start + done, n, behavior)
                        .map_err(|e| kerr(loc, e))?;
                    done += n;
                    if done >= len {
                        break;
                    }
                }
            }
            StepKind::Munmap { region, range } => {
                let (start, len) = self.region(region, range);
                self.k.vmstat.sim.syscall_mm += 1;
                self.k.do_munmap(mm, start, len).map_err(|e| kerr(loc, e))?;
            }
            StepKind::Fork { child } => {
                let c = self.k.dup_mm(mm).map_err(|e| kerr(loc, e))?;
                self.check_now(&at(loc))?;
                // The child runs on the parent's CPU while the parent waits.
                self.k.sched_switch(self.cpu.id, CpuRun::User(c));
                for s in child {
                    self.exec(c, s)?;
                }
                self.k.sched_switch(self.cpu.id, CpuRun::User(mm));
            }
            StepKind::Wait => self.wait(mm),
            StepKind::Phase { name } => self.start_phase(name),
            StepKind::PhaseEnd => self.end_phase(),
            StepKind::Memcg { limit } => {
                self.k.mem_cgroup_create(mm, *limit);
            }
            StepKind::MemcgReclaim { amount } => self.memcg_reclaim(mm, *amount, loc),
            StepKind::ForceEmpty => {
                let memcg = self.k.mm_memcg(mm);
                self.k.mem_cgroup_force_empty(memcg);
            }
            StepKind::Pagemap(p) => self.pagemap(mm, p, loc)?,
            StepKind::Threads { after, threads, .. } => self.run_threads(mm, *after, threads)?,
            StepKind::Join => self.join(mm),
        }
        self.check_now(&at(loc))
    }

    /// `memcg_reclaim`: write the amount to memory.reclaim of the process's
    /// cgroup. Like the native engine, a short reclaim (-EAGAIN) is a note,
    /// not an error.
    fn memcg_reclaim(&mut self, mm: MmId, amount: u64, loc: &foliosim_scenario::Loc) {
        let memcg = self.k.mm_memcg(mm);
        if let Err(got) = self.k.memory_reclaim(memcg, amount / PAGE_SIZE) {
            eprintln!(
                "{}: note: memory.reclaim reclaimed {got} of {} pages (EAGAIN); the run goes on",
                at(loc),
                amount / PAGE_SIZE
            );
        }
    }

    /// Behaviour the kernel model met during the step but does not
    /// implement (a process killed for lack of memory because a cgroup
    /// charge failed: the memcg OOM killer; shmem swap-out) makes the step
    /// unsupported.
    fn unsupported(
        &mut self,
        loc: &foliosim_scenario::Loc,
        res: Result<(), SimError>,
    ) -> Result<(), SimError> {
        match (res, self.k.take_unsupported()) {
            (Err(SimError::Killed { at, .. }), Some(what)) => {
                Err(SimError::Unsupported { at, what })
            }
            (Ok(()), Some(what)) => Err(SimError::Unsupported { at: at(loc), what }),
            (res, _) => res,
        }
    }

    /// `threads`: thread `i` runs its steps on CPU `i + 1`, one thread after
    /// the other, then spins there (its mm stays loaded) or sleeps (its CPU
    /// idles in lazy TLB mode).
    fn run_threads(
        &mut self,
        mm: MmId,
        after: foliosim_scenario::ThreadAfter,
        threads: &[Vec<Step>],
    ) -> Result<(), SimError> {
        self.thread_cpus = (1..=threads.len())
            .map(|id| {
                let mut c = Cpu::default();
                c.id = id;
                c
            })
            .collect();
        for (i, steps) in threads.iter().enumerate() {
            std::mem::swap(&mut self.cpu, &mut self.thread_cpus[i]);
            self.k.sched_switch(self.cpu.id, CpuRun::User(mm));
            let mut res = Ok(());
            for s in steps {
                res = self.exec(mm, s);
                if res.is_err() {
                    break;
                }
            }
            if after == foliosim_scenario::ThreadAfter::Sleep {
                self.k.sched_switch(self.cpu.id, CpuRun::Idle);
            }
            std::mem::swap(&mut self.cpu, &mut self.thread_cpus[i]);
            res?;
        }
        self.k.set_current_cpu(self.cpu.id);
        self.threads = Some((threads.len() as u32, after));
        Ok(())
    }

    /// `join`: each thread (woken first if it slept) exits; its CPU idles
    /// lazily on the mm, which stays in `mm_cpumask()`.
    fn join(&mut self, mm: MmId) {
        if let Some((count, after)) = self.threads.take() {
            for cpu in 1..=count as usize {
                if after == foliosim_scenario::ThreadAfter::Sleep {
                    self.k.sched_switch(cpu, CpuRun::User(mm));
                }
                self.k.sched_switch(cpu, CpuRun::Exited);
            }
        }
        self.thread_cpus.clear();
        self.k.set_current_cpu(self.cpu.id);
    }

    /// Every live child of `mm` (and their children) exits.
    fn wait(&mut self, mm: MmId) {
        let children = std::mem::take(&mut self.k.mm_mut(mm).children);
        for c in children {
            self.wait(c);
            self.k.exit_mmap(c);
        }
        self.cpu.flush();
    }

    /// The accesses of a touch step, one through the simulated CPU per
    /// page (the first word of a word touch).
    fn touch(
        &mut self,
        mm: MmId,
        range: std::ops::Range<u64>,
        write: bool,
        pattern: Pattern,
        unit: TouchUnit,
        loc: &foliosim_scenario::Loc,
    ) -> Result<(), SimError> {
        let std::ops::Range { start, end } = range;
        let len = end - start;
        // The native loop of a sequential word touch reads the rest of a
        // page before the next page's first word.
        let between = match (unit, pattern) {
            (TouchUnit::Word, Pattern::Sequential) => FURTHER_WORDS,
            _ => 0,
        };
        self.cpu.set_loads_between(between);
        let one = |e: &mut Self, addr: u64| {
            e.cpu
                .access(&mut e.k, mm, addr, write, &mut e.faults)
                .map_err(|err| SimError::Killed {
                    at: at(loc),
                    signal: err.signal,
                    addr: err.addr,
                })
        };
        match pattern {
            Pattern::Sequential => {
                let mut a = start;
                while a < end {
                    one(self, a)?;
                    a += PAGE_SIZE;
                }
            }
            Pattern::Stride { stride } => {
                let mut a = start;
                while a < end {
                    one(self, a)?;
                    a += stride;
                }
            }
            Pattern::OnePerPageTable => {
                let mut a = start;
                while a < end {
                    one(self, a)?;
                    a = align_down(a, PMD_SIZE) + PMD_SIZE;
                }
            }
            Pattern::Random { seed } => {
                let n = len / PAGE_SIZE;
                let n32 = u32::try_from(n).map_err(|_| SimError::Unsupported {
                    at: at(loc),
                    what: "random touch of more than 2^32 pages".into(),
                })?;
                for i in foliosim_scenario::random_order(n32, seed) {
                    one(self, start + i as u64 * PAGE_SIZE)?;
                }
            }
        }
        if unit == TouchUnit::Word {
            self.word_loads(len, pattern);
        }
        Ok(())
    }

    /// The loads of a word touch (`unit = "word"`) beyond the first access
    /// of each page, which `touch` made through the simulated CPU: they
    /// cannot fault (the page is mapped and the touch only reads), so they
    /// are counted, not walked, and priced by the cost profile by order
    /// (`sim/user_loads` streaming, `sim/user_loads_random` one miss each).
    fn word_loads(&mut self, len: u64, pattern: Pattern) {
        let further = (len / PAGE_SIZE) * FURTHER_WORDS;
        let sim = &mut self.k.vmstat.sim;
        match pattern {
            Pattern::Random { .. } => sim.user_loads_random += further,
            _ => sim.user_loads += further,
        }
    }
}

/// The load size of a word touch.
const WORD_SIZE: u64 = 8;

/// The loads of a word touch after the first of each page.
const FURTHER_WORDS: u64 = PAGE_SIZE / WORD_SIZE - 1;

fn madv(a: Advice, loc: &foliosim_scenario::Loc) -> Result<Madv, SimError> {
    Ok(match a {
        Advice::Hugepage => Madv::Hugepage,
        Advice::Nohugepage => Madv::Nohugepage,
        Advice::Dontneed => Madv::Dontneed,
        Advice::Random => Madv::Random,
        Advice::Sequential => Madv::Sequential,
        Advice::Normal => Madv::Normal,
        Advice::Pageout => Madv::Pageout,
        Advice::Cold => Madv::Cold,
        Advice::Free => Madv::Free,
        Advice::Willneed => {
            return Err(SimError::Unsupported {
                at: at(loc),
                what: format!(
                    "madvise({}) (swap and page-cache readahead on advice are not modelled)",
                    a.as_str()
                ),
            })
        }
    })
}
