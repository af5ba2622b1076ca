//! The step interpreter, generic over the simulated architecture.

use std::collections::{BTreeMap, BTreeSet};

use foliosim_hw::{Cpu, TaskFaults};
use foliosim_kernel::include::linux::pgtable::{align_down, PAGE_SIZE, PMD_SIZE};
use foliosim_kernel::kernel::sched::CpuRun;
use foliosim_kernel::{Arch, Config, FileId, Kernel, KernelError, MmId, PageContent};
use foliosim_report::{Phase, Report};
use foliosim_scenario::{CacheFill, IoCall, PageData, Scenario};
use foliosim_uapi::{counters, Madv};
use foliosim_workload::{Op, Pat, Workload};

use crate::guarded::catch_model_limit;
use crate::SimError;

mod pagemap;

/// A phase being measured.
struct OpenPhase {
    name: String,
    /// The process that opened it (a fork's child for a child's phase):
    /// its regions give the phase's histograms and folio maps.
    mm: MmId,
    start: BTreeMap<String, u64>,
    /// Results of the phase's pagemap steps (`pagemap/<name>/...`).
    pagemap: BTreeMap<String, i64>,
    /// Raw entries of its pagemap steps with `raw = true`.
    pagemap_raw: BTreeMap<String, Vec<u64>>,
}

pub(crate) struct Engine<'w, A: Arch> {
    k: Kernel<A>,
    cpu: Cpu,
    wl: &'w Workload,
    files: Vec<FileId>,
    /// The open file (`struct file`) the processes do I/O steps through,
    /// per `[[file]]` that has any: opened before the first step, so every
    /// process shares it (as fork children share a descriptor).
    fds: Vec<Option<u32>>,
    /// The address of every region (by region number) once mapped.
    base: Vec<u64>,
    /// Named regions: (address, length), the same in every process; a
    /// later mmap of the same name takes the name over.
    regions: BTreeMap<String, (u64, u64)>,
    /// Named regions whose mmap asked for a folio map (`map = true`).
    mapped: BTreeSet<String>,
    faults: TaskFaults,
    phase: Option<OpenPhase>,
    phases: Vec<Phase>,
    check: bool,
    /// The CPUs of running threads (`cpu` is CPU 0's, the main thread's).
    thread_cpus: Vec<Cpu>,
    /// How many threads run and whether they sleep (`after = "sleep"`).
    threads: Option<(u32, bool)>,
    /// The step being executed (the innermost one: a fork child's or a
    /// thread's), where a model limit met inside it is reported.
    step: u32,
}

fn kerr(at: &str, e: KernelError) -> SimError {
    let at = at.to_string();
    match e {
        KernelError::Unsupported(what) => SimError::Unsupported { at, what },
        KernelError::Errno(errno, what) => SimError::Syscall {
            at,
            what: format!("{errno}: {what}"),
        },
    }
}

impl<'w, A: Arch> Engine<'w, A> {
    pub(crate) fn run(sc: &Scenario, wl: &'w Workload, cfg: Config) -> Result<Report, SimError> {
        let check = cfg.check_invariants;
        let file_loc = |i: usize| {
            sc.files
                .get(i)
                .map(|f| f.loc.to_string())
                .unwrap_or_default()
        };
        let mut k = Kernel::<A>::new(cfg).map_err(|e| SimError::Unsupported {
            at: "[system]".into(),
            what: match e {
                foliosim_kernel::KernelError::Unsupported(what) => what,
                e => e.to_string(),
            },
        })?;
        // The CPUs (and their per-CPU page lists) before the first process.
        k.set_nr_cpus(sc.system.cpus as usize);
        let root = k.mm_alloc();
        k.sched_switch(0, foliosim_kernel::kernel::sched::CpuRun::User(root));
        let mut e = Engine {
            k,
            cpu: Cpu::default(),
            wl,
            files: Vec::new(),
            fds: Vec::new(),
            base: vec![0; wl.regions.len()],
            regions: BTreeMap::new(),
            mapped: BTreeSet::new(),
            faults: TaskFaults::default(),
            phase: None,
            phases: Vec::new(),
            check,
            thread_cpus: Vec::new(),
            threads: None,
            step: 0,
        };
        for (i, f) in wl.files.iter().enumerate() {
            let res = catch_model_limit(|| e.create_file(f))
                .unwrap_or_else(|limit| Err(KernelError::Unsupported(limit.what)));
            res.map_err(|err| kerr(&file_loc(i), err))?;
            e.check_now(&file_loc(i))?;
        }
        e.fds = wl
            .io_files
            .iter()
            .zip(&e.files)
            .map(|(&io, &f)| io.then(|| e.k.open_file(f)))
            .collect();
        e.k.memcg_stats_start();
        for op in &wl.root {
            match catch_model_limit(|| e.exec(root, op)) {
                Ok(res) => {
                    res?;
                    // An OOM kill outside a user access (kswapd woken by a
                    // system call's allocation) ends the run at its step.
                    if e.k.take_oom_kill() {
                        return Err(SimError::Killed {
                            at: e.at(e.step).to_string(),
                            signal: foliosim_kernel::MIN_TTL_OOM_KILL,
                            addr: None,
                        });
                    }
                }
                Err(limit) => {
                    return Err(SimError::Unsupported {
                        at: e.at(e.step).to_string(),
                        what: limit.what,
                    })
                }
            }
        }
        e.end_phase();
        Ok(Report {
            scenario: sc.name.clone(),
            arch: A::NAME.to_string(),
            engine: "sim".into(),
            provenance: None,
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
        self.files.push(id);
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
        let mut c = self.k.vmstat().snapshot();
        c.insert("minor-faults".into(), self.faults.min_flt);
        c.insert("major-faults".into(), self.faults.maj_flt);
        for (n, (usage, peak)) in self.k.memcg_page_counters().into_iter().enumerate() {
            c.insert(format!("memcg/{n}/usage_bytes"), usage * PAGE_SIZE);
            c.insert(format!("memcg/{n}/peak_bytes"), peak * PAGE_SIZE);
        }
        for (n, swap) in self.k.memcg_swap_usage().into_iter().enumerate() {
            c.insert(format!("memcg/{n}/swap_bytes"), swap * PAGE_SIZE);
        }
        for (n, memsw) in self.k.memcg_memsw_counters().into_iter().enumerate() {
            if let Some((usage, peak)) = memsw {
                c.insert(format!("memcg/{n}/memsw_usage_bytes"), usage * PAGE_SIZE);
                c.insert(format!("memcg/{n}/memsw_peak_bytes"), peak * PAGE_SIZE);
            }
        }
        for ((name, _, _), v) in counters::MACHINE_LEVELS.iter().zip(self.k.machine_levels()) {
            c.insert(name.to_string(), v);
        }
        c
    }

    /// Phase `idx` of the workload starts (ending the open one).
    fn start_phase(&mut self, idx: u32, mm: MmId) {
        self.end_phase();
        // The engines read every cgroup's memory.stat at phase boundaries.
        self.k.memcg_read_stats();
        self.k.memcg_reset_watermarks();
        self.phase = Some(OpenPhase {
            name: self.wl.phases[idx as usize].clone(),
            mm,
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
                let start = if counters::is_level(k) {
                    0
                } else {
                    *open.start.get(k).unwrap_or(&0)
                };
                (k.clone(), *v as i64 - start as i64)
            })
            .collect();
        counters.extend(open.pagemap);
        let mut folios = BTreeMap::new();
        let mut maps = BTreeMap::new();
        if self.k.mm_alive(open.mm) {
            for (name, &(addr, len)) in &self.regions {
                folios.insert(
                    name.clone(),
                    self.k.folio_histogram(open.mm, addr, addr + len),
                );
                if self.mapped.contains(name) {
                    maps.insert(name.clone(), self.k.folio_map(open.mm, addr, addr + len));
                }
            }
        }
        self.phases.push(Phase {
            name: open.name,
            counters,
            folios,
            time: None,
            pagemap: open.pagemap_raw,
            maps,
        });
    }

    /// `file:line:col` of step `step`.
    fn at(&self, step: u32) -> &'w str {
        &self.wl.locs[step as usize]
    }

    /// The address range `(start, len)` of `offset`/`len` in `region`.
    fn range(&self, region: u32, offset: u64, len: u64) -> (u64, u64) {
        (self.base[region as usize] + offset, len)
    }

    /// The address range `(start, len)` a touch, madvise or munmap
    /// operates on.
    fn op_range(&self, op: &Op) -> (u64, u64) {
        let (region, offset, len) = op.region_range().expect("a region operation");
        self.range(region, offset, len)
    }

    /// One operation of process `mm`, then the checks that run after
    /// every step.
    fn exec(&mut self, mm: MmId, op: &Op) -> Result<(), SimError> {
        self.step = op.step();
        let at = self.at(op.step());
        self.k.set_current_cpu(self.cpu.id);
        // The step's task runs: MGLRU walks its mm again.
        self.k.lru_gen_use_mm(mm);
        match op {
            Op::Mmap {
                region,
                flags,
                prot,
                file,
                size,
                file_offset,
                advise,
                hint,
                ..
            } => {
                let file = file.map(|i| self.files[i as usize]);
                let addr = self
                    .k
                    .sys_mmap(mm, *hint, *size, *prot, *flags, file, *file_offset)
                    .map_err(|e| kerr(at, e))?;
                self.place_region(*region, addr, *size);
                self.advise_mapping(mm, addr, *size, advise, at)?;
            }
            Op::Touch {
                write,
                zero,
                data,
                pat,
                ..
            } => {
                let (start, len) = self.op_range(op);
                self.cpu.store_content = match data {
                    PageData::Store if *zero => PageContent::ZERO,
                    PageData::Store => PageContent::STORE,
                    PageData::Zero => PageContent::ZERO,
                    PageData::Repeated => PageContent::REPEATED,
                    PageData::Random { percent } => PageContent::random(*percent),
                };
                self.touch(mm, start..start + len, *write, pat, at)?;
            }
            Op::Madvise {
                advice,
                per_call,
                errno,
                ..
            } => {
                let (start, len) = self.op_range(op);
                self.madvise_per_call(mm, start, len, (*advice, *per_call, *errno), at)?;
            }
            Op::Munmap { .. } => {
                let (start, len) = self.op_range(op);
                self.k.sys_munmap(mm, start, len).map_err(|e| kerr(at, e))?;
            }
            Op::Mremap {
                region,
                new_region,
                old_len,
                new_len,
                flags,
                new_addr,
                ..
            } => {
                let old = self.base[*region as usize];
                let addr = (self.k)
                    .sys_mremap(mm, old, *old_len, *new_len, *flags, *new_addr)
                    .map_err(|e| kerr(at, e))?;
                // The entries moved: the CPU's walk cache and speculative
                // state describe the old ones.
                self.cpu.flush();
                self.place_region(*new_region, addr, *new_len);
            }
            Op::Fork { child, .. } => self.fork(mm, op.step(), child, at)?,
            Op::Wait { .. } => self.wait(mm),
            Op::Phase { idx, .. } => self.start_phase(*idx, mm),
            Op::PhaseEnd { .. } => self.end_phase(),
            Op::Memcg { cg, .. } => {
                let decl = &self.wl.memcgs[*cg as usize];
                let (limit, zswap_max) = (decl.limit, decl.zswap_max);
                let high = decl.high;
                let id = self
                    .k
                    .mem_cgroup_create(mm, limit)
                    .map_err(|e| kerr(at, e))?;
                if let Some(bytes) = zswap_max {
                    self.k.mem_cgroup_set_zswap_max(id, bytes);
                }
                if let Some(bytes) = decl.swap_max {
                    self.k.mem_cgroup_set_swap_max(id, bytes);
                }
                if let Some(bytes) = decl.swap_high {
                    self.k.mem_cgroup_set_swap_high(id, bytes);
                }
                if let Some(bytes) = decl.memsw_limit {
                    self.k.mem_cgroup_set_memsw_max(id, bytes);
                }
                if high.is_some() {
                    self.k.memory_high_write(id, high);
                }
                if decl.min != 0 || decl.low != 0 {
                    self.k.mem_cgroup_set_protection(id, decl.min, decl.low);
                }
            }
            Op::MemcgReclaim {
                amount, swappiness, ..
            } => self.memcg_reclaim(mm, *amount, *swappiness, at),
            Op::ForceEmpty { .. } => self.force_empty(mm),
            Op::MemcgLimit { limit, .. } => self.memcg_limit(mm, *limit, at),
            Op::MemcgHigh { high, .. } => {
                let memcg = self.k.mm_memcg(mm);
                self.k.memory_high_write(memcg, *high);
            }
            Op::Io {
                file,
                call,
                offset,
                len,
                chunk,
                count,
                fsync,
                ..
            } => {
                let io = IoRange::new(*offset, *len, *chunk, *count);
                self.io(mm, *file, *call, io, *fsync, at)?;
            }
            Op::Pagemap { idx, .. } => self.pagemap(mm, *idx, at)?,
            Op::Threads { sleep, threads, .. } => self.run_threads(mm, *sleep, threads)?,
            Op::Join { .. } => self.join(mm),
            Op::Khugepaged { full_scans, .. } => self
                .k
                .khugepaged_run(u64::from(*full_scans))
                .map_err(|e| kerr(at, e))?,
        }
        // Back in user space after the step's system call.
        self.k.resume_user_mode_work(mm);
        self.check_now(at)
    }

    /// The region an mmap made: its address for later steps, and whether
    /// its folio map is reported (a later mmap of the same name takes the
    /// name over).
    fn place_region(&mut self, region: u32, addr: u64, size: u64) {
        self.base[region as usize] = addr;
        let wl = self.wl;
        let decl = &wl.regions[region as usize];
        self.regions.insert(decl.name.clone(), (addr, size));
        if decl.map {
            self.mapped.insert(decl.name.clone());
        } else {
            self.mapped.remove(&decl.name);
        }
    }

    /// The advice of an mmap step, applied to the whole new mapping.
    fn advise_mapping(
        &mut self,
        mm: MmId,
        addr: u64,
        size: u64,
        advise: &[Madv],
        at: &str,
    ) -> Result<(), SimError> {
        for &a in advise {
            let res = self.k.do_madvise(mm, addr, size, a);
            self.take_gup_faults();
            res.map_err(|e| kerr(at, e))?;
        }
        Ok(())
    }

    /// A madvise step: one madvise(2) per `per_call` bytes, ascending, the
    /// last one shorter.
    fn madvise_per_call(
        &mut self,
        mm: MmId,
        start: u64,
        len: u64,
        (advice, per_call, errno): (Madv, u64, Option<&'static str>),
        at: &str,
    ) -> Result<(), SimError> {
        let chunk = per_call.max(1);
        let mut done = 0;
        loop {
            let n = chunk.min(len - done);
            let res = self.k.sys_madvise(mm, start + done, n, advice.raw());
            self.k.resume_user_mode_work(mm);
            self.take_gup_faults();
            match (res, errno) {
                (Err(KernelError::Errno(got, _)), Some(want)) if got == want => return Ok(()),
                (res, _) => res.map_err(|e| kerr(at, e))?,
            }
            done += n;
            if done >= len {
                return match errno {
                    Some(want) => Err(SimError::Syscall {
                        at: at.to_string(),
                        what: format!("madvise(2) succeeded where the step expects {want}"),
                    }),
                    None => Ok(()),
                };
            }
        }
    }

    /// A fork step: the child's mm is a copy of `mm` (dup_mm()), and the
    /// child runs its steps on the parent's CPU while the parent waits.
    fn fork(&mut self, mm: MmId, step: u32, child: &[Op], at: &str) -> Result<(), SimError> {
        let c = self.k.dup_mm(mm).map_err(|e| kerr(at, e))?;
        self.check_now(at)?;
        self.k.sched_switch(self.cpu.id, CpuRun::User(c));
        for s in child {
            self.exec(c, s)?;
        }
        // Back in the parent: a model limit from here on is the fork step's.
        self.step = step;
        self.k.sched_switch(self.cpu.id, CpuRun::User(mm));
        Ok(())
    }

    /// A force_empty step: everything of the process's memory cgroup is
    /// reclaimed.
    fn force_empty(&mut self, mm: MmId) {
        let memcg = self.k.mm_memcg(mm);
        self.k.mem_cgroup_force_empty(memcg);
    }

    /// A memcg_limit step; a refused limit is a note, not an error.
    fn memcg_limit(&mut self, mm: MmId, limit: Option<u64>, at: &str) {
        let memcg = self.k.mm_memcg(mm);
        let pages = limit.map(|l| l / PAGE_SIZE);
        if let Err(e) = self.k.mem_cgroup_resize_max(memcg, pages) {
            foliosim_uapi::note!("{at}: note: writing the limit failed ({e}); the run goes on");
        }
    }

    /// An I/O step: `count` passes over its range, then fsync(2) if asked.
    fn io(
        &mut self,
        mm: MmId,
        file: u32,
        call: IoCall,
        io: IoRange,
        fsync: bool,
        at: &str,
    ) -> Result<(), SimError> {
        let fd = self.fds[file as usize].expect("an I/O file is open");
        for _ in 0..io.count {
            self.io_pass(mm, fd, call, io).map_err(|e| kerr(at, e))?;
        }
        if fsync {
            self.k.sys_fsync(mm, fd);
        }
        Ok(())
    }

    /// One pass of an I/O step: calls of `chunk` bytes over the range
    /// (read and write after an lseek to its start).
    fn io_pass(&mut self, mm: MmId, fd: u32, call: IoCall, r: IoRange) -> Result<(), KernelError> {
        if matches!(call, IoCall::Read | IoCall::Write) {
            self.k.sys_lseek(fd, r.offset);
        }
        let mut done = 0;
        while done < r.len {
            let n = r.chunk.min(r.len - done);
            let pos = r.offset + done;
            let got = match call {
                IoCall::Read => self.k.sys_read(mm, fd, n)?,
                IoCall::Pread => self.k.sys_pread64(mm, fd, n, pos)?,
                IoCall::Write => self.k.sys_write(mm, fd, n)?,
                IoCall::Pwrite => self.k.sys_pwrite64(mm, fd, n, pos)?,
            };
            self.k.resume_user_mode_work(mm);
            if got == 0 {
                break;
            }
            done += got;
        }
        Ok(())
    }

    /// `memcg_reclaim`: write the amount to memory.reclaim of the process's
    /// cgroup. Like the native engine, a short reclaim (-EAGAIN) is a note,
    /// not an error.
    fn memcg_reclaim(&mut self, mm: MmId, amount: u64, swappiness: Option<u32>, at: &str) {
        let memcg = self.k.mm_memcg(mm);
        let swappiness = swappiness.map(u64::from);
        if let Err(got) = self.k.memory_reclaim(memcg, amount / PAGE_SIZE, swappiness) {
            foliosim_uapi::note!(
                "{at}: note: memory.reclaim reclaimed {got} of {} pages (EAGAIN); the run goes on",
                amount / PAGE_SIZE
            );
        }
    }

    /// `threads`: thread `i` runs its steps on CPU `i + 1`, one thread after
    /// the other, then spins there (its mm stays loaded) or sleeps (its CPU
    /// idles in lazy TLB mode).
    fn run_threads(&mut self, mm: MmId, sleep: bool, threads: &[Vec<Op>]) -> Result<(), SimError> {
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
            if sleep {
                self.k.sched_switch(self.cpu.id, CpuRun::Idle);
            }
            std::mem::swap(&mut self.cpu, &mut self.thread_cpus[i]);
            res?;
        }
        self.k.set_current_cpu(self.cpu.id);
        self.threads = Some((threads.len() as u32, sleep));
        Ok(())
    }

    /// `join`: each thread (woken first if it slept) exits; its CPU idles
    /// lazily on the mm, which stays in `mm_cpumask()`.
    fn join(&mut self, mm: MmId) {
        if let Some((count, sleep)) = self.threads.take() {
            for cpu in 1..=count as usize {
                if sleep {
                    self.k.sched_switch(cpu, CpuRun::User(mm));
                }
                self.k.sched_switch(cpu, CpuRun::Exited);
            }
        }
        self.thread_cpus.clear();
        self.k.set_current_cpu(self.cpu.id);
    }

    /// The faults get_user_pages() took for the running task
    /// (MADV_POPULATE_*) count as its own (mm_account_fault() charges
    /// `current`), without a CPU exception.
    fn take_gup_faults(&mut self) {
        let gup = self.k.take_gup_faults();
        self.faults.min_flt += gup.min_flt;
        self.faults.maj_flt += gup.maj_flt;
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
        pat: &Pat,
        at: &str,
    ) -> Result<(), SimError> {
        let std::ops::Range { start, end } = range;
        let len = end - start;
        // The native loop of a sequential word touch reads the rest of a
        // page before the next page's first word.
        let between = match pat {
            Pat::SeqWords => FURTHER_WORDS,
            _ => 0,
        };
        self.cpu.set_loads_between(between);
        let one = |e: &mut Self, addr: u64| {
            e.cpu
                .access(&mut e.k, mm, addr, write, &mut e.faults)
                .map_err(|err| SimError::Killed {
                    at: at.to_string(),
                    signal: err.signal,
                    addr: Some(err.addr),
                })
        };
        match pat {
            Pat::Seq | Pat::SeqWords => {
                let mut a = start;
                while a < end {
                    one(self, a)?;
                    a += PAGE_SIZE;
                }
            }
            Pat::Stride(stride) => {
                let mut a = start;
                while a < end {
                    one(self, a)?;
                    // A stride past the end of the address space ends the
                    // touch, as it does natively.
                    a = a.saturating_add(*stride);
                }
            }
            Pat::OnePerPt => {
                let mut a = start;
                while a < end {
                    one(self, a)?;
                    a = align_down(a, PMD_SIZE) + PMD_SIZE;
                }
            }
            Pat::Random(order) | Pat::RandomWords(order) => {
                for &i in order {
                    one(self, start + i as u64 * PAGE_SIZE)?;
                }
            }
        }
        // The loads of a word touch beyond the first access of each page,
        // which the loop above made through the simulated CPU: they cannot
        // fault (the page is mapped and the touch only reads), so they are
        // counted, not walked, and priced by the cost profile by order
        // (`sim/user_loads` streaming, `sim/user_loads_random` one miss
        // each).
        let further = (len / PAGE_SIZE) * FURTHER_WORDS;
        let sim = &mut self.k.vmstat_mut().sim;
        match pat {
            Pat::SeqWords => sim.user_loads += further,
            Pat::RandomWords(_) => sim.user_loads_random += further,
            _ => {}
        }
        Ok(())
    }
}

/// The range, call size and number of passes of an I/O step.
#[derive(Clone, Copy)]
struct IoRange {
    offset: u64,
    len: u64,
    chunk: u64,
    count: u32,
}

impl IoRange {
    fn new(offset: u64, len: u64, chunk: u64, count: u32) -> IoRange {
        IoRange {
            offset,
            len,
            chunk,
            count,
        }
    }
}

/// The load size of a word touch.
const WORD_SIZE: u64 = 8;

/// The loads of a word touch after the first of each page.
const FURTHER_WORDS: u64 = PAGE_SIZE / WORD_SIZE - 1;
