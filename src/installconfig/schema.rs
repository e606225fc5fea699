//! Known field names per path, read from the serde types themselves so they cannot drift.
//!
//! A probe `Deserializer` walks a type: every `deserialize_struct` call records its field names
//! under the current path, then feeds each field a default-ish value (`""`, `0`, one list
//! element, `Some`) so the walk reaches every nested struct. List elements are recorded under
//! `path[]`, whatever their index.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IntoDeserializer, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};

/// Field names per normalized path (`""` is the root, `compute[]` a list element).
pub(crate) type Schema = BTreeMap<String, &'static [&'static str]>;

/// Deeper than any install-config type; stops a recursive type from looping.
const MAX_DEPTH: usize = 32;

/// Walks `T` and returns the field names of every struct in it.
pub(crate) fn known_fields<T: for<'de> Deserialize<'de>>() -> Schema {
    let mut schema = Schema::new();
    // A type the probe cannot satisfy only yields a smaller schema (fewer suggestions).
    let _ = T::deserialize(Probe { path: String::new(), schema: &mut schema, depth: 0 });
    schema
}

/// Turns `compute[3].platform` into `compute[].platform`, the form [`Schema`] keys use.
pub(crate) fn normalize(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_index = true;
                out.push('[');
            }
            ']' => {
                in_index = false;
                out.push(']');
            }
            _ if in_index => {}
            c => out.push(c),
        }
    }
    out
}

#[derive(Debug)]
struct ProbeError(String);

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProbeError {}

impl de::Error for ProbeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self(msg.to_string())
    }
}

struct Probe<'a> {
    path: String,
    schema: &'a mut Schema,
    depth: usize,
}

impl Probe<'_> {
    fn child(&mut self, segment: &str) -> Result<Probe<'_>, ProbeError> {
        if self.depth >= MAX_DEPTH {
            return Err(ProbeError("type too deep to probe".to_owned()));
        }
        let path = if segment.starts_with('[') || self.path.is_empty() {
            format!("{}{segment}", self.path)
        } else {
            format!("{}.{segment}", self.path)
        };
        Ok(Probe { path, schema: self.schema, depth: self.depth + 1 })
    }
}

macro_rules! probe_with {
    ($($method:ident => $visit:ident($($value:expr)?);)*) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
            visitor.$visit($($value)?)
        })*
    };
}

impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = ProbeError;

    probe_with! {
        deserialize_any => visit_unit();
        deserialize_bool => visit_bool(false);
        deserialize_i8 => visit_i64(0);
        deserialize_i16 => visit_i64(0);
        deserialize_i32 => visit_i64(0);
        deserialize_i64 => visit_i64(0);
        deserialize_u8 => visit_u64(0);
        deserialize_u16 => visit_u64(0);
        deserialize_u32 => visit_u64(0);
        deserialize_u64 => visit_u64(0);
        deserialize_f32 => visit_f64(0.0);
        deserialize_f64 => visit_f64(0.0);
        deserialize_char => visit_char(' ');
        deserialize_str => visit_str("");
        deserialize_string => visit_str("");
        deserialize_bytes => visit_bytes(&[]);
        deserialize_byte_buf => visit_bytes(&[]);
        deserialize_unit => visit_unit();
        deserialize_identifier => visit_str("");
        deserialize_ignored_any => visit_unit();
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        visitor.visit_some(self)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value, ProbeError> {
        visitor.visit_seq(Elements { probe: Some(self.child("[]")?) })
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        // Free-form maps (and flattened structs) have no fixed field names.
        visitor.visit_map(Fields { probe: self, fields: &[], next: 0 })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        self.schema.insert(self.path.clone(), fields);
        visitor.visit_map(Fields { probe: self, fields, next: 0 })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        visitor.visit_enum(FirstVariant { probe: self, variants })
    }
}

/// One element per list: enough to reach the element type.
struct Elements<'a> {
    probe: Option<Probe<'a>>,
}

impl<'de> SeqAccess<'de> for Elements<'_> {
    type Error = ProbeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, ProbeError> {
        self.probe.take().map(|probe| seed.deserialize(probe)).transpose()
    }
}

/// Every declared field once, each with a probe one level down.
struct Fields<'a> {
    probe: Probe<'a>,
    fields: &'static [&'static str],
    next: usize,
}

impl<'de> MapAccess<'de> for Fields<'_> {
    type Error = ProbeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ProbeError> {
        let Some(field) = self.fields.get(self.next) else { return Ok(None) };
        seed.deserialize(IntoDeserializer::<ProbeError>::into_deserializer(*field)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, ProbeError> {
        let field = self.fields.get(self.next).copied().unwrap_or_default();
        self.next += 1;
        seed.deserialize(self.probe.child(field)?)
    }
}

/// The first variant of an enum, to reach the types it holds.
struct FirstVariant<'a> {
    probe: Probe<'a>,
    variants: &'static [&'static str],
}

impl<'de, 'a> EnumAccess<'de> for FirstVariant<'a> {
    type Error = ProbeError;
    type Variant = Probe<'a>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Probe<'a>), ProbeError> {
        let first = self.variants.first().copied().unwrap_or_default();
        let value = seed.deserialize(IntoDeserializer::<ProbeError>::into_deserializer(first))?;
        Ok((value, self.probe))
    }
}

impl<'de> VariantAccess<'de> for Probe<'_> {
    type Error = ProbeError;

    fn unit_variant(self) -> Result<(), ProbeError> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, ProbeError> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        Deserializer::deserialize_tuple(self, len, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        Deserializer::deserialize_struct(self, "", fields, visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::installconfig::InstallConfig;

    #[test]
    fn field_names_come_from_the_serde_types() {
        let schema = known_fields::<InstallConfig>();
        let root = schema.get("").expect("root fields");
        assert!(root.contains(&"apiVersion") && root.contains(&"pullSecret"), "{root:?}");
        let openstack = schema.get("platform.openstack").expect("openstack fields");
        assert!(openstack.contains(&"apiVIPs") && openstack.contains(&"loadBalancer"));
        assert!(schema.get("compute[]").is_some_and(|f| f.contains(&"replicas")));
        assert!(schema.contains_key("platform.vsphere.failureDomains[].topology"));
        assert!(schema.contains_key("networking.machineNetwork[]"));
    }

    #[test]
    fn indices_are_normalized() {
        assert_eq!(normalize("compute[12].platform"), "compute[].platform");
        assert_eq!(normalize("a[0].b[3]"), "a[].b[]");
    }
}
