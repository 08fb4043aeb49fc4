//! Byte ranges in source text.

use std::fmt;
use std::ops::Range;

/// A half-open byte range `start..end` in a file's text.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct TextRange {
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl TextRange {
    /// The range `start..end`.
    ///
    /// # Panics
    /// When `start > end`: a reversed range is always a bug in the caller.
    pub fn new(start: u32, end: u32) -> TextRange {
        assert!(start <= end, "reversed text range {start}..{end}");
        TextRange { start, end }
    }

    /// An empty range at `offset`.
    pub fn empty(offset: u32) -> TextRange {
        TextRange {
            start: offset,
            end: offset,
        }
    }

    /// Number of bytes covered.
    pub fn len(self) -> u32 {
        self.end - self.start
    }

    /// True when the range covers no byte.
    pub fn is_empty(self) -> bool {
        self.start == self.end
    }

    /// True when `offset` lies in the range, its end included (a cursor just
    /// after a name still touches it).
    pub fn touches(self, offset: u32) -> bool {
        self.start <= offset && offset <= self.end
    }

    /// True when `other` lies entirely inside this range.
    pub fn contains_range(self, other: TextRange) -> bool {
        self.start <= other.start && other.end <= self.end
    }

    /// The smallest range covering both.
    pub fn cover(self, other: TextRange) -> TextRange {
        TextRange {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// As a `usize` range for slicing.
    pub fn to_usize(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }
}

impl From<Range<usize>> for TextRange {
    fn from(range: Range<usize>) -> TextRange {
        TextRange::new(to_u32(range.start), to_u32(range.end))
    }
}

impl fmt::Debug for TextRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// Converts a byte offset to `u32`. Source files are limited to 4 GiB, which
/// [`crate::Parse::new`] enforces by construction (tree-sitter shares it).
pub(crate) fn to_u32(offset: usize) -> u32 {
    u32::try_from(offset).unwrap_or(u32::MAX)
}
