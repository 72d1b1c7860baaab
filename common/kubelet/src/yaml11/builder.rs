//! From yaml-rust2's events to the value go-yaml v2 decodes: scalars resolved ([`super::scalar`]),
//! anchors and aliases expanded within go-yaml's aliasing limit, `<<` merge keys applied, and a
//! repeated key kept (the last one wins) and noted for strict readers.

use yaml_rust2::parser::{Event, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use super::json::go_value;
use super::scalar::{resolve_plain, resolve_tagged};
use super::{Document, Entry, Node};

/// An open collection while the events are read.
enum Frame {
    Seq {
        items: Vec<Node>,
        anchor: usize,
    },
    Map {
        entries: Vec<Entry>,
        key: Option<(Node, bool)>,
        anchor: usize,
    },
}

/// go-yaml's limit on alias expansion (“document contains excessive aliasing”): past 1,000 decoded
/// values, at most 99% of them may come from aliases (less in very large documents).
fn excessive_aliasing(decoded: usize, aliased: usize) -> bool {
    let allowed = match decoded {
        ..=400_000 => 0.99,
        4_000_000.. => 0.10,
        n => 0.99 - 0.89 * ((n - 400_000) as f64 / 3_600_000.0),
    };
    aliased > 100 && decoded > 1000 && aliased as f64 / decoded as f64 > allowed
}

fn size(node: &Node) -> usize {
    match node {
        Node::Seq(items) => 1 + items.iter().map(size).sum::<usize>(),
        Node::Map(entries) => {
            1 + entries
                .iter()
                .map(|e| size(&e.key) + size(&e.value))
                .sum::<usize>()
        }
        _ => 1,
    }
}

/// Turns yaml-rust2's events into a [`Node`] as go-yaml v2 decodes them.
pub(super) struct Builder {
    stack: Vec<Frame>,
    anchors: std::collections::HashMap<usize, Node>,
    open_anchors: Vec<usize>,
    duplicates: Vec<String>,
    root: Option<Node>,
    decoded: usize,
    aliased: usize,
}

impl Builder {
    /// A builder before the first event.
    pub(super) fn new() -> Self {
        Builder {
            stack: Vec::new(),
            anchors: std::collections::HashMap::new(),
            open_anchors: Vec::new(),
            duplicates: Vec::new(),
            root: None,
            decoded: 0,
            aliased: 0,
        }
    }

    /// The document read so far: its first value ([`Node::Null`] if none) and the repeated keys.
    pub(super) fn finish(self) -> Document {
        Document {
            root: self.root.unwrap_or(Node::Null),
            duplicates: self.duplicates,
        }
    }

    fn scalar(
        &mut self,
        text: String,
        style: TScalarStyle,
        anchor: usize,
        tag: Option<&Tag>,
        line: usize,
    ) -> Result<(), String> {
        let tag = tag.map(|t| format!("{}{}", t.handle, t.suffix));
        let plain = style == TScalarStyle::Plain;
        // A plain `<<` (or one tagged `!!merge`) is the merge key.
        let merge = text == "<<"
            && match tag.as_deref() {
                None => plain,
                Some(t) => t == "tag:yaml.org,2002:merge",
            };
        self.decoded += 1;
        let node = match tag.as_deref() {
            Some(t) => resolve_tagged(t, &text)?,
            None if plain => resolve_plain(&text),
            None => Node::Str(text),
        };
        self.insert(node, anchor, line, merge)
    }

    fn insert(
        &mut self,
        node: Node,
        anchor: usize,
        line: usize,
        merge: bool,
    ) -> Result<(), String> {
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map { key, entries, .. }) => match key.take() {
                None => {
                    if matches!(node, Node::Seq(_) | Node::Map(_)) {
                        return Err(format!("yaml: invalid map key: {}", go_value(&node)));
                    }
                    *key = Some((node, merge));
                }
                Some((_, true)) => {
                    let sources: Vec<&Node> = match &node {
                        Node::Map(_) => vec![&node],
                        // Earlier maps take precedence: they are merged last.
                        Node::Seq(items) if items.iter().all(|i| matches!(i, Node::Map(_))) => {
                            items.iter().rev().collect()
                        }
                        _ => {
                            return Err(
                                "yaml: map merge requires map or sequence of maps as the value"
                                    .to_owned(),
                            );
                        }
                    };
                    for source in sources {
                        if let Node::Map(merged) = source {
                            for e in merged {
                                set(entries, &mut self.duplicates, e.clone());
                            }
                        }
                    }
                }
                Some((k, false)) => set(
                    entries,
                    &mut self.duplicates,
                    Entry {
                        key: k,
                        value: node,
                        line,
                    },
                ),
            },
        }
        Ok(())
    }

    /// Takes one event; an error ends the parse.
    pub(super) fn event(&mut self, event: Event, mark: Marker) -> Result<(), String> {
        let line = mark.line();
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                self.scalar(text, style, anchor, tag.as_ref(), line)?;
            }
            Event::SequenceStart(anchor, _) => {
                self.decoded += 1;
                self.open_anchors.push(anchor);
                self.stack.push(Frame::Seq {
                    items: Vec::new(),
                    anchor,
                });
            }
            Event::MappingStart(anchor, _) => {
                self.decoded += 1;
                self.open_anchors.push(anchor);
                self.stack.push(Frame::Map {
                    entries: Vec::new(),
                    key: None,
                    anchor,
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                self.open_anchors.pop();
                let (node, anchor) = match self.stack.pop() {
                    Some(Frame::Seq { items, anchor }) => (Node::Seq(items), anchor),
                    Some(Frame::Map {
                        entries, anchor, ..
                    }) => (Node::Map(entries), anchor),
                    None => return Err("yaml: unbalanced collection".to_owned()),
                };
                self.insert(node, anchor, line, false)?;
            }
            Event::Alias(id) => {
                if id > 0 && self.open_anchors.contains(&id) {
                    return Err("yaml: anchor value contains itself".to_owned());
                }
                let n = self
                    .anchors
                    .get(&id)
                    .map(size)
                    .ok_or_else(|| "yaml: unknown anchor referenced".to_owned())?;
                // Checked before the copy is made: the copy is what the limit guards.
                self.decoded += n;
                self.aliased += n;
                if excessive_aliasing(self.decoded, self.aliased) {
                    return Err("yaml: document contains excessive aliasing".to_owned());
                }
                let node = self.anchors.get(&id).cloned().unwrap_or(Node::Null);
                self.insert(node, 0, line, false)?;
            }
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd => {}
        }
        Ok(())
    }
}

/// Stores an entry as go-yaml's map does: a key already present is replaced (the non-strict
/// result) and noted (what strict decoding refuses).
fn set(entries: &mut Vec<Entry>, duplicates: &mut Vec<String>, entry: Entry) {
    match entries.iter_mut().find(|e| same_key(&e.key, &entry.key)) {
        Some(existing) => {
            duplicates.push(format!(
                "line {}: key {} already set in map",
                entry.line,
                go_value(&entry.key)
            ));
            existing.value = entry.value;
        }
        None => entries.push(entry),
    }
}

/// Go's `==` on two `interface{}` keys (NaN is never equal, not even to itself).
fn same_key(a: &Node, b: &Node) -> bool {
    match (a, b) {
        (Node::Float(x), Node::Float(y)) => x == y,
        _ => a == b,
    }
}
