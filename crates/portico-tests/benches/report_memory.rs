//! The report memory measurement ([`memory`]) with the allocator the
//! `portico` binary uses (jemalloc); `report_memory_glibc` is its baseline.
//!
//! `cargo bench -p portico-tests --bench report_memory --bench report_memory_glibc`

#[path = "common/allocator.rs"]
mod allocator;
#[path = "common/report_memory.rs"]
mod memory;

fn main() {
    memory::run("jemalloc");
}
