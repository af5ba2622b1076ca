//! `op = "threads"` and `op = "join"` steps: threads of the main process,
//! each on its own simulated CPU.

use super::{Scope, StepChecker};
use crate::ast::{Range, Step, StepKind, ThreadAfter};
use crate::check::{Fields, PAGE_SIZE};
use crate::error::{Ctx, Result};
use crate::tree::{Node, Origin};

const AFTER: &[(&str, ThreadAfter)] = &[("spin", ThreadAfter::Spin), ("sleep", ThreadAfter::Sleep)];

/// The ops a thread may run.
const THREAD_OPS: &[&str] = &["touch", "madvise", "munmap"];

/// Validation state of threads.
pub(crate) struct ThreadState {
    /// `system.cpus`
    cpus: u32,
    /// The threads step whose threads have not been joined yet (path,
    /// where its `op` is).
    open: Option<(String, Origin)>,
    /// A thread's steps are being checked.
    pub in_thread: bool,
}

impl ThreadState {
    pub fn new(cpus: u32) -> ThreadState {
        ThreadState {
            cpus,
            open: None,
            in_thread: false,
        }
    }
}

impl StepChecker<'_> {
    /// Steps that cannot run while threads are alive: `fork` (only the
    /// calling thread would be copied) and `memcg` (moving a multi-threaded
    /// process); `forbidden` says whether this op is one.
    pub(super) fn threads_gate(&self, f: &Fields<'_>, op: &str, forbidden: bool) -> Result<()> {
        match &self.threads.open {
            Some((open, _)) if forbidden => {
                let msg = format!(
                    "op = {op:?} is not supported while the threads of {open} are alive; put it \
                     after their `op = \"join\"` step"
                );
                Err(f.err_at("op", msg))
            }
            _ => Ok(()),
        }
    }

    /// Every threads step was joined.
    pub(super) fn threads_joined(&self) -> Result<()> {
        match &self.threads.open {
            Some((open, origin)) => Err(self.ctx.err(
                origin,
                &format!("{open}.op"),
                format!(
                    "the threads started by {open} are never joined; add an `op = \"join\"` \
                     step after them"
                ),
            )),
            None => Ok(()),
        }
    }

    /// `op = "join"`
    pub(super) fn join(&mut self, f: &Fields<'_>) -> Result<StepKind> {
        if self.threads.open.take().is_none() {
            return Err(f.err_at(
                "op",
                "join without running threads (no earlier threads step)",
            ));
        }
        Ok(StepKind::Join)
    }

    /// `op = "threads"`: `count`, `after`, `[[step.thread]]`.
    pub(super) fn threads(
        &mut self,
        f: &Fields<'_>,
        scope: &mut Scope,
        top: bool,
    ) -> Result<StepKind> {
        if !top {
            return Err(f.err_at(
                "op",
                "threads are only allowed in top-level steps, not in a child",
            ));
        }
        if let Some((open, _)) = &self.threads.open {
            let msg = format!("the threads of {open} are still running; join them first");
            return Err(f.err_at("op", msg));
        }
        let count = f.req("count", Ctx::uint)?;
        let cpus = self.threads.cpus as u64;
        if count == 0 || count + 1 > cpus {
            let msg = format!(
                "count = {count}: each thread needs its own CPU besides the main thread's, so \
                 count must be from 1 to system.cpus - 1 = {}",
                cpus - 1
            );
            return Err(f.err_at("count", msg));
        }
        let after = f.opt("after", |c, n, p| c.choice(n, p, AFTER))?;
        let after = after.unwrap_or(ThreadAfter::Spin);
        let Some(node) = f.get("thread") else {
            return Err(f.err_at("thread", "missing key `thread` ([[step.thread]] tables)"));
        };
        let path = f.field("thread");
        let tables = self.ctx.array(node, &path, "an array of step tables")?;
        let count = count as u32;
        let mut threads: Vec<Vec<Step>> = vec![Vec::new(); count as usize];
        for (i, table) in tables.iter().enumerate() {
            let step_path = format!("{path}[{}]", i + 1);
            let op = table.get_str("op");
            if let Some(op) = op.filter(|op| !THREAD_OPS.contains(op)) {
                let msg = format!(
                    "op = {op:?} is not allowed inside a threads block; threads run: {}",
                    THREAD_OPS.join(", ")
                );
                let origin = table.get("op").map_or(&table.origin, |n| &n.origin);
                return Err(self.ctx.err(origin, &format!("{step_path}.op"), msg));
            }
            let split = split(self.ctx, table, &step_path)?;
            self.threads.in_thread = true;
            let step = self.step(table, &step_path, scope, false);
            self.threads.in_thread = false;
            let step = step?;
            for (t, steps) in threads.iter_mut().enumerate() {
                steps.push(self.slice(&step, t as u32, count, split, scope, table, &step_path)?);
            }
        }
        let origin = f.get("op").map_or(&f.table().origin, |n| &n.origin).clone();
        self.threads.open = Some((f.path().to_owned(), origin));
        Ok(StepKind::Threads {
            count,
            after,
            threads,
        })
    }

    /// Thread `t`'s copy of `step`: a split touch covers its slice.
    #[allow(clippy::too_many_arguments)]
    fn slice(
        &self,
        step: &Step,
        t: u32,
        count: u32,
        split: bool,
        scope: &Scope,
        table: &Node,
        path: &str,
    ) -> Result<Step> {
        let StepKind::Touch {
            region,
            access,
            pattern,
            range,
            unit,
            data,
        } = &step.kind
        else {
            return Ok(step.clone());
        };
        if !split {
            return Ok(step.clone());
        }
        if matches!(pattern, crate::Pattern::List(_)) {
            let origin = table.get("pattern").map_or(&table.origin, |n| &n.origin);
            let msg = "a touch with pattern = \"list\" cannot be split among threads (its \
                       pages are a list, not a range): set split = false";
            return Err(self.ctx.err(origin, &format!("{path}.split"), msg));
        }
        let size = scope.regions.get(region).copied().unwrap_or(0);
        let len = range.len.unwrap_or(size - range.offset);
        let pages = len / PAGE_SIZE;
        let per = pages / count as u64;
        if per == 0 {
            let msg = format!(
                "the touched range has {pages} pages, fewer than the {count} threads to split it \
                 among (set split = false to have every thread touch it all)"
            );
            let origin = table.get("len").map_or(&table.origin, |n| &n.origin);
            return Err(self.ctx.err(origin, &format!("{path}.len"), msg));
        }
        let first = per * t as u64;
        let n = if t + 1 == count { pages - first } else { per };
        Ok(Step {
            loc: step.loc.clone(),
            kind: StepKind::Touch {
                region: region.clone(),
                access: *access,
                pattern: pattern.clone(),
                range: Range {
                    offset: range.offset + first * PAGE_SIZE,
                    len: Some(n * PAGE_SIZE),
                },
                unit: *unit,
                data: *data,
            },
        })
    }
}

/// `split` of a thread's touch (default true).
fn split(ctx: &Ctx, table: &Node, path: &str) -> Result<bool> {
    match table.get("split") {
        None => Ok(true),
        Some(n) => {
            if table.get_str("op") != Some("touch") {
                let msg = "`split` applies to touch steps only";
                return Err(ctx.err(&n.origin, &format!("{path}.split"), msg));
            }
            ctx.boolean(n, &format!("{path}.split"))
        }
    }
}
