//! What this project's provider binaries accept on their command line, as the kubelet passes it
//! (a `CredentialProviderConfig`'s `args`).
//!
//! These are our flags, not the kubelet's contract: the contract (`kcp-kubelet`) names none of
//! them. The binaries (through `kcp_plugin::cli`), the checker and the kubelet emulation's
//! warnings (`kcp_kubelet_emulation::validate`) all read them from here, so a command line is
//! judged the same way by each.
//!
//! - [`flags`]: Go's flag and pflag syntax as each upstream parses it, a flag table per binary
//!   (its own flags, its upstream's klog flags, its positional words) and the strict check the
//!   binaries and the checker share.
//! - [`mirror`]: the `--registry-mirror SRC:DST` syntax ACR and ECR share, and the checker's
//!   reading of it from `args`.

pub mod flags;
pub mod mirror;
