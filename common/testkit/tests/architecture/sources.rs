//! The production Rust sources of the workspace, read as module trees: each crate root
//! (`src/lib.rs`, `src/main.rs`) with the files its `mod` items load, parsed by `syn`.
//!
//! What counts as production: everything a crate root reaches, less `#[cfg(test)]` and
//! `#[cfg(fuzzing)]` items at any depth (and `cfg(any(..))` of only those), files named
//! `tests.rs`, the test kit and the fuzz crate. The checks see only what is left. Integration tests, examples and benches are never reached
//! from a crate root, so they are never read.

use std::path::{Path, PathBuf};

/// Workspace members whose sources are not production code.
pub const NOT_PRODUCTION: &[&str] = &["common/testkit"];

/// One module of a crate: its path from the crate root, the file it lives in and its items.
pub struct Module {
    /// `["provider", "config"]` for `crate::provider::config`; empty for the root.
    pub path: Vec<String>,
    /// The file, relative to the repository root (inline modules share their parent's).
    pub file: String,
    /// The module's own items, with test-only ones already taken out.
    pub items: Vec<syn::Item>,
}

/// One crate root and every production module it reaches.
pub struct Crate {
    /// `providers/ecr (bin)`: the member and which root.
    pub name: String,
    /// Every module, the root first.
    pub modules: Vec<Module>,
}

/// Whether an item's attributes make it test- or fuzz-only.
pub fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Meta>()
                .is_ok_and(|meta| cfg_is_test_only(&meta))
    })
}

/// `test`, `fuzzing`, or `any(..)` of only those.
fn cfg_is_test_only(meta: &syn::Meta) -> bool {
    match meta {
        syn::Meta::Path(path) => path.is_ident("test") || path.is_ident("fuzzing"),
        syn::Meta::List(list) if list.path.is_ident("any") => list
            .parse_args_with(
                syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
            )
            .is_ok_and(|inner| !inner.is_empty() && inner.iter().all(cfg_is_test_only)),
        _ => false,
    }
}

/// The workspace's `members` from the root Cargo.toml.
pub fn members(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let line = manifest
        .lines()
        .find(|line| line.starts_with("members"))
        .expect("the root Cargo.toml has a one-line members array");
    let open = line.find('[').unwrap();
    let close = line.rfind(']').unwrap();
    line[open + 1..close]
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_owned())
        .filter(|m| !m.is_empty())
        .collect()
}

/// Every production crate root of the workspace under `root`, parsed.
pub fn crates(root: &Path) -> Vec<Crate> {
    let mut out = Vec::new();
    for member in members(root) {
        if NOT_PRODUCTION.contains(&member.as_str()) {
            continue;
        }
        for (file, kind) in [("src/lib.rs", "lib"), ("src/main.rs", "bin")] {
            let path = root.join(&member).join(file);
            if path.exists() {
                let mut modules = Vec::new();
                load(root, &path, Vec::new(), true, &mut modules);
                out.push(Crate {
                    name: format!("{member} ({kind})"),
                    modules,
                });
            }
        }
    }
    out
}

/// Parses `file` as the module `path` and, recursively, the modules it declares.
fn load(root: &Path, file: &Path, path: Vec<String>, owns_dir: bool, out: &mut Vec<Module>) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    // `a.rs` keeps its children in `a/`; `lib.rs`, `main.rs` and `mod.rs` in their own directory.
    let dir: PathBuf = if owns_dir {
        file.parent().unwrap().to_path_buf()
    } else {
        file.with_extension("")
    };
    let shown = file
        .strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string();
    collect(root, &shown, &dir, path, parsed.items, out);
}

/// Adds the module `path` made of `items` (in `file`), and loads each child module.
fn collect(
    root: &Path,
    file: &str,
    dir: &Path,
    path: Vec<String>,
    items: Vec<syn::Item>,
    out: &mut Vec<Module>,
) {
    let mut items: Vec<syn::Item> = items
        .into_iter()
        .filter(|item| !test_only(item_attrs(item)))
        .collect();
    for item in &mut items {
        syn::visit_mut::VisitMut::visit_item_mut(&mut StripTests, item);
    }
    let children: Vec<syn::ItemMod> = items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Mod(module) => Some(module.clone()),
            _ => None,
        })
        .collect();
    out.push(Module {
        path: path.clone(),
        file: file.to_owned(),
        items,
    });
    for module in children {
        let name = module.ident.to_string();
        let mut child = path.clone();
        child.push(name.clone());
        match module.content {
            Some((_, inline)) => collect(root, file, &dir.join(&name), child, inline, out),
            None if name == "tests" => {}
            None if !path_attrs(&module.attrs).is_empty() => {
                // `#[path]` (or one per platform through `cfg_attr`) is relative to the file's
                // own directory; each platform's file is read as the same module.
                let here = root.join(file);
                for relative in path_attrs(&module.attrs) {
                    let target = here.parent().unwrap().join(relative);
                    load(root, &target, child.clone(), true, out);
                }
            }
            None => {
                let flat = dir.join(format!("{name}.rs"));
                if flat.exists() {
                    load(root, &flat, child, false, out);
                } else {
                    load(root, &dir.join(&name).join("mod.rs"), child, true, out);
                }
            }
        }
    }
}

/// The files a `mod` item's `#[path = ".."]` and `#[cfg_attr(.., path = "..")]` name.
fn path_attrs(attrs: &[syn::Attribute]) -> Vec<String> {
    let mut out = Vec::new();
    for attr in attrs {
        let metas: Vec<syn::Meta> = if attr.path().is_ident("path") {
            vec![attr.meta.clone()]
        } else if attr.path().is_ident("cfg_attr") {
            attr.parse_args_with(
                syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
            )
            .map(|list| list.into_iter().skip(1).collect())
            .unwrap_or_default()
        } else {
            Vec::new()
        };
        for meta in metas {
            if let syn::Meta::NameValue(pair) = meta
                && pair.path.is_ident("path")
                && let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(file),
                    ..
                }) = pair.value
            {
                out.push(file.value());
            }
        }
    }
    out
}

/// Takes test-only items out at every depth (methods of an `impl`, items inside a function or an
/// inline module), so the checks never see them.
struct StripTests;

impl syn::visit_mut::VisitMut for StripTests {
    fn visit_item_impl_mut(&mut self, item: &mut syn::ItemImpl) {
        item.items.retain(|i| match i {
            syn::ImplItem::Fn(f) => !test_only(&f.attrs),
            syn::ImplItem::Const(c) => !test_only(&c.attrs),
            syn::ImplItem::Type(t) => !test_only(&t.attrs),
            _ => true,
        });
        syn::visit_mut::visit_item_impl_mut(self, item);
    }

    fn visit_item_trait_mut(&mut self, item: &mut syn::ItemTrait) {
        item.items.retain(|i| match i {
            syn::TraitItem::Fn(f) => !test_only(&f.attrs),
            _ => true,
        });
        syn::visit_mut::visit_item_trait_mut(self, item);
    }

    fn visit_item_mod_mut(&mut self, item: &mut syn::ItemMod) {
        if let Some((_, items)) = &mut item.content {
            items.retain(|i| !test_only(item_attrs(i)));
        }
        syn::visit_mut::visit_item_mod_mut(self, item);
    }

    fn visit_block_mut(&mut self, block: &mut syn::Block) {
        block.stmts.retain(|s| match s {
            syn::Stmt::Item(i) => !test_only(item_attrs(i)),
            _ => true,
        });
        syn::visit_mut::visit_block_mut(self, block);
    }
}

/// The attributes of any item.
pub fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::ExternCrate(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::ForeignMod(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::TraitAlias(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}
