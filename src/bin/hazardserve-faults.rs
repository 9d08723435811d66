//! `hazardserve-faults`: the `hazardserve` command with its test-only fault points switched on
//! (`HAZARDSERVE_FAULT=...`, see the `fault-injection` feature in `Cargo.toml`). Built only with
//! that feature, which the integration tests enable; `cargo build` and `cargo install` make
//! `hazardserve` alone, which never reads `HAZARDSERVE_FAULT`. Being a binary of its own, a
//! test run's fault hooks are not lost when `cargo build --release` or `cargo run --release`
//! rebuilds `hazardserve` beside it.

fn main() -> std::process::ExitCode {
    hazardserve::enable_fault_injection();
    hazardserve::cli_main()
}
