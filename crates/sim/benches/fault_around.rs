//! Simulated page touches per second on the seed 001 workloads.
//!
//! Set-up (a 16 GiB file with a warm order-0 page cache, mapped) is outside
//! the timed region; the timed region is the measured phase: one read of
//! every page, through the simulated MMU and the fault paths.
//!
//! Run: `cargo bench -p foliosim-sim --bench fault_around`

use divan::counter::ItemsCount;
use divan::Bencher;
use foliosim_hw::{Cpu, TaskFaults};
use foliosim_kernel::mm::mmap::{MmapArgs, VmaKind};
use foliosim_kernel::{Config, Kernel, MmId, X86_64};

fn main() {
    divan::main();
}

struct Setup {
    k: Kernel<X86_64>,
    mm: MmId,
    addr: u64,
}

fn setup(file_size: u64, fault_around_bytes: u64) -> Setup {
    let cfg = Config {
        memory: file_size + (1 << 30),
        fault_around_bytes,
        read_ahead_kb: 8192,
        ..Config::default()
    };
    let mut k = Kernel::<X86_64>::new(cfg).unwrap();
    let f = k.create_file("data", file_size);
    k.fill_by_write(f, 4096).unwrap();
    let mm = k.mm_alloc();
    let args = MmapArgs {
        addr: 0,
        len: file_size,
        prot_read: true,
        prot_write: false,
        prot_exec: false,
        shared: false,
        kind: VmaKind::File,
        file: Some(f),
        offset: 0,
        noreplace: false,
    };
    let addr = k.do_mmap(mm, args).unwrap();
    Setup { k, mm, addr }
}

fn touch_all(mut s: Setup, order: &[u32]) -> Setup {
    let mut cpu = Cpu::default();
    let mut faults = TaskFaults::default();
    for &i in order {
        cpu.access(
            &mut s.k,
            s.mm,
            s.addr + (i as u64) * 4096,
            false,
            &mut faults,
        )
        .unwrap();
    }
    s
}

/// Seed 001, 16 GiB sequential, fault-around 64 KiB (the 6.18 default).
#[divan::bench(sample_count = 5, sample_size = 1)]
fn seq_16g_fault_around_64k(b: Bencher) {
    let order: Vec<u32> = (0..(16u32 << 18)).collect();
    b.counter(ItemsCount::new(order.len()))
        .with_inputs(|| setup(16 << 30, 65536))
        .bench_local_values(|s| touch_all(s, &order));
}

/// Seed 001, 16 GiB sequential, fault-around off (one fault per page).
#[divan::bench(sample_count = 3, sample_size = 1)]
fn seq_16g_fault_around_off(b: Bencher) {
    let order: Vec<u32> = (0..(16u32 << 18)).collect();
    b.counter(ItemsCount::new(order.len()))
        .with_inputs(|| setup(16 << 30, 4096))
        .bench_local_values(|s| touch_all(s, &order));
}

/// Seed 001, 1 GiB random order, fault-around 64 KiB.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn random_1g_fault_around_64k(b: Bencher) {
    let order = foliosim_scenario::random_order(1 << 18, 1);
    b.counter(ItemsCount::new(order.len()))
        .with_inputs(|| setup(1 << 30, 65536))
        .bench_local_values(|s| touch_all(s, &order));
}
