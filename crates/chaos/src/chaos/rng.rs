//! The run's one source of choices.

use uuid::Uuid;

/// A small deterministic generator (splitmix64). The seed repeats the clients' and the fault
/// loop's choices; where the faults land among the commands depends on timing, and the member a
/// corruption hits is Redis's own random pick.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub(super) fn uuid(&mut self) -> Uuid {
        uuid::Builder::from_random_bytes(
            ((u128::from(self.next()) << 64) | u128::from(self.next())).to_le_bytes(),
        )
        .into_uuid()
    }
}
