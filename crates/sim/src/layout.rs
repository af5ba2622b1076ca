//! The kernel model's mmap placement for compiling a scenario
//! ([`foliosim_workload::compile`]): every mmap, munmap, fork and wait of
//! the scenario runs through the model's system calls (`sys_mmap`,
//! `sys_munmap`, `dup_mm`, `exit_mmap`) on a small machine where nothing
//! faults, to learn the address each mapping gets without a hint
//! (`__get_unmapped_area()`: top-down, THP alignment).

use foliosim_kernel::{FileId, Kernel, MmId, X86_64};
use foliosim_scenario::Scenario;
use foliosim_workload::{CompileError, Placement, Workload};

/// The layout pass of one compile (see the module's documentation).
pub struct Layout {
    k: Kernel<X86_64>,
    cur: MmId,
    /// The parents of the processes being compiled, innermost last.
    parents: Vec<MmId>,
    files: Vec<FileId>,
}

/// The placement of the kernel model for `sc`: its `[[file]]`s exist,
/// one process without mappings is current.
pub fn layout(sc: &Scenario) -> Layout {
    let cfg = foliosim_kernel::Config {
        memory: 64 << 20,
        ..Default::default()
    };
    // A 64 MiB machine always boots; placement does not depend on the
    // architecture (same mmap base, 4 KiB granule).
    let mut k = Kernel::<X86_64>::new(cfg).expect("a 64 MiB model boots");
    let cur = k.mm_alloc();
    let files = sc
        .files
        .iter()
        .map(|f| k.create_file(&f.name, f.size))
        .collect();
    Layout {
        k,
        cur,
        parents: Vec::new(),
        files,
    }
}

/// Compile `sc` with the kernel model's placement: the one workload every
/// engine runs.
pub fn compile(sc: &Scenario) -> Result<Workload, CompileError> {
    // The layout pass runs the kernel model too: a limit met there (more
    // files than the model holds) is the scenario's.
    crate::guarded::catch_model_limit(|| foliosim_workload::compile(sc, &mut layout(sc)))
        .unwrap_or_else(|limit| {
            Err(CompileError {
                at: sc.name.clone(),
                what: limit.what,
            })
        })
}

impl Layout {
    /// The children of `mm` exit, as in the engines, so that the layout
    /// model does not keep every forked mm (and its page tables) for the
    /// rest of the scenario.
    fn reap(&mut self, mm: MmId) {
        let children = std::mem::take(&mut self.k.mm_mut(mm).children);
        for c in children {
            self.reap(c);
            self.k.exit_mmap(c);
        }
    }
}

impl Placement for Layout {
    fn mmap(
        &mut self,
        addr: u64,
        prot: i32,
        flags: i32,
        file: Option<u32>,
        size: u64,
        offset: u64,
    ) -> u64 {
        let file = file.map(|i| self.files[i as usize]);
        self.k
            .sys_mmap(self.cur, addr, size, prot, flags, file, offset)
            .unwrap_or(0)
    }

    fn munmap(&mut self, addr: u64, len: u64) {
        let _ = self.k.sys_munmap(self.cur, addr, len);
    }

    fn mremap(
        &mut self,
        addr: u64,
        old_len: u64,
        new_len: u64,
        flags: i32,
        new_addr: u64,
    ) -> Result<u64, String> {
        use foliosim_uapi::mman::*;
        if flags & MREMAP_FIXED != 0 && new_addr < addr + old_len && addr < new_addr + new_len {
            return Err(format!(
                "at = {new_addr:#x}: [{new_addr:#x}, {:#x}) overlaps the region's own range \
                 [{addr:#x}, {:#x}) (EINVAL)",
                new_addr + new_len,
                addr + old_len
            ));
        }
        if flags & MREMAP_FIXED != 0 {
            // The target must be free (the native workload checks the
            // host's own mappings at set-up the same way):
            // an inaccessible MAP_FIXED_NOREPLACE mapping there, unmapped
            // again.
            let probe = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE;
            match self
                .k
                .sys_mmap(self.cur, new_addr, new_len, 0, probe, None, 0)
            {
                Ok(a) => {
                    let _ = self.k.sys_munmap(self.cur, a, new_len);
                }
                Err(_) => {
                    return Err(format!(
                        "at = {new_addr:#x}: [{new_addr:#x}, {:#x}) overlaps a region an earlier \
                         step mapped (mremap's `at` never replaces a mapping)",
                        new_addr + new_len
                    ))
                }
            }
        }
        (self.k)
            .sys_mremap(self.cur, addr, old_len, new_len, flags, new_addr)
            .map_err(|e| e.to_string())
    }

    fn fork(&mut self) -> Result<(), String> {
        let child = self.k.dup_mm(self.cur).map_err(|e| e.to_string())?;
        self.parents.push(self.cur);
        self.cur = child;
        Ok(())
    }

    fn end_child(&mut self) {
        if let Some(parent) = self.parents.pop() {
            self.cur = parent;
        }
    }

    fn wait(&mut self) {
        self.reap(self.cur);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Forked children leave the layout model at a `wait`: a long run of
    /// fork + wait pairs on a small machine compiles (it ran out of memory
    /// for page tables when every child mm was kept).
    #[test]
    fn waited_children_leave_the_layout_model() {
        let mut text = String::from(
            "[system]\nmemory = \"64M\"\n[[step]]\nop = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = \"64K\"\n",
        );
        for _ in 0..20_000 {
            text += "[[step]]\nop = \"fork\"\n[[step]]\nop = \"wait\"\n";
        }
        let sc = foliosim_scenario::parse_str("t.toml", &text, &[]).expect("valid scenario");
        let p = compile(&sc).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.root.len(), 40_001);
    }

    /// `at` maps exactly there (MAP_FIXED_NOREPLACE), also above the
    /// model's mmap base and unaligned to the THP size of a file mapping
    /// (where a plain hint gives way to __thp_get_unmapped_area()'s
    /// padded search); a range an earlier region holds is refused at
    /// compile time.
    #[test]
    fn at_is_exact_or_refused() {
        let step = |r: &str, at: u64| {
            format!(
                "[[step]]\nop = \"mmap\"\nregion = \"{r}\"\nkind = \"file\"\nfile = \"f\"\n\
                 size = \"6M\"\nat = {at:#x}\n"
            )
        };
        let text = format!(
            "[[file]]\nname = \"f\"\nsize = \"8M\"\n{}{}",
            step("a", 0x7fff_f7a0_0000),
            step("b", 0x7fff_f7ff_0000)
        );
        let sc = foliosim_scenario::parse_str("t.toml", &text, &[]).expect("valid scenario");
        let e = compile(&sc).unwrap_err();
        assert!(e.what.contains("overlaps a region"), "{e}");
        let text = format!(
            "[[file]]\nname = \"f\"\nsize = \"8M\"\n{}{}",
            step("a", 0x7fff_f7a0_0000),
            step("b", 0x7fff_f800_0000)
        );
        let sc = foliosim_scenario::parse_str("t.toml", &text, &[]).expect("valid scenario");
        let w = compile(&sc).unwrap();
        let hints: Vec<u64> = (w.root.iter())
            .filter_map(|o| match o {
                foliosim_workload::Op::Mmap { hint, .. } => Some(*hint),
                _ => None,
            })
            .collect();
        assert_eq!(hints, [0x7fff_f7a0_0000, 0x7fff_f800_0000]);
    }

    /// mremap steps run through the layout: `at` on another region, or a
    /// growth the layout cannot do in place without `maymove` (ENOMEM in
    /// expand_vma()), is refused at compile time; `maymove` gives the
    /// model's placement (a 2 MiB anonymous mapping: THP-aligned).
    #[test]
    fn mremap_is_placed_or_refused_by_the_layout() {
        let base = "[[step]]\nop = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = \"64K\"\n\
                    [[step]]\nop = \"mmap\"\nregion = \"b\"\nkind = \"anon\"\nsize = \"64K\"\n";
        let compile_with = |step: &str| {
            let text = format!("{base}[[step]]\nop = \"mremap\"\nregion = \"b\"\n{step}");
            let sc = foliosim_scenario::parse_str("t.toml", &text, &[]).expect("valid scenario");
            compile(&sc)
        };
        let w = compile_with("size = \"64K\"\n").unwrap();
        let a = match &w.root[0] {
            foliosim_workload::Op::Mmap { hint, .. } => *hint,
            o => panic!("{o:?}"),
        };
        let e = compile_with(&format!("size = \"64K\"\nat = {a:#x}\n")).unwrap_err();
        assert!(e.what.contains("overlaps a region"), "{e}");
        // b lies right below a: it cannot grow in place.
        let e = compile_with("size = \"128K\"\n").unwrap_err();
        assert!(e.what.contains("ENOMEM"), "{e}");
        let w = compile_with("size = \"2M\"\nmaymove = true\n").unwrap();
        match &w.root[2] {
            foliosim_workload::Op::Mremap { expect, .. } => {
                assert!(*expect != 0 && *expect % (2 << 20) == 0, "{expect:#x}")
            }
            o => panic!("{o:?}"),
        }
    }

    /// Without a hint, the model places mappings top-down below the mmap
    /// base, and a 2 MiB anonymous mapping THP-aligned
    /// (`__thp_get_unmapped_area()`): so do the compiled hints.
    #[test]
    fn hints_are_the_models_top_down_placement() {
        let text = "[[step]]\nop = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = \"64K\"\n\
                    [[step]]\nop = \"mmap\"\nregion = \"b\"\nkind = \"anon\"\nsize = \"2M\"\n";
        let sc = foliosim_scenario::parse_str("t.toml", text, &[]).expect("valid scenario");
        let w = compile(&sc).unwrap();
        let hint = |i: usize| match &w.root[i] {
            foliosim_workload::Op::Mmap { hint, .. } => *hint,
            o => panic!("{o:?}"),
        };
        let (a, b) = (hint(0), hint(1));
        assert!(a > 0 && b > 0);
        assert!(b < a, "top-down: {b:#x} below {a:#x}");
        assert_eq!(b % (2 << 20), 0, "{b:#x} is PMD-aligned");
    }
}
