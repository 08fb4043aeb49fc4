//! A small deterministic generator (SplitMix64): a case is a function of the
//! campaign seed and its index, so any case can be run again from those two
//! numbers alone.

/// SplitMix64.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The generator of case `index` of the campaign with `seed`.
    pub fn for_case(seed: u64, index: u64) -> Rng {
        let mut mix = Rng(seed ^ index.wrapping_mul(0xA076_1D64_78BD_642F));
        mix.next_u64();
        Rng(mix.next_u64() ^ index)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`; 0 when `n` is 0.
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi.saturating_sub(lo).saturating_add(1))
    }

    /// True with probability `1 / n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// True with probability `percent / 100`.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// One of `items` (which must not be empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// A size that is usually small and sometimes large: `1..=max`, each
    /// doubling of the bound equally likely.
    pub fn size(&mut self, max: usize) -> usize {
        let bits = usize::BITS - max.max(1).leading_zeros();
        let bound = 1usize << self.below(bits as usize + 1).min(usize::BITS as usize - 1);
        self.range(1, bound.min(max).max(1))
    }
}
