//! Function shape: no production function over [`MAX_FUNCTION_LINES`] lines, counted from
//! `fn` to the closing brace (doc comments and attributes above it apart), so each one can
//! be read on one screen (a nested function counts in its parent and on its own); and none that
//! returns `Option<bool>`, a three-way answer whose `None` only its doc comment explains (an enum
//! names each case).

use syn::visit::Visit;

use super::sources::Crate;

/// Most lines a production function may span.
pub const MAX_FUNCTION_LINES: usize = 100;

/// Every production function over the limit, as `file: name N lines`, sorted.
pub fn long_functions(crates: &[Crate]) -> Vec<String> {
    findings(crates).0
}

/// Every production function returning `Option<bool>`, as `file: name`, sorted.
pub fn tri_state_functions(crates: &[Crate]) -> Vec<String> {
    findings(crates).1
}

/// The long functions and the `Option<bool>` ones.
fn findings(crates: &[Crate]) -> (Vec<String>, Vec<String>) {
    let mut long = Vec::new();
    let mut tri_state = Vec::new();
    for krate in crates {
        for module in &krate.modules {
            let mut finder = Finder {
                file: &module.file,
                long: &mut long,
                tri_state: &mut tri_state,
            };
            for item in &module.items {
                // Child modules are modules of their own in `krate.modules`.
                if !matches!(item, syn::Item::Mod(_)) {
                    finder.visit_item(item);
                }
            }
        }
    }
    for list in [&mut long, &mut tri_state] {
        list.sort();
        list.dedup();
    }
    (long, tri_state)
}

/// Walks items and records the long functions it meets.
struct Finder<'a> {
    file: &'a str,
    long: &'a mut Vec<String>,
    tri_state: &'a mut Vec<String>,
}

impl Finder<'_> {
    fn check(&mut self, sig: &syn::Signature, body: &syn::Block) {
        let first = sig.fn_token.span.start().line;
        let last = body.brace_token.span.close().end().line;
        let lines = last + 1 - first;
        if lines > MAX_FUNCTION_LINES {
            self.long
                .push(format!("{}: {} {lines} lines", self.file, sig.ident));
        }
        if let syn::ReturnType::Type(_, ty) = &sig.output
            && is_option_bool(ty)
        {
            self.tri_state.push(format!("{}: {}", self.file, sig.ident));
        }
    }
}

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        self.check(&item.sig, &item.block);
        syn::visit::visit_item_fn(self, item);
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        self.check(&item.sig, &item.block);
        syn::visit::visit_impl_item_fn(self, item);
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if let Some(body) = &item.default {
            self.check(&item.sig, body);
        }
        syn::visit::visit_trait_item_fn(self, item);
    }
}

/// `Option<bool>`, however the path to `Option` is spelled.
fn is_option_bool(ty: &syn::Type) -> bool {
    let syn::Type::Path(path) = ty else {
        return false;
    };
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return false;
    };
    last.ident == "Option"
        && args.args.len() == 1
        && matches!(&args.args[0], syn::GenericArgument::Type(syn::Type::Path(inner)) if inner.path.is_ident("bool"))
}
