//! The bit set behind [`CpuSet`](crate::CpuSet) and [`NodeSet`](crate::NodeSet): ids as
//! bits of 64-bit words, in the layout the kernel's `cpu_set_t` and node masks use (bit
//! `i % 64` of word `i / 64`), as long as the highest id needs.

use std::fmt;

/// Bits per mask word.
pub(crate) const WORD_BITS: usize = u64::BITS as usize;

/// A set of small non-negative ids, stored as kernel-layout mask words.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct IdSet {
    words: Vec<u64>,
}

impl IdSet {
    /// Adds `id`.
    pub(crate) fn insert(&mut self, id: u32) {
        let (w, bit) = (id as usize / WORD_BITS, id as usize % WORD_BITS);
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1 << bit;
    }

    /// Removes `id`.
    pub(crate) fn remove(&mut self, id: u32) {
        let (w, bit) = (id as usize / WORD_BITS, id as usize % WORD_BITS);
        if let Some(word) = self.words.get_mut(w) {
            *word &= !(1 << bit);
        }
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }

    /// Whether `id` is in the set.
    pub(crate) fn contains(&self, id: u32) -> bool {
        let (w, bit) = (id as usize / WORD_BITS, id as usize % WORD_BITS);
        self.words.get(w).is_some_and(|word| word & (1 << bit) != 0)
    }

    /// Number of ids.
    pub(crate) fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The ids in increasing order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            (0..WORD_BITS)
                .filter(move |b| w & (1 << b) != 0)
                .map(move |b| {
                    // A set holds at most a few thousand words: the id fits in u32.
                    u32::try_from(i * WORD_BITS + b).unwrap_or(u32::MAX)
                })
        })
    }

    /// The mask words, at least one (the kernel rejects an empty buffer).
    pub(crate) fn words(&self) -> Vec<u64> {
        if self.words.is_empty() {
            vec![0]
        } else {
            self.words.clone()
        }
    }

    /// A set from mask words.
    pub(crate) fn from_words(words: &[u64]) -> Self {
        let mut words = words.to_vec();
        while words.last() == Some(&0) {
            words.pop();
        }
        Self { words }
    }
}

impl fmt::Display for IdSet {
    /// Linux list syntax: `0-3,8,10-11`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<u32> = self.iter().collect();
        f.write_str(&topoprobe_model::format_cpu_list(&ids))
    }
}

impl fmt::Debug for IdSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{{self}}}")
    }
}

/// Defines a public set type over [`IdSet`] with the same methods.
macro_rules! id_set_type {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Clone, Default, PartialEq, Eq, Hash)]
        pub struct $name(crate::id_set::IdSet);

        impl $name {
            #[doc = concat!("An empty set of ", $what, "s.")]
            #[must_use]
            pub fn new() -> Self {
                Self::default()
            }

            #[doc = concat!("Adds ", $what, " `id`.")]
            pub fn insert(&mut self, id: u32) {
                self.0.insert(id);
            }

            #[doc = concat!("Removes ", $what, " `id`.")]
            pub fn remove(&mut self, id: u32) {
                self.0.remove(id);
            }

            #[doc = concat!("Whether ", $what, " `id` is in the set.")]
            #[must_use]
            pub fn contains(&self, id: u32) -> bool {
                self.0.contains(id)
            }

            #[doc = concat!("Number of ", $what, "s in the set.")]
            #[must_use]
            pub fn len(&self) -> usize {
                self.0.len()
            }

            /// Whether the set is empty.
            #[must_use]
            pub fn is_empty(&self) -> bool {
                self.0.len() == 0
            }

            #[doc = concat!("The ", $what, "s in increasing order.")]
            pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
                self.0.iter()
            }

            #[doc = concat!("The ", $what, "s in increasing order, as a vector.")]
            #[must_use]
            pub fn to_vec(&self) -> Vec<u32> {
                self.0.iter().collect()
            }

            #[doc = concat!("The highest ", $what, ", if any.")]
            #[must_use]
            pub fn highest(&self) -> Option<u32> {
                self.0.iter().last()
            }

            /// The set as kernel mask words (bit `i % 64` of word `i / 64`), at least one
            /// word.
            #[must_use]
            pub fn to_words(&self) -> Vec<u64> {
                self.0.words()
            }

            /// A set from kernel mask words.
            #[must_use]
            pub fn from_words(words: &[u64]) -> Self {
                Self(crate::id_set::IdSet::from_words(words))
            }

            #[doc = concat!("Parses Linux list syntax (`0-3,8`) into a set of ", $what, "s.")]
            ///
            /// # Errors
            ///
            /// The syntax error, as [`topoprobe_model::parse_cpu_list`] reports it.
            pub fn parse_list(text: &str) -> Result<Self, topoprobe_model::CpuListError> {
                Ok(topoprobe_model::parse_cpu_list(text)?.into_iter().collect())
            }
        }

        impl FromIterator<u32> for $name {
            fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
                let mut s = Self::new();
                for id in iter {
                    s.insert(id);
                }
                s
            }
        }

        impl From<&[u32]> for $name {
            fn from(ids: &[u32]) -> Self {
                ids.iter().copied().collect()
            }
        }

        impl From<Vec<u32>> for $name {
            fn from(ids: Vec<u32>) -> Self {
                ids.into_iter().collect()
            }
        }

        impl<const N: usize> From<[u32; N]> for $name {
            fn from(ids: [u32; N]) -> Self {
                ids.into_iter().collect()
            }
        }

        impl std::fmt::Display for $name {
            /// Linux list syntax: `0-3,8,10-11`.
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(&self.0, f)
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.0)
            }
        }
    };
}

pub(crate) use id_set_type;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_through_words_beyond_1024() {
        let ids = [0, 5, 63, 64, 1023, 1024, 4097];
        let mut s = IdSet::default();
        for id in ids {
            s.insert(id);
        }
        assert_eq!(s.len(), ids.len());
        assert_eq!(s.iter().collect::<Vec<_>>(), ids);
        let back = IdSet::from_words(&s.words());
        assert_eq!(back, s);
        assert_eq!(s.words().len(), 4097 / 64 + 1);
        assert_eq!(s.to_string(), "0,5,63-64,1023-1024,4097");
    }

    #[test]
    fn removing_trims_and_empty_sets_have_one_word() {
        let mut s = IdSet::default();
        s.insert(200);
        s.remove(200);
        assert_eq!(s.len(), 0);
        assert_eq!(s.words(), vec![0]);
        assert!(!s.contains(200));
        assert_eq!(s, IdSet::default());
    }
}
