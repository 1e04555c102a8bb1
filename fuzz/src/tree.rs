//! A JSON document as a tree that keeps the order of object members and the text of
//! numbers, so that a description written back from it reads in the order the loader
//! meets it in a real file (`serde_json::Value` sorts members without `preserve_order`).

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// One JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A scalar (`null`, `true`, a number, a string), as JSON text.
    Scalar(String),
    /// An array.
    Array(Vec<Node>),
    /// An object, its members in order.
    Object(Vec<(String, Node)>),
}

impl Node {
    /// The number of nodes of this subtree, itself included (the numbering of
    /// [`mod@crate::json_gen`] is a preorder walk).
    #[must_use]
    pub fn size(&self) -> usize {
        1 + match self {
            Self::Scalar(_) => 0,
            Self::Array(items) => items.iter().map(Self::size).sum(),
            Self::Object(members) => members.iter().map(|(_, n)| n.size()).sum(),
        }
    }
}

/// The visitor building a [`Node`].
struct NodeVisitor;

/// A string as JSON text.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\""))
}

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Scalar("null".into()))
    }

    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        self.visit_unit()
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Scalar(
            serde_json::Number::from_f64(v).map_or_else(|| "null".to_string(), |n| n.to_string()),
        ))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Scalar(quoted(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(n) = seq.next_element()? {
            items.push(n);
        }
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut members = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Node>()? {
            members.push((k, v));
        }
        Ok(Node::Object(members))
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_keep_their_order_and_numbers_their_text() {
        let n: Node =
            serde_json::from_str(r#"{"b": [1, 2.5, null], "a": "x\"y", "c": true}"#).expect("json");
        let Node::Object(m) = &n else { panic!("{n:?}") };
        let keys: Vec<&str> = m.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "a", "c"]);
        assert_eq!(m[1].1, Node::Scalar(r#""x\"y""#.into()));
        assert_eq!(n.size(), 7);
    }
}
