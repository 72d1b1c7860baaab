//! `credential-provider-check`: not built yet (issue 6).

fn main() -> std::process::ExitCode {
    eprintln!("credential-provider-check is not implemented yet");
    std::process::ExitCode::from(1)
}
