//! `ccm-assets graph`: the asset graph as text or Graphviz DOT.

use std::fmt::Write as _;

use super::Graph;

/// One line per asset in registration order: `id (Name) <- parent, parent`.
pub fn text(graph: &Graph) -> String {
    let width = graph.ids().iter().map(|id| id.len()).max().unwrap_or(0);
    let mut out = String::new();
    for id in graph.ids() {
        let asset = graph.get(id).expect("ids are registered");
        let deps = asset.dependencies();
        let _ = write!(out, "{id:<width$}  {}", asset.name());
        if !deps.is_empty() {
            let _ = write!(out, "  <- {}", deps.join(", "));
        }
        out.push('\n');
    }
    out
}

/// A `digraph` with an edge from each dependency to its dependent.
pub fn dot(graph: &Graph) -> String {
    let mut out = String::from("digraph assets {\n  rankdir=LR;\n  node [shape=box];\n");
    for id in graph.ids() {
        let asset = graph.get(id).expect("ids are registered");
        let _ = writeln!(out, "  {id:?} [label={:?}];", format!("{}\n{id}", asset.name()));
    }
    for id in graph.ids() {
        for dep in graph.get(id).expect("ids are registered").dependencies() {
            let _ = writeln!(out, "  {dep:?} -> {id:?};");
        }
    }
    out.push_str("}\n");
    out
}
