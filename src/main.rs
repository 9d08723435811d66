//! The `hazardserve` command: parses the command line and hands it to the library.

fn main() -> std::process::ExitCode {
    hazardserve::cli::main()
}
