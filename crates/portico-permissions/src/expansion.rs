//! How large a YAML document grows once its aliases are expanded.
//!
//! An alias (`*name`) repeats the node its anchor (`&name`) marks, so a
//! document of a few kilobytes may stand for gigabytes ("billion laughs"):
//! a megabyte of text anchored once and repeated by 2,000 aliases is two
//! gigabytes of roles to read. Before a YAML document is read into the
//! model, it is walked once, keeping nothing, and the walk stops as soon
//! as what the document stands for passes its budget.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor};

/// Bytes a node costs beside its text: what holding one takes at least.
const NODE_COST: usize = 16;

/// Whether the YAML `text` stands for at most `budget` bytes once every
/// alias is expanded (its scalars' text and [`NODE_COST`] per node).
///
/// # Errors
/// What the document would have grown to, and why; a document the walk
/// cannot read passes, so that the real reading reports its syntax.
pub fn within(text: &str, budget: usize) -> Result<(), String> {
    let spent = Cell::new(0);
    let walk = Walk { spent: &spent, budget };
    let _ = walk.deserialize(serde_yaml_ng::Deserializer::from_str(text));
    if spent.get() > budget {
        return Err(format!(
            "the document repeats its anchored parts (YAML aliases, `*name`) past {} MiB, the most a document \
             may hold: write the repeated parts out, or send JSON",
            budget / (1024 * 1024)
        ));
    }
    Ok(())
}

/// A visit of any node, adding what it costs to `spent`.
#[derive(Clone, Copy)]
struct Walk<'a> {
    spent: &'a Cell<usize>,
    budget: usize,
}

impl Walk<'_> {
    /// Counts a node of `bytes` of text; an error (which ends the walk)
    /// once the budget is passed.
    fn spend<E: de::Error>(self, bytes: usize) -> Result<(), E> {
        let spent = self.spent.get().saturating_add(bytes).saturating_add(NODE_COST);
        self.spent.set(spent);
        if spent > self.budget { Err(E::custom("over the budget")) } else { Ok(()) }
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any YAML node")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.spend(0)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.spend(0)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.spend(0)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.spend(0)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<(), E> {
        self.spend(text.len())
    }

    fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<(), E> {
        self.spend(bytes.len())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.spend(0)
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.spend(0)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.spend(0)?;
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.spend(0)?;
        while map.next_key_seed(self)?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(())
    }

    /// A tagged node (`!tag value`).
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        let ((), variant) = data.variant_seed(self)?;
        variant.newtype_variant_seed(self)
    }
}

#[cfg(test)]
mod tests {
    use super::within;

    const MIB: usize = 1024 * 1024;

    #[test]
    fn a_document_is_measured_as_its_aliases_expand_it() {
        // 100 KB of text, anchored once and repeated 200 times: 20 MB.
        let big = "v".repeat(100_000);
        let bomb =
            format!("roles:\n  - code: R\n    grants: {{payments: [&s \"{big}\", {}]}}\n", ["*s"; 200].join(","));
        let error = within(&bomb, 16 * MIB).unwrap_err();
        assert!(error.contains("YAML aliases") && error.contains("16 MiB"), "{error}");
        // The same text, repeated fewer times, fits; so does an anchor used
        // the way people use them.
        let fits =
            format!("roles:\n  - code: R\n    grants: {{payments: [&s \"{big}\", {}]}}\n", ["*s"; 100].join(","));
        assert_eq!(within(&fits, 16 * MIB), Ok(()));
        let shared = "roles:\n  - {code: A, grants: &g {payments: [view, sign]}}\n  - {code: B, grants: *g}\n";
        assert_eq!(within(shared, 16 * MIB), Ok(()));
        assert_eq!(within(shared, 100), Err(within(&bomb, 16 * MIB).unwrap_err().replace("16 MiB", "0 MiB")));
    }

    #[test]
    fn a_document_the_walk_cannot_read_is_left_to_the_reading() {
        assert_eq!(within("roles: [unclosed", 16 * MIB), Ok(()));
        assert_eq!(within("a: *undefined", 16 * MIB), Ok(()));
        assert_eq!(within("!tagged {a: b}", 16 * MIB), Ok(()));
    }
}
