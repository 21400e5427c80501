//! The report memory measurement ([`memory`]) with the C library's
//! allocator (glibc's `malloc`), the baseline for `report_memory`.
//!
//! `cargo bench -p portico-tests --bench report_memory --bench report_memory_glibc`

#[path = "common/report_memory.rs"]
mod memory;

fn main() {
    memory::run("glibc");
}
