//! `acr-credential-provider`: not built yet (see the project's issues).

fn main() -> std::process::ExitCode {
    eprintln!("acr-credential-provider is not implemented yet");
    std::process::ExitCode::from(1)
}
