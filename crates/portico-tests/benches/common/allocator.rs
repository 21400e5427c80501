//! The allocator of the `portico` binary (jemalloc, see its `main.rs`), so
//! that a benchmark measures what production runs.

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
