//! The `hazardserve` command (the command line lives in the library's private `cli` module).

fn main() -> std::process::ExitCode {
    hazardserve::cli_main()
}
