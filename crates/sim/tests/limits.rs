//! Sizes and strides at the edge of the 64-bit address space: modelled
//! outcomes, never a wrap-around or an internal error.

mod common;

use common::*;
use foliosim_sim::SimError;

#[test]
fn a_mapping_larger_than_the_address_space_fails_with_enomem() {
    // __get_unmapped_area(): `len > TASK_SIZE` fails with ENOMEM before any
    // search, as mmap(2) of 2^64 - 4096 bytes does on the host.
    let sc = [system(""), mmap_anon("a", "18446744073709547520")].concat();
    match try_run_with(&sc, &[]) {
        Err(SimError::Syscall { what, .. }) => assert!(what.starts_with("ENOMEM"), "{what}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_stride_past_the_end_of_the_address_space_touches_once() {
    // The first access faults the first page; the next address would lie
    // beyond 2^64, so the touch ends there (it does not wrap around below
    // the region).
    let sc = [
        system(""),
        mmap_anon("a", "1M"),
        phase("touch"),
        touch(
            "a",
            "write",
            "pattern = \"stride\"\nstride = \"18446744073709547520\"",
        ),
    ]
    .concat();
    let r = run(&sc);
    assert_eq!(c(&r, "touch", "minor-faults"), 1);
}
