//! The simulator's seeded order (docs/compilation.md, "The delivery
//! order"): time goes in epochs; a message sent in epoch k is due in
//! epoch k + 1 + d, d geometric and unbounded (P(d ≥ j) = 2^-j), and
//! waits for it in a timing wheel; a device that becomes ready in epoch k
//! sends in epoch k + d, as if it deferred with probability ½ in each
//! epoch, and waits again after each send while it stays ready. All
//! randomness comes from one SplitMix64 stream, so the seed alone fixes
//! the order.

/// A small, fast, seedable generator (SplitMix64): the delivery order must
/// be reproducible from the seed alone.
#[derive(Clone, Debug)]
pub(super) struct Random(u64);

impl Random {
    pub fn new(seed: u64) -> Random {
        Random(seed)
    }

    #[inline]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` from the next 64 random bits, by a multiply and
    /// a shift (Lemire's reduction: the high word of `next * n`); the bias
    /// is at most n / 2^64.
    #[allow(clippy::cast_possible_truncation)]
    #[inline]
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

/// Random bits handed out a few at a time: a geometric delay takes its
/// value plus one, on average two, so one 64-bit draw serves many
/// messages.
#[derive(Clone, Debug)]
pub(super) struct Bits {
    random: Random,
    /// The bits not yet used, from bit 0 up; the bits above `left` are 0.
    word: u64,
    left: u32,
}

impl Bits {
    pub fn new(seed: u64) -> Bits {
        Bits {
            random: Random::new(seed),
            word: 0,
            left: 0,
        }
    }

    /// The generator itself, for a uniform choice.
    #[inline]
    pub fn random(&mut self) -> &mut Random {
        &mut self.random
    }

    /// A delay d with P(d ≥ j) = 2^-j for every j, unbounded: the number
    /// of zero bits before the next one bit of the stream.
    #[inline]
    pub fn geometric(&mut self) -> u64 {
        let mut delay = 0u64;
        loop {
            if self.word == 0 {
                // The bits left are all zeros: count them and draw anew.
                delay += u64::from(self.left);
                self.word = self.random.next();
                self.left = 64;
                continue;
            }
            let zeros = self.word.trailing_zeros();
            // The bits above `left` are zeros, so the one bit is among
            // those left: `zeros < left`.
            self.word = (self.word >> zeros) >> 1;
            self.left -= zeros + 1;
            return delay + u64::from(zeros);
        }
    }
}

/// Epochs a message can wait in the wheel; a longer delay goes to
/// `Wheel::later`.
pub(super) const SPOKES: usize = 64;

/// The room for messages a bucket keeps for its next epoch.
const KEPT: usize = 1 << 14;

/// Messages waiting for their epoch: a bucket per epoch of the next
/// [`SPOKES`] (epoch k in bucket k mod `SPOKES`), and those due later.
pub(super) struct Wheel<T> {
    buckets: Vec<Vec<T>>,
    /// Messages due `SPOKES` or more epochs after they were sent, with
    /// their epoch.
    later: Vec<(u64, T)>,
    /// The messages in the wheel.
    waiting: usize,
}

impl<T> Wheel<T> {
    pub fn new() -> Wheel<T> {
        Wheel {
            buckets: (0..SPOKES).map(|_| Vec::new()).collect(),
            later: Vec::new(),
            waiting: 0,
        }
    }

    /// The messages waiting.
    #[inline]
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    /// Counts `n` messages about to be put in with [`Wheel::put`].
    #[inline]
    pub fn expect(&mut self, n: usize) {
        self.waiting += n;
    }

    /// Puts `message` in the wheel, due `delay` epochs after epoch `now`
    /// (counted already by [`Wheel::expect`]); a delay of 0 only before
    /// epoch `now`'s messages are taken.
    #[inline]
    pub fn put(&mut self, now: u64, delay: u64, message: T) {
        let due = now.wrapping_add(delay);
        if delay < SPOKES as u64 {
            #[allow(clippy::cast_possible_truncation)]
            let bucket = &mut self.buckets[(due % SPOKES as u64) as usize];
            bucket.push(message);
        } else {
            self.later.push((due, message));
        }
    }

    /// Takes the messages due in epoch `now` (in the order they were
    /// put), leaving an empty bucket; give it back with
    /// [`Wheel::give_back`] to keep its memory.
    #[inline]
    pub fn take(&mut self, now: u64) -> Vec<T> {
        #[allow(clippy::cast_possible_truncation)]
        let slot = (now % SPOKES as u64) as usize;
        if !self.later.is_empty() {
            let bucket = &mut self.buckets[slot];
            let mut i = 0;
            while i < self.later.len() {
                if self.later[i].0 == now {
                    bucket.push(self.later.remove(i).1);
                } else {
                    i += 1;
                }
            }
        }
        let bucket = std::mem::take(&mut self.buckets[slot]);
        self.waiting -= bucket.len();
        bucket
    }

    /// Returns an emptied bucket taken from epoch `now`, keeping at most
    /// [`KEPT`] messages' room: on a large graph a wave of sends fills
    /// every bucket in turn, and 64 buckets each keeping the room of its
    /// fullest epoch would hold many times the messages ever in flight
    /// (docs/benchmarks.md).
    #[inline]
    pub fn give_back(&mut self, now: u64, mut bucket: Vec<T>) {
        bucket.clear();
        if bucket.capacity() > KEPT {
            bucket.shrink_to(KEPT);
        }
        #[allow(clippy::cast_possible_truncation)]
        let slot = (now % SPOKES as u64) as usize;
        if self.buckets[slot].is_empty() {
            self.buckets[slot] = bucket;
        }
    }
}

/// Below this many items [`DeviceSort`] sorts by insertion: its counts
/// would cost more than the items.
const SMALL: usize = 32;

/// The widest digit of [`DeviceSort`]'s radix sort, in bits.
const DIGIT: u32 = 11;

/// The counts of one digit.
type Counts = [u32; 1 << DIGIT];

/// A stable sort of a phase's items by device index, so that the phase
/// walks the devices' state in memory order (docs/compilation.md, "The
/// delivery order"): a radix sort, least significant digit first, in two
/// passes (four above 2^22 devices) so that the items end where they
/// began, in buffers kept from one phase to the next.
pub(super) struct DeviceSort<T> {
    /// The items between passes.
    scratch: Vec<T>,
    /// Per pass, the count, then the next place, of each digit.
    counts: Vec<Counts>,
    /// Bits of a digit, and the mask of them.
    digit: u32,
    mask: u32,
}

impl<T: Copy> DeviceSort<T> {
    /// A sort of keys below `devices`.
    pub fn new(devices: usize) -> DeviceSort<T> {
        let bits = usize::BITS - devices.saturating_sub(1).leading_zeros();
        let passes = if bits <= 2 * DIGIT { 2 } else { 4 };
        let digit = bits.div_ceil(passes);
        DeviceSort {
            scratch: Vec::new(),
            counts: vec![[0; 1 << DIGIT]; passes as usize],
            digit,
            mask: (1 << digit) - 1,
        }
    }

    /// Sorts `items` by `key` (below the `devices` given to
    /// [`DeviceSort::new`]), keeping the order of items with equal keys.
    pub fn sort(&mut self, items: &mut Vec<T>, key: impl Fn(&T) -> u32) {
        let n = items.len();
        if n < SMALL {
            for i in 1..n {
                let item = items[i];
                let k = key(&item);
                let mut j = i;
                while j > 0 && key(&items[j - 1]) > k {
                    items[j] = items[j - 1];
                    j -= 1;
                }
                items[j] = item;
            }
            return;
        }
        let (digit, mask) = (self.digit, self.mask);
        let radix = 1usize << digit;
        // Every pass's counts in one read of the keys.
        for counts in &mut self.counts {
            counts[..radix].fill(0);
        }
        if let [low, high] = &mut self.counts[..] {
            for item in items.iter() {
                let k = key(item);
                low[(k & mask) as usize] += 1;
                high[((k >> digit) & mask) as usize] += 1;
            }
        } else {
            for item in items.iter() {
                let k = key(item);
                for (pass, counts) in (0..).zip(&mut self.counts) {
                    counts[((k >> (pass * digit)) & mask) as usize] += 1;
                }
            }
        }
        // The scratch is as long as the longest phase so far.
        if self.scratch.len() < n {
            self.scratch.resize(n, items[0]);
        }
        for (pass, counts) in (0..).zip(&mut self.counts) {
            let mut at = 0u32;
            for c in &mut counts[..radix] {
                let here = *c;
                *c = at;
                at += here;
            }
            let shift = pass * digit;
            for item in items.iter() {
                let place = &mut counts[((key(item) >> shift) & mask) as usize];
                self.scratch[*place as usize] = *item;
                *place += 1;
            }
            std::mem::swap(items, &mut self.scratch);
            items.truncate(n);
        }
        // An even number of passes: the items are in their own buffer
        // again, the scratch in its own.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The geometric delays have the distribution they claim: counted
    /// over a million draws, within a few standard deviations.
    #[test]
    fn delays_are_geometric() {
        let mut bits = Bits::new(12345);
        let draws = 1_000_000u32;
        let mut at_least = [0u32; 8];
        for _ in 0..draws {
            let d = bits.geometric();
            for (j, count) in at_least.iter_mut().enumerate() {
                if d >= j as u64 {
                    *count += 1;
                }
            }
        }
        for (j, &count) in at_least.iter().enumerate() {
            let expected = f64::from(draws) / f64::from(1u32 << j);
            let sd = (expected * (1.0 - expected / f64::from(draws))).sqrt();
            assert!(
                (f64::from(count) - expected).abs() < 5.0 * sd + 1.0,
                "P(d >= {j}): {count} of {draws}"
            );
        }
    }

    /// A run of zero bits longer than one draw goes on into the next draw:
    /// the delay is unbounded.
    #[test]
    fn a_delay_can_span_draws() {
        let mut bits = Bits::new(0);
        bits.word = 0;
        bits.left = 10;
        let mut next = bits.random.clone();
        let first = next.next();
        let expected = 10 + u64::from(first.trailing_zeros());
        assert_eq!(bits.geometric(), expected);
    }

    /// Messages come out of the wheel in the epoch they are due, in the
    /// order they went in, those due after the wheel's span included.
    #[test]
    fn the_wheel_hands_out_each_message_in_its_epoch() {
        let mut wheel = Wheel::new();
        let delays = [1u64, 6, 1, 63, 64, 201, 6];
        wheel.expect(delays.len());
        for (i, &d) in delays.iter().enumerate() {
            wheel.put(10, d, i);
        }
        let mut seen = Vec::new();
        for now in 11..300 {
            let bucket = wheel.take(now);
            for &i in &bucket {
                seen.push((now, i));
            }
            wheel.give_back(now, bucket);
        }
        assert_eq!(
            seen,
            vec![
                (11, 0),
                (11, 2),
                (16, 1),
                (16, 6),
                (73, 3),
                (74, 4),
                (211, 5)
            ]
        );
        assert_eq!(wheel.waiting(), 0);
    }

    /// The sort orders by key and keeps the order of equal keys, below
    /// and above the insertion sort's size, in two passes and in four.
    #[test]
    fn the_device_sort_is_stable() {
        for devices in [1usize, 2, 100, 5000, 1 << 23, 1 << 32] {
            let mut sort = DeviceSort::new(devices);
            let mut random = Random::new(devices as u64);
            for n in [0usize, 1, 5, 31, 32, 33, 500, 4000, 20, 700] {
                let mut items: Vec<(u32, u32)> = (0..n)
                    .map(|i| (random.below(devices) as u32, i as u32))
                    .collect();
                let mut expected = items.clone();
                expected.sort_by_key(|&(k, _)| k);
                sort.sort(&mut items, |&(k, _)| k);
                assert_eq!(items, expected, "{n} items below {devices}");
            }
        }
    }
}
