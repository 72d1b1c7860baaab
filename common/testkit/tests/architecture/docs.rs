//! Doc comments that only restate a name: `/// The directory.` on a field `dir` tells a reader
//! nothing the name did not. Such a comment says why the item exists, what it holds (units,
//! where it comes from, what `None` means), or goes.
//!
//! Caught (see [`restates`]): a one-line doc comment on any item, field, variant or associated
//! item of production code that, with articles, `Its`, backticks, case and punctuation taken
//! out, is the item's name in other words.

use syn::visit::Visit;

use super::sources::{Crate, item_attrs};

/// Every doc comment that restates its item's name, as `file:line name: "comment"`, sorted.
pub fn restating_docs(crates: &[Crate]) -> Vec<String> {
    let mut found = Vec::new();
    for krate in crates {
        for module in &krate.modules {
            let mut finder = Finder {
                file: &module.file,
                found: &mut found,
            };
            for item in &module.items {
                if !matches!(item, syn::Item::Mod(_)) {
                    finder.visit_item(item);
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// The text of a doc comment made of exactly one `///` line.
fn one_line_doc(attrs: &[syn::Attribute]) -> Option<(String, usize)> {
    let docs: Vec<&syn::Attribute> = attrs.iter().filter(|a| a.path().is_ident("doc")).collect();
    let [doc] = docs.as_slice() else {
        return None;
    };
    let syn::Meta::NameValue(pair) = &doc.meta else {
        return None;
    };
    let syn::Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Str(text),
        ..
    }) = &pair.value
    else {
        return None;
    };
    Some((text.value().trim().to_owned(), text.span().start().line))
}

/// Lower-case letters and digits only.
fn squash(text: &str) -> String {
    text.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Words that add nothing after a name: `The field name.`, `The token itself.`, `The host as
/// configured.`.
const EMPTY_TAILS: &[&str] = &[
    "itself",
    "name",
    "value",
    "file",
    "code",
    "asgiven",
    "asconfigured",
];

/// Whether `doc` says no more than `name`: at most three words once an article or `Its` is taken
/// out, which are the name (`Client ID.` on `client_id`, `Static keys.` on `StaticKey`), the name
/// and an empty tail, or one word the name abbreviates or is abbreviated from (`The directory.` on
/// `dir`, `The role.` on `role_arn`).
pub fn restates(doc: &str, name: &str) -> bool {
    let mut words: Vec<&str> = doc.split_whitespace().collect();
    if words
        .first()
        .is_some_and(|w| matches!(w.to_ascii_lowercase().as_str(), "the" | "a" | "an" | "its"))
    {
        words.remove(0);
    }
    if words.is_empty() || words.len() > 3 {
        return false;
    }
    let said = squash(&words.join(" "));
    let name = squash(name);
    if said.is_empty() || name.is_empty() {
        return false;
    }
    let bare = said.strip_suffix('s').unwrap_or(&said);
    let tail_only = EMPTY_TAILS
        .iter()
        .any(|tail| said.strip_suffix(tail) == Some(name.as_str()));
    let one_word_form = words.len() == 1 && (said.starts_with(&name) || name.starts_with(&said));
    said == name || bare == name || tail_only || one_word_form
}

/// Walks items and records the restating doc comments it meets.
struct Finder<'a> {
    file: &'a str,
    found: &'a mut Vec<String>,
}

impl Finder<'_> {
    fn check(&mut self, attrs: &[syn::Attribute], name: &syn::Ident) {
        if let Some((doc, line)) = one_line_doc(attrs)
            && restates(&doc, &name.to_string())
        {
            self.found
                .push(format!("{}:{line} {name}: {doc:?}", self.file));
        }
    }
}

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let named = match item {
            syn::Item::Const(i) => Some(&i.ident),
            syn::Item::Enum(i) => Some(&i.ident),
            syn::Item::Fn(i) => Some(&i.sig.ident),
            syn::Item::Static(i) => Some(&i.ident),
            syn::Item::Struct(i) => Some(&i.ident),
            syn::Item::Trait(i) => Some(&i.ident),
            syn::Item::Type(i) => Some(&i.ident),
            _ => None,
        };
        if let Some(name) = named {
            self.check(item_attrs(item), name);
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_field(&mut self, field: &'ast syn::Field) {
        if let Some(name) = &field.ident {
            self.check(&field.attrs, name);
        }
        syn::visit::visit_field(self, field);
    }

    fn visit_variant(&mut self, variant: &'ast syn::Variant) {
        self.check(&variant.attrs, &variant.ident);
        syn::visit::visit_variant(self, variant);
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        self.check(&item.attrs, &item.sig.ident);
        syn::visit::visit_impl_item_fn(self, item);
    }

    fn visit_impl_item_const(&mut self, item: &'ast syn::ImplItemConst) {
        self.check(&item.attrs, &item.ident);
    }
}
