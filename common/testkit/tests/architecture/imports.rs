//! Import circles: inside each crate, sibling modules name each other in one direction only,
//! so every module can be read knowing only the ones below it.
//!
//! A module names another through a `use` (anywhere in it) or a `crate::`/`super::`/`self::` path
//! in its code. A name imported into a module and named through it (`crate::Plan` where the
//! root has `pub use provider::Plan`) is followed to the module that holds it. `a::b` naming
//! `c` is an edge `a → c` between the two siblings under the crate root; a module naming its
//! own parent or child is not an edge (a parent holds its children's shared items).

use std::collections::{BTreeMap, BTreeSet};

use syn::spanned::Spanned;
use syn::visit::Visit;

use super::sources::Crate;

/// One reference from a module's code to a path in its crate.
struct Reference {
    /// The absolute path named, from the crate root.
    path: Vec<String>,
    /// `file:line`, for the report.
    at: String,
}

/// Every circle of sibling modules in `crates`, one line each, sorted.
pub fn circles(crates: &[Crate]) -> Vec<String> {
    let mut found = Vec::new();
    for krate in crates {
        let modules: BTreeSet<Vec<String>> = krate.modules.iter().map(|m| m.path.clone()).collect();
        let imports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = krate
            .modules
            .iter()
            .map(|m| (m.path.clone(), module_imports(m, &modules)))
            .collect();
        // (parent, from, to) → the first reference seen.
        let mut edges: BTreeMap<(Vec<String>, String, String), String> = BTreeMap::new();
        for module in &krate.modules {
            for reference in references(module, &modules) {
                let target = holder(&reference.path, &modules, &imports);
                let shared = module
                    .path
                    .iter()
                    .zip(&target)
                    .take_while(|(a, b)| a == b)
                    .count();
                if shared == module.path.len() || shared == target.len() {
                    continue; // itself, a parent or a child
                }
                let key = (
                    module.path[..shared].to_vec(),
                    module.path[shared].clone(),
                    target[shared].clone(),
                );
                edges.entry(key).or_insert(reference.at);
            }
        }
        found.extend(cycles(&krate.name, &edges));
    }
    found.sort();
    found
}

/// The names a module's top-level `use` items bring in, each with the absolute path it names.
fn module_imports(
    module: &super::sources::Module,
    modules: &BTreeSet<Vec<String>>,
) -> BTreeMap<String, Vec<String>> {
    let mut names = BTreeMap::new();
    for item in &module.items {
        if let syn::Item::Use(item) = item {
            for (name, path, _) in use_paths(&item.tree, Vec::new()) {
                if let (Some(name), Some(path)) = (name, absolute(&module.path, &path, modules)) {
                    names.insert(name, path);
                }
            }
        }
    }
    names
}

/// The paths of a use tree: `(name it binds, path, span)`; a glob binds no name.
fn use_paths(
    tree: &syn::UseTree,
    prefix: Vec<String>,
) -> Vec<(Option<String>, Vec<String>, proc_macro2::Span)> {
    let with = |ident: &syn::Ident| {
        let mut path = prefix.clone();
        if ident != "self" {
            path.push(ident.to_string());
        }
        path
    };
    match tree {
        syn::UseTree::Path(p) => use_paths(&p.tree, with(&p.ident)),
        syn::UseTree::Name(n) => {
            let path = with(&n.ident);
            let bound = path.last().cloned();
            vec![(bound, path, n.ident.span())]
        }
        syn::UseTree::Rename(r) => vec![(Some(r.rename.to_string()), with(&r.ident), r.span())],
        syn::UseTree::Glob(g) => vec![(None, prefix, g.span())],
        syn::UseTree::Group(g) => g
            .items
            .iter()
            .flat_map(|tree| use_paths(tree, prefix.clone()))
            .collect(),
    }
}

/// `path` as named from module `at`, from the crate root; `None` when it leaves the crate.
fn absolute(
    at: &[String],
    path: &[String],
    modules: &BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    let mut base = at.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        Some(first) => {
            // A relative path starts at a child module; anything else is another crate.
            let mut child = at.to_vec();
            child.push(first.to_owned());
            if !modules.contains(&child) {
                return None;
            }
        }
        None => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The module that holds what `path` names, following names imported into a module.
fn holder(
    path: &[String],
    modules: &BTreeSet<Vec<String>>,
    imports: &BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
) -> Vec<String> {
    let mut path = path.to_vec();
    for _ in 0..8 {
        let depth = (0..=path.len())
            .rev()
            .find(|&n| modules.contains(&path[..n]))
            .unwrap_or(0);
        let module = path[..depth].to_vec();
        let followed = path
            .get(depth)
            .and_then(|name| imports.get(&module)?.get(name))
            .cloned();
        match followed {
            Some(mut target) if target != path[..=depth] => {
                target.extend(path[depth + 1..].iter().cloned());
                path = target;
            }
            _ => return module,
        }
    }
    path
}

/// Every reference to the crate in a module's items (child modules apart).
fn references(module: &super::sources::Module, modules: &BTreeSet<Vec<String>>) -> Vec<Reference> {
    let mut walker = Walker {
        module,
        modules,
        found: Vec::new(),
    };
    for item in &module.items {
        if !matches!(item, syn::Item::Mod(_)) {
            walker.visit_item(item);
        }
    }
    walker.found
}

/// Collects references while walking a module's items.
struct Walker<'a> {
    module: &'a super::sources::Module,
    modules: &'a BTreeSet<Vec<String>>,
    found: Vec<Reference>,
}

impl Walker<'_> {
    fn add(&mut self, path: &[String], span: proc_macro2::Span) {
        if let Some(path) = absolute(&self.module.path, path, self.modules) {
            let at = format!("{}:{}", self.module.file, span.start().line);
            self.found.push(Reference { path, at });
        }
    }
}

impl<'ast> Visit<'ast> for Walker<'_> {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        for (_, path, span) in use_paths(&item.tree, Vec::new()) {
            self.add(&path, span);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if matches!(
            segments.first().map(String::as_str),
            Some("crate" | "super" | "self")
        ) {
            self.add(&segments, path.span());
        }
        syn::visit::visit_path(self, path);
    }
}

/// The circles among the edges of one crate, one line each: the modules, then each edge with
/// the first place it is made.
fn cycles(krate: &str, edges: &BTreeMap<(Vec<String>, String, String), String>) -> Vec<String> {
    let mut by_parent: BTreeMap<&Vec<String>, BTreeMap<&str, BTreeSet<&str>>> = BTreeMap::new();
    for (parent, from, to) in edges.keys() {
        by_parent
            .entry(parent)
            .or_default()
            .entry(from)
            .or_default()
            .insert(to);
    }
    let mut out = Vec::new();
    for (parent, graph) in by_parent {
        for component in strongly_connected(&graph) {
            let inside: BTreeSet<&str> = component.iter().copied().collect();
            let shown: Vec<String> = edges
                .iter()
                .filter(|((p, from, to), _)| {
                    p == parent && inside.contains(from.as_str()) && inside.contains(to.as_str())
                })
                .map(|((_, from, to), at)| format!("{from} → {to} ({at})"))
                .collect();
            let under = if parent.is_empty() {
                "crate".to_owned()
            } else {
                format!("crate::{}", parent.join("::"))
            };
            out.push(format!("{krate}: under {under}: {}", shown.join(", ")));
        }
    }
    out
}

/// The strongly connected components of more than one node (Tarjan's algorithm).
fn strongly_connected<'a>(graph: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<Vec<&'a str>> {
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(node: &'a str, graph: &BTreeMap<&'a str, BTreeSet<&'a str>>, s: &mut State<'a>) {
        let n = s.index.len();
        s.index.insert(node, n);
        s.low.insert(node, n);
        s.stack.push(node);
        s.on_stack.insert(node);
        for &next in graph.get(node).into_iter().flatten() {
            if !s.index.contains_key(next) {
                visit(next, graph, s);
                let low = s.low[node].min(s.low[next]);
                s.low.insert(node, low);
            } else if s.on_stack.contains(next) {
                let low = s.low[node].min(s.index[next]);
                s.low.insert(node, low);
            }
        }
        if s.low[node] == s.index[node] {
            let mut component = Vec::new();
            while let Some(top) = s.stack.pop() {
                s.on_stack.remove(top);
                component.push(top);
                if top == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut state = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for &node in graph.keys() {
        if !state.index.contains_key(node) {
            visit(node, graph, &mut state);
        }
    }
    state.out
}
