//! Type names that explain themselves: none named like a standard trait (a `struct Sync` reads
//! as the marker trait wherever it is used), and within one crate no two types of one name (two
//! `Target`s make every `use` a guess; one module's per-platform twins are one type).

use std::collections::BTreeMap;

use super::sources::Crate;

/// Standard traits a type of ours must not be named after.
const STD_TRAITS: &[&str] = &[
    "AsMut",
    "AsRef",
    "Borrow",
    "Clone",
    "Copy",
    "Debug",
    "Default",
    "Deref",
    "Display",
    "Drop",
    "Eq",
    "Extend",
    "Fn",
    "FnMut",
    "FnOnce",
    "From",
    "FromStr",
    "Future",
    "Hash",
    "Into",
    "IntoIterator",
    "Iterator",
    "Ord",
    "PartialEq",
    "PartialOrd",
    "Read",
    "Seek",
    "Send",
    "Sized",
    "Sync",
    "ToOwned",
    "ToString",
    "TryFrom",
    "TryInto",
    "Unpin",
    "Write",
];

/// Every production type named like a standard trait, and every name two types of one crate
/// share, one line each, sorted.
pub fn confusing_names(crates: &[Crate]) -> Vec<String> {
    let mut found = Vec::new();
    for krate in crates {
        let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for module in &krate.modules {
            for item in &module.items {
                let name = match item {
                    syn::Item::Struct(i) => i.ident.to_string(),
                    syn::Item::Enum(i) => i.ident.to_string(),
                    syn::Item::Union(i) => i.ident.to_string(),
                    syn::Item::Trait(i) => i.ident.to_string(),
                    _ => continue,
                };
                if STD_TRAITS.contains(&name.as_str()) {
                    found.push(format!(
                        "{}: {name} is a standard trait's name",
                        module.file
                    ));
                }
                // One module may hold a type once per platform (`#[cfg(unix)]` and its twin).
                let files = seen.entry(name).or_default();
                if !files.contains(&module.file) {
                    files.push(module.file.clone());
                }
            }
        }
        for (name, files) in seen {
            if files.len() > 1 {
                found.push(format!("{}: {name} in {}", krate.name, files.join(", ")));
            }
        }
    }
    found.sort();
    found
}
